"""What a checkpoint costs: a resumable run (`score_resumable`, every shard written atomically to a checkpoint
folder) against the same pairs scored without one (update, then `compute_scores()`, as `bertscore-tm score`
runs), in one process with the model loaded once, taking turns (which goes first alternating), the scores checked
equal bit for bit and the checkpoint's bytes per pair counted. A shard costs a hash of its texts and one small
file, so the ratio should not grow with the corpus.

    python benchmarks/studies/checkpoint.py                              # 3,003 pairs, 3 rounds
    python benchmarks/studies/checkpoint.py --lines 100000 --shard-size 10000 --rounds 1 --first checkpoint
    python benchmarks/studies/checkpoint.py --lines 60 --shard-size 20 --rounds 2 --out /tmp/smoke
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import harness
import knobs

_METRIC: list[Any] = []  # the one metric both ways share


def configure(name: str, p: dict) -> harness.Runner:
    from bertscore_tm import PACKAGED_MINILM, BERTScore
    from bertscore_tm.corpus import score_resumable

    if not _METRIC:
        _METRIC.append(BERTScore(PACKAGED_MINILM, idf=p["idf"]))
        _METRIC[0].update(["a warm-up"] * 8, ["the model loaded, first passes done"] * 8)
        _METRIC[0].compute_scores()
    metric, (cands, refs) = _METRIC[0], harness.repeated_pairs(p["lines"])
    if name == "plain":

        def plain() -> dict:
            metric.reset()
            metric.update(cands, refs)
            return {"scores": harness.digest(*metric.compute_scores().as_tuple())}

        return plain

    def resumable() -> dict:
        folder = Path(tempfile.mkdtemp(prefix="bench-checkpoint."))
        got = score_resumable(metric, cands, refs, folder, shard_size=p["shard_size"])
        kept = sum(f.stat().st_size for f in folder.iterdir())
        shutil.rmtree(folder)
        return {"scores": harness.digest(*got.as_tuple()), "bytes_per_pair": kept / len(cands)}

    return resumable


def run(args: Any) -> dict:
    p = {"lines": args.lines, "shard_size": args.shard_size, "idf": args.idf, "threads": args.threads}
    names = ["plain", "checkpoint"] if args.first == "plain" else ["checkpoint", "plain"]
    timing = harness.timed_apart(harness.module_name(__file__), names, p, args.rounds, alternate=True)
    rows = [harness.row("checkpoint", k, p, timing, "plain", args.lines) for k in ("plain", "checkpoint")]
    figures = timing["figures"]
    same = all(a["scores"] == b["scores"] for a, b in zip(figures["plain"], figures["checkpoint"], strict=True))
    checks = [
        harness.check("with a checkpoint at most 1.03x the time without", rows[1]["ratio"], 1.03),
        harness.check("the same scores bit for bit in every round (1: yes)", float(same), 1, at_least=True),
    ]
    notes = [f"pairs: the WMT pairs repeated, each copy made distinct; MiniLM, IDF {'on' if args.idf else 'off'}"]
    return {"suite": "checkpoint", "title": "What a checkpoint costs", "notes": notes, "rows": rows, "checks": checks}


ARGUMENTS = (
    (("--lines",), dict(type=int, default=3003, help="pairs scored (default 3003; more repeat the WMT pairs)")),
    (("--rounds",), dict(type=int, default=3)),
    (("--shard-size",), dict(type=int, default=knobs.shard_size())),
    (("--first",), dict(choices=("plain", "checkpoint"), default="plain", help="the run going first in odd rounds")),
    (("--idf",), dict(action="store_true", help="with IDF counted over the references")),
)

if __name__ == "__main__":
    sys.exit(harness.main(__doc__, ARGUMENTS, run))
