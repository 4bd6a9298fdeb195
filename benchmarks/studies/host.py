"""The host's share of a compute() in accelerator batching, measured on a CPU: the whole metric over repeated WMT
pairs (the device suite's) with the packed passes replaced by a stand-in that returns unit vectors at once
(`knobs.stand_in_forward`), so what is left is the host's work (the distinct texts, planning blocks, packs and
matching batches, index tensors, Python) and matching at the tiny shape's width. On a GPU that work runs beside the
device's and adds to it wherever the host waits. A CPU proxy for sessions without a GPU, not a GPU figure. Modes:

- (default) update() and compute() of the metric at the accelerator's pack budget, rounds in turn;
- `--loop`: a validation loop whose every step waits 4 ms for a device (a sleep), then updates 64 pairs: update()
  tokenising in the loop, against batches two DataLoader workers tokenised (`metric.tokenize` as its collate_fn);
- `--ops`: the top-level torch ops a compute() dispatches in its packed passes and in the rest (`knobs.counted_ops`:
  a GPU launches a kernel or more for each; matching batches cut as at roberta-large's width);

    python benchmarks/studies/host.py                           # 100,000 pairs, 2 rounds
    python benchmarks/studies/host.py --loop --pairs 20000 --rounds 4
    python benchmarks/studies/host.py --ops --pairs 20000
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import harness
import knobs

DEVICE_WAIT = 0.004  # seconds a `--loop` step waits for its device


def _metric(dtype: str = "float32", accelerator: bool = True) -> Any:
    import torch

    from bertscore_tm import BERTScore

    path, layers, _ = harness.model("tiny")
    metric = BERTScore(path, num_layers=layers, model_dtype=getattr(torch, dtype))
    if accelerator:  # the packs, blocks and batches of a GPU's compute(), at an accelerator's budget
        knobs.set_batching(metric, "accelerator")
        knobs.set_pack_budget(metric, 16384)
    return metric


def host_work(cands: list[str], refs: list[str]) -> harness.Runner:
    def run() -> dict:
        metric = _metric()
        start = time.perf_counter()
        harness.feed(metric, cands, refs)
        updated = time.perf_counter()
        metric.compute()
        return {"update_s": round(updated - start, 3), "compute_s": round(time.perf_counter() - updated, 3)}

    return run


def loop(cands: list[str], refs: list[str], workers: int) -> harness.Runner:
    def run() -> dict:
        from torch.utils.data import DataLoader

        metric = _metric(accelerator=False)
        pairs = harness.Pairs(cands, refs)
        if workers:
            batches = DataLoader(
                pairs, harness.UPDATE, num_workers=workers, collate_fn=harness.Tokenized(metric.tokenize)
            )
        else:
            batches = DataLoader(pairs, harness.UPDATE, collate_fn=lambda b: ([c for c, _ in b], [r for _, r in b]))
        for batch in batches:
            time.sleep(DEVICE_WAIT)  # the host waiting for the device's step
            if workers:
                metric.update(batch)
            else:
                metric.update(*batch)
        return {}

    return run


def run(args: Any) -> dict:
    cands, refs = harness.repeated_pairs(args.pairs)
    p = {"pairs": args.pairs}
    if args.ops:
        metric = _metric(dtype="bfloat16")
        harness.feed(metric, cands, refs)
        with knobs.counted_ops(width=harness.SHAPES["tiny"]["hidden_size"]) as counts:
            metric.compute()
        figures = {f"{k} a pair": n / args.pairs for k, n in counts.items()}
        rows = [harness.row("ops", "top-level torch ops in compute()", p, None, None, args.pairs, **counts, **figures)]
        return {"suite": "host-ops", "title": "The torch ops a compute() dispatches (host study)", "rows": rows}
    if args.loop:
        runners = {
            "update() tokenising": loop(cands, refs, 0),
            "two DataLoader workers tokenising": loop(cands, refs, 2),
        }
        key = "loop"
    else:
        runners, key = {"host work": host_work(cands, refs)}, "host"
    with knobs.stand_in_forward():
        host_work(cands[:64], refs[:64])()  # warm up
        timing = harness.interleave(runners, args.rounds, alternate=True)
    rows = [harness.row(key, k, p, timing, None, args.pairs) for k in runners]
    for r in rows if not args.loop else []:
        r["figures"]["rounds"] = ", ".join(
            f"{f.get('update_s', '-')}/{f.get('compute_s', '-')}" for f in timing["figures"][r["name"]]
        )
    notes = [f"{args.pairs} pairs; a stand-in forward pass; figures' rounds: update()/compute() seconds"]
    if args.loop:
        notes.append(f"the loop's waits alone: {len(range(0, args.pairs, harness.UPDATE)) * DEVICE_WAIT:.2f} s")
    return {"suite": f"host-{key}", "title": f"Host work without a GPU ({key})", "rows": rows, "notes": notes}


ARGUMENTS = (
    (("--pairs",), dict(type=int, default=100_000)),
    (("--rounds",), dict(type=int, default=2)),
    (("--loop",), dict(action="store_true", help="a loop that waits for a device: update() or DataLoader workers")),
    (("--ops",), dict(action="store_true", help="count the torch ops of a compute(), the model running")),
)

if __name__ == "__main__":
    sys.exit(harness.main(__doc__, ARGUMENTS, run))
