"""The commands of the command line, one module each: its parser (`add_parser`) and its `run`."""
