"""compute()'s working budget: the float32 metric as shipped and with its budget per layer set to other sizes
(`knobs.block_budget`), against the bare pass and bert-score, in one process taking turns (the throughput suite's
and the references suite's own configurations).

    python benchmarks/studies/block_budget.py                       # 1000 pairs, 3 rounds, 32 MiB
    python benchmarks/studies/block_budget.py --budget-mib 32 128 --pairs 40 --rounds 1 --out /tmp/smoke
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import harness
import knobs
import references
import throughput


def configure(name: str, p: dict) -> harness.Runner:
    if name == "bert-score":
        return references.configure(name, p)
    if not name.startswith("fp32, budget"):
        return throughput.configure(name, p)
    run, mib = throughput.configure("fp32", p), int(name.split()[-2])

    def budgeted() -> dict:
        with knobs.block_budget(mib):
            return run()

    return budgeted


def run(args: Any) -> dict:
    p = {"part": "paired", "shape": "minilm", "device": "cpu", "threads": args.threads, "pairs": args.pairs}
    names = ["bare", "fp32", *(f"fp32, budget {mib} MiB" for mib in args.budget_mib), "bert-score"]
    timing = harness.timed_apart(harness.module_name(__file__), names, p, args.rounds)
    rows = [harness.row("budget", k, p, timing, "bare", args.pairs) for k in names]
    notes = ["fp32: the working budget as shipped; ratio = time over the bare pass's in the same round, median round"]
    return {
        "suite": "block-budget",
        "title": "The float32 metric and compute()'s working budget",
        "notes": notes,
        "rows": rows,
    }


ARGUMENTS = (
    (("--pairs",), dict(type=int, default=1000)),
    (("--rounds",), dict(type=int, default=3)),
    (("--budget-mib",), dict(type=int, nargs="*", default=[32])),
)

if __name__ == "__main__":
    sys.exit(harness.main(__doc__, ARGUMENTS, run))
