"""`python -m bertscore_tm.cli`: the same command line as `python -m bertscore_tm`."""

import sys

from bertscore_tm.cli import main

if __name__ == "__main__":
    sys.exit(main())
