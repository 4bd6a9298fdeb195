"""Attention on a CPU in float32: the model's eager attention against its own scaled-dot-product attention
(SDPA), by sequence length, for the choice of `bertscore_tm.embedding.attention.EAGER_CPU_TOKENS`.

Batches of one length within the metric's 2048-token budget run through every layer of the loaded model, once
with each attention, in the order A B B A for every batch (so that the machine's drift cancels to first
order), for several rounds. Two sets of batches: fixed lengths (random token ids), and the distinct texts of
the WMT17 judgements in the metric's own batches (real sentences). Prints a markdown section for
benchmarks/RESULTS.md, to paste between its `<!-- bench_attention: begin -->` and `end` lines.

    python benchmarks/bench_attention.py                 # MiniLM, 2 threads, 4 rounds
    python benchmarks/bench_attention.py --rounds 1      # a quick look
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import sys
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "tests" / "data" / "wmt17-da" / "da-seglevel-toen.tsv"
LENGTHS = (16, 24, 32, 40, 48, 56, 64, 80, 96, 128, 256)
BUDGET = 2048  # the metric's token budget on a CPU


def real_batches(path: Path, model_path: Path, every: int) -> list:
    """The metric's batches of one length over every `every`-th distinct text of the WMT17 judgements."""
    import torch
    from transformers import AutoTokenizer

    from bertscore_tm.embedding.batches import length_batches
    from bertscore_tm.tuning.judgements import read_judgements

    rows = read_judgements(path, group="lp", system="system")
    texts = list(dict.fromkeys(rows.candidates + rows.references))[::every]
    ids = AutoTokenizer.from_pretrained(str(model_path))(texts, truncation=True, max_length=512)["input_ids"]
    lengths = [len(x) for x in ids]
    return [torch.tensor([ids[i] for i in batch]) for batch in length_batches(lengths, None, BUDGET)]


def timed_pairs(model, batches: list, rounds: int) -> dict[int, dict[str, float]]:
    """Seconds per sequence length and attention, each batch run A B B A in every round."""
    import torch

    took: dict[int, dict[str, float]] = defaultdict(lambda: {"sdpa": 0.0, "eager": 0.0})
    with torch.inference_mode():
        for _ in range(rounds):
            for ids in batches:
                for attention in ("sdpa", "eager", "eager", "sdpa"):
                    model.set_attn_implementation(attention)
                    start = time.perf_counter()
                    model(input_ids=ids, attention_mask=torch.ones_like(ids), output_hidden_states=True)
                    took[ids.shape[1]][attention] += time.perf_counter() - start
    model.set_attn_implementation("sdpa")
    return took


def ratio(took: dict[str, float]) -> float:
    return took["eager"] / took["sdpa"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="sentence-transformers/all-MiniLM-L6-v2")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--every", type=int, default=4, help="every n-th distinct WMT17 text (default 4)")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch

    from bertscore_tm.embedding.attention import EAGER_CPU_TOKENS
    from bertscore_tm.models.loading import load_encoder, resolve_model_path

    torch.set_num_threads(args.threads)
    path = resolve_model_path(args.model)
    model, _ = load_encoder(path, 0, all_layers=True)
    generator = torch.Generator().manual_seed(0)
    fixed = [torch.randint(1000, 20000, (max(1, BUDGET // n), n), generator=generator) for n in LENGTHS]
    real = real_batches(DATA, path, args.every)
    fixed_took = timed_pairs(model, fixed, args.rounds)
    real_took = timed_pairs(model, real, args.rounds)
    short = {"sdpa": 0.0, "eager": 0.0}
    chosen = {"sdpa": 0.0, "eager": 0.0}  # each batch with the attention the metric picks, against SDPA
    for n, took in real_took.items():
        for key in ("sdpa", "eager"):
            if n <= EAGER_CPU_TOKENS:
                short[key] += took[key]
            chosen[key] += took["eager" if n <= EAGER_CPU_TOKENS and key == "eager" else "sdpa"]
    whole = {key: sum(t[key] for t in real_took.values()) for key in ("sdpa", "eager")}
    lines = [
        "## Attention on a CPU in float32: eager against scaled-dot-product, by length",
        "",
        f"Measured {dt.date.today().isoformat()} by `python {' '.join(sys.argv)}`: {args.model}, every layer, "
        f"{platform.machine()}, {os.cpu_count()} cores, torch threads {args.threads}, torch {torch.__version__}; "
        f"batches of one length in a {BUDGET}-token budget, each run A B B A, {args.rounds} rounds.",
        "",
        "| sequence length | " + " | ".join(str(n) for n in LENGTHS) + " |",
        "| --- | " + " | ".join("---:" for _ in LENGTHS) + " |",
        "| eager / SDPA time | " + " | ".join(f"{ratio(fixed_took[n]):.3f}" for n in LENGTHS) + " |",
        "",
        f"- the WMT17 texts (every {args.every}th distinct text, {len(real)} batches): eager / SDPA "
        f"{ratio(whole):.3f} over all batches, {ratio(short):.3f} over those of at most {EAGER_CPU_TOKENS} "
        f"tokens; the metric's choice (eager up to {EAGER_CPU_TOKENS} tokens, SDPA beyond) / SDPA "
        f"{ratio(chosen):.3f}",
    ]
    print("\n".join(lines))


if __name__ == "__main__":
    main()
