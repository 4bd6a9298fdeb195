"""`bertscore-tm explain --worst K` against `bertscore-tm score` on the same files: explain scores every pair once
as score does, then embeds and explains only the K pairs of lowest F1, so it should cost little more. Both run
through the command line's `main` in one process (model loading included, as a user runs them), taking turns.

    python benchmarks/studies/explain.py                            # all WMT pairs, K = 100, 3 rounds
    python benchmarks/studies/explain.py --pairs 40 --worst 5 --rounds 1 --out /tmp/smoke
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import harness
import knobs


def configure(name: str, p: dict) -> harness.Runner:
    folder = Path(tempfile.mkdtemp(prefix="bench-explain."))
    for side, texts in zip("cr", harness.wmt_pairs(p["pairs"]), strict=True):
        (folder / f"{side}.txt").write_text("\n".join(texts) + "\n", encoding="utf-8")
    common = ["-c", str(folder / "c.txt"), "-r", str(folder / "r.txt"), "-m", harness.MINILM, "--device", "cpu"]
    common += ["--no-progress", "--format", "json"]
    more = (
        ["-s", "-o", str(folder / "s.json")]
        if name == "score"
        else ["--worst", str(p["worst"]), "-o", str(folder / "e.json")]
    )
    argv = [name, *common, *more]
    knobs.cli(argv)  # warm up: imports, the first model load, oneDNN's kernels

    def run() -> dict:
        if knobs.cli(argv) != 0:
            raise SystemExit(f"{name} failed")
        return {}

    return run


def run(args: Any) -> dict:
    p = {"pairs": args.pairs, "worst": args.worst, "threads": args.threads}
    timing = harness.timed_apart(harness.module_name(__file__), ["score", "explain"], p, args.rounds)
    rows = [harness.row("explain", k, p, timing, "score", args.pairs) for k in ("score", "explain")]
    check = harness.check(f"explain --worst {args.worst} at most 1.2x score's time", rows[1]["ratio"], 1.2)
    return {"suite": "explain", "title": "explain --worst K against score", "rows": rows, "checks": [check]}


ARGUMENTS = (
    (("--pairs",), dict(type=int, default=3003, help="WMT pairs (default all 3003)")),
    (("--worst",), dict(type=int, default=100, help="K, the pairs explain explains (default 100)")),
    (("--rounds",), dict(type=int, default=3)),
)

if __name__ == "__main__":
    sys.exit(harness.main(__doc__, ARGUMENTS, run))
