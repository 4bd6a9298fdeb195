"""`python -m bertscore_tm`: the `bertscore-tm` command line."""

import sys

from bertscore_tm.cli import main

if __name__ == "__main__":
    sys.exit(main())
