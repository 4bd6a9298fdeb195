"""The peers' tests: evaluate's in the main environment, LightEval's and mbrs's in their own (`make test` builds
.venv-peers for them: tests/integrations/requirements-peers.txt). The LightEval task file is loaded by its test as
LightEval loads one, never collected (its imports need LightEval)."""

collect_ignore = ["lighteval_task.py"]
