"""`compare`: several systems scored by one metric in one compute (`score_systems`: each distinct text embedded
once, so 4 systems of N lines against N references embed about 5N texts, not 8N) plus the intervals and paired
tests, against one `score` run per system with the model loaded once; and the resampling alone on real per-pair F1.

The systems are made from the WMT pairs: the hypotheses; without their last word; their first two words swapped;
the references shuffled, without their first word (a poor system).

    python benchmarks/studies/compare.py                              # all WMT pairs, 1 round
    python benchmarks/studies/compare.py --pairs 40 --rounds 1 --resample-repeats 2 --out /tmp/smoke
"""

from __future__ import annotations

import random
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import harness
import knobs

_METRIC: list[Any] = []
RESAMPLING = (
    "bootstrap_interval, 1 system",
    "paired_test bootstrap, 1 pair of systems",
    "paired_test randomization, 1 pair",
    "4 intervals + 3 bootstrap tests",
)


def make_systems(hyps: list[str], refs: list[str], seed: int = 0) -> dict[str, list[str]]:
    """Four systems for the same references, of different quality."""
    words = lambda line, cut: " ".join(cut(line.split())) if len(line.split()) > 1 else line  # noqa: E731
    shuffled = random.Random(seed).sample(refs, len(refs))
    return {
        "hypotheses": list(hyps),
        "last word dropped": [words(x, lambda w: w[:-1]) for x in hyps],
        "first two words swapped": [words(x, lambda w: [w[1], w[0], *w[2:]]) for x in hyps],
        "references shuffled, first word dropped": [words(x, lambda w: w[1:]) for x in shuffled],
    }


def configure(name: str, p: dict) -> harness.Runner:
    import torch

    from bertscore_tm import PACKAGED_MINILM, BERTScore
    from bertscore_tm.comparison import bootstrap_interval, paired_test

    if not _METRIC:
        _METRIC.append(BERTScore(PACKAGED_MINILM))
    metric, (hyps, refs) = _METRIC[0], harness.wmt_pairs(p["pairs"])
    systems = list(make_systems(hyps, refs).values())

    def separate() -> Any:
        return torch.stack([metric.reset() or metric.update(s, refs) or metric.compute()["f1"] for s in systems])

    def together() -> Any:
        metric.reset()
        f1 = knobs.score_systems(metric, systems, refs)["f1"].double()
        bootstrap_interval(f1, 0.95, 1000, 0), paired_test(f1[0], f1[1:], "bootstrap", 1000, 0, 0.95)
        return f1

    if name in ("separate", "compare"):
        way = separate if name == "separate" else together

        def embedded() -> dict:
            before = knobs.rows_embedded(metric)
            means = way().mean(1).tolist()
            return {
                "texts_embedded": knobs.rows_embedded(metric) - before,
                "mean_f1": ", ".join(f"{x:.4f}" for x in means),
            }

        return embedded
    f1 = together()[:, : min(3000, p["pairs"])].contiguous()  # real per-pair F1, computed before the timing
    work = {
        RESAMPLING[0]: lambda: bootstrap_interval(f1[0], 0.95, 1000, 0),
        RESAMPLING[1]: lambda: paired_test(f1[0], f1[1], "bootstrap", 1000, 0),
        RESAMPLING[2]: lambda: paired_test(f1[0], f1[1], "randomization", 1000, 0),
        RESAMPLING[3]: lambda: (
            bootstrap_interval(f1, 0.95, 1000, 0),
            paired_test(f1[0], f1[1:], "bootstrap", 1000, 0),
        ),
    }[name]
    return lambda: (work(), {})[1]


def run(args: Any) -> dict:
    p = {"pairs": args.pairs, "threads": args.threads}
    module = harness.module_name(__file__)
    timing = harness.timed_apart(module, ["compare", "separate"], p, args.rounds)
    rows = [harness.row("compare", k, p, timing, "separate", 4 * args.pairs) for k in ("separate", "compare")]
    resampling = harness.timed_apart(module, RESAMPLING, p, args.resample_repeats)
    rows += [
        harness.row("resampling (1000 resamples)", k, p, resampling, None, min(3000, args.pairs)) for k in RESAMPLING
    ]
    embedded = rows[1]["figures"]["texts_embedded"] / rows[0]["figures"]["texts_embedded"]
    checks = [
        harness.check("texts embedded by compare over the separate runs' (about 5/8)", embedded, 0.65),
        harness.check("1000 resamples of 3000 pairs, seconds", rows[2]["median_s"], 1.0),
    ]
    return {
        "suite": "compare",
        "title": "compare and the resampling",
        "rows": rows,
        "checks": checks,
        "notes": ["systems: " + "; ".join(make_systems(["a b"], ["a b"]))],
    }


ARGUMENTS = (
    (("--pairs",), dict(type=int, default=3003, help="WMT pairs a system (default all 3003)")),
    (("--rounds",), dict(type=int, default=1)),
    (("--resample-repeats",), dict(type=int, default=7)),
)

if __name__ == "__main__":
    sys.exit(harness.main(__doc__, ARGUMENTS, run))
