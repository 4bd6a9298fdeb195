"""Attention on a CPU in float32: the model's eager attention against its scaled-dot-product attention (SDPA), by
sequence length, for the choice of `knobs.eager_cpu_tokens()` (eager up to that many tokens, SDPA beyond).

Batches of one length within the CPU's 2048-token budget run through every layer, with each attention, all
configurations taking turns, every other round in reverse order. Two sets of batches: fixed lengths (random
token ids), and the distinct texts of the WMT17 judgements in the metric's own batches, where the metric's choice
is timed too.

    python benchmarks/studies/attention.py                  # MiniLM, 2 threads, 4 rounds
    python benchmarks/studies/attention.py --rounds 1 --every 40 --lengths 16,64 --out /tmp/smoke
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import harness
import knobs

BUDGET = 2048  # the metric's token budget on a CPU


def _runner(model: Any, batches: list, attention: str | None) -> harness.Runner:
    """Every batch through the model with `attention` (None: the metric's choice by the batch's length)."""
    import torch

    def run() -> dict:
        with torch.inference_mode():
            for ids in batches:
                eager = attention == "eager" or (attention is None and ids.shape[1] <= knobs.eager_cpu_tokens())
                model.set_attn_implementation("eager" if eager else "sdpa")
                model(input_ids=ids, attention_mask=torch.ones_like(ids), output_hidden_states=True)
        model.set_attn_implementation("sdpa")
        return {"batches": len(batches)}

    return run


def run(args: Any) -> dict:
    import torch

    path = knobs.model_path(args.model)
    model, _, _ = knobs.load_encoder(path, 0, all_layers=True)
    generator = torch.Generator().manual_seed(0)
    sets = {
        f"{n} tokens": [torch.randint(1000, 20000, (max(1, BUDGET // n), n), generator=generator)] for n in args.lengths
    }
    rows = harness.read_judgements()
    ids = knobs.token_ids(path, harness.distinct(rows.candidates + rows.references)[:: args.every])
    real = [torch.stack([ids[i] for i in b]).long() for b in knobs.one_length_batches([len(x) for x in ids], BUDGET)]
    sets["WMT17 texts"] = real
    sets[f"WMT17 texts of at most {knobs.eager_cpu_tokens()} tokens"] = [
        b for b in real if b.shape[1] <= knobs.eager_cpu_tokens()
    ]
    runners = {f"{name}, {a}": _runner(model, batches, a) for name, batches in sets.items() for a in ("sdpa", "eager")}
    runners["WMT17 texts, the metric's choice"] = _runner(model, real, None)
    timing = harness.interleave(runners, args.rounds, alternate=True)
    out = [
        harness.row("eager against SDPA", k, {}, timing, f"{k.rsplit(', ', 1)[0]}, sdpa")
        for k in runners
        if not k.endswith("sdpa")
    ]
    notes = [
        f"{args.model}, every layer, float32; ratio = time over SDPA's on the same batches, median round",
        f"WMT17: every {args.every}th distinct text of the judgements, {len(real)} batches",
    ]
    return {"suite": "attention", "title": "Attention on a CPU: eager against SDPA", "notes": notes, "rows": out}


ARGUMENTS = (
    (("--model",), dict(default=harness.MINILM)),
    (("--rounds",), dict(type=int, default=4)),
    (("--every",), dict(type=int, default=4, help="every n-th distinct WMT17 text (default 4)")),
    (
        ("--lengths",),
        dict(type=lambda s: [int(x) for x in s.split(",")], default=[16, 24, 32, 40, 48, 56, 64, 80, 96, 128, 256]),
    ),
)

if __name__ == "__main__":
    sys.exit(harness.main(__doc__, ARGUMENTS, run))
