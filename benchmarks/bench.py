"""The benchmarks' entry (`make bench`): one suite on the harness, the throughput suite unless `--suite` says.

    make bench                                         # the throughput suite at its default sizes, 2 threads
    make bench BENCH_ARGS="--smoke"                    # its parts at tiny sizes, one round: does it run?
    python benchmarks/bench.py --suite references      # bert-score and torchmetrics against the same bare pass
    python benchmarks/bench.py --suite scale --parts epochs,stream
    python benchmarks/bench.py --suite scale --help    # a suite's own options

Each run writes its JSON rows to benchmarks/results/<suite>.json and renders benchmarks/RESULTS.md (`--out`
elsewhere: a smoke run's figures mean nothing). The device suite is `gpu_suite.py`; the one-off studies are
`studies/*.py`.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness

SUITES = ("throughput", "references", "scale")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--suite", choices=SUITES, default="throughput")
    known, rest = parser.parse_known_args(sys.argv[1:] if argv is None else argv)
    suite = importlib.import_module(known.suite)
    return harness.main(suite.__doc__, suite.ARGUMENTS, suite.run, rest, command=sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    sys.exit(main())
