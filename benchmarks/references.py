"""The references suite: bert-score 0.3.13 (batched as it runs by default, and unpadded, `batch_size=1`: the
reference the metric's scores equal) and torchmetrics 1.9's `BERTScore`, against the float32 metric and the same
bare forward pass in the same run, taking turns round after round; each one's peak memory alone in a process.
bert-score unpadded and torchmetrics (which pads every text to 512 tokens and runs every layer) score the first
`--subset` pairs; their ratios are per pair.

    python benchmarks/bench.py --suite references                    # 1000 WMT pairs, 5 rounds
    python benchmarks/bench.py --suite references --pairs 40 --subset 8 --repeats 1 --out /tmp/smoke
"""

from __future__ import annotations

from typing import Any

import harness
from harness import UPDATE, check, max_diff, row

NAMES = {
    "bare": "bare pass of the distinct texts, batches of one length",
    "fp32": "bertscore-tm, float32",
    "bert-score": f"bert-score 0.3.13 `BERTScorer`, batches of {UPDATE} (padded)",
    "bert-score-unpadded": "bert-score 0.3.13 `BERTScorer`, unpadded (`batch_size=1`)",
    "torchmetrics": "torchmetrics 1.9 `BERTScore`",
}


def configure(name: str, p: dict) -> harness.Runner:
    path, layers, _ = harness.model(p["shape"])
    cands, refs = harness.wmt_pairs(p["subset"] if name in ("bert-score-unpadded", "torchmetrics") else p["pairs"])
    if name == "bare":
        return harness.bare_runner(path, layers, cands + refs, p["device"])
    if name == "fp32":
        from bertscore_tm import BERTScore

        return harness.metric_runner(BERTScore(path, num_layers=layers, device=p["device"]), cands, refs)
    if name == "torchmetrics":
        from torchmetrics.text.bert import BERTScore as Theirs

        theirs = Theirs(
            model_name_or_path=path, num_layers=layers, batch_size=UPDATE, device=p["device"], max_length=512
        )
        return harness.metric_runner(theirs, cands, refs)
    from bert_score import BERTScorer

    batch = 1 if name == "bert-score-unpadded" else UPDATE
    scorer = BERTScorer(model_type=path, num_layers=layers, batch_size=batch, device=p["device"], nthreads=0)
    return lambda: {"f1": scorer.score(cands, refs)[2].tolist()}


def run(args: Any) -> dict:
    _, _, description = harness.model(args.shape)
    p = {
        "shape": args.shape,
        "device": args.device,
        "threads": args.threads,
        "pairs": args.pairs,
        "subset": args.subset,
    }
    timing = harness.timed_apart(__name__, list(NAMES), p, args.repeats)
    f1 = {k: v.get("f1") for k, v in timing["results"].items()}
    rows = []
    for k, label in NAMES.items():
        items = args.subset if k in ("bert-score-unpadded", "torchmetrics") else args.pairs
        diff = None if k == "bare" else max_diff(f1[k][: args.subset], f1["bert-score-unpadded"])
        memory = harness.memory_apart(__name__, k, p)
        rows.append(
            row("references", label, p, timing, "bare", items, args.pairs, memory, k, max_f1_diff_vs_unpadded=diff)
        )
    ours, theirs = (next(r for r in rows if r["name"] == NAMES[k]) for k in ("fp32", "bert-score"))
    checks = [
        check("float32 F1 within 1e-5 of bert-score unpadded", ours["figures"]["max_f1_diff_vs_unpadded"], 1e-5),
        check("float32 at most 0.80x bert-score's time", round(ours["ratio"] / theirs["ratio"], 4), 0.80),
    ]
    notes = [
        f"model: {description}; texts: `tests/data/wmt/*_long.txt`; updates of {UPDATE} pairs",
        "time ratio = seconds per pair over the bare pass's seconds per pair in the same round, median round",
    ]
    key = "references" if (args.shape, args.device) == ("minilm", "cpu") else f"references-{args.shape}-{args.device}"
    return {
        "suite": "references",
        "key": key,
        "title": f"Against the references ({args.shape}, {args.device})",
        "notes": notes,
        "rows": rows,
        "checks": checks,
    }


ARGUMENTS = (
    (("--device",), dict(default="cpu", help="cpu (default) or cuda")),
    (("--shape",), dict(choices=("minilm", *harness.SHAPES), default="minilm")),
    (("--repeats",), dict(type=int, default=5, help="rounds (default 5)")),
    (("--pairs",), dict(type=int, default=1000, help="WMT pairs (default 1000)")),
    (
        ("--subset",),
        dict(type=int, default=200, help="the pairs of bert-score unpadded and torchmetrics (default 200)"),
    ),
)
