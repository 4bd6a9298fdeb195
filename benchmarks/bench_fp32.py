"""The float32 metric against the limit and the reference, in one process, rounds taking turns: the part of
`make bench` that holds on any CPU (`bench.py` also times bfloat16, which needs a CPU with bfloat16 kernels to
mean anything). Uses `bench.py`'s own configurations (its limit, its metric run, its bert-score run), on the
same 1000 WMT pairs, and adds the metric with its working budget set to another size, to see what the budget
costs (`Embedder.block_bytes`, docs/performance.md).

    python benchmarks/bench_fp32.py                       # 1000 pairs, 3 rounds, 2 threads
    python benchmarks/bench_fp32.py --budget-mib 32 128   # the metric also with these budgets
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "src"))

import bench  # noqa: E402


def with_budget(mib: int | None, run):
    """`run` with the embedder's working budget per layer set to `mib` while it runs (None: as shipped)."""
    from bertscore_tm.embedding.embedder import Embedder

    shipped = Embedder.block_bytes

    def budgeted() -> dict:
        if mib is not None:
            Embedder.block_bytes = property(lambda self: (mib << 20) * min(self.num_rows, 8))
        try:
            return run()
        finally:
            Embedder.block_bytes = shipped

    return budgeted


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--budget-mib", type=int, nargs="*", default=[32])
    args = parser.parse_args()
    import torch

    warnings.filterwarnings("ignore")
    torch.set_num_threads(args.threads)
    cands, refs = bench._pairs(bench.DEFAULT_DATA, args.pairs)
    ours = bench._runner("ours-fp32", cands, refs, "minilm", "cpu")
    runners = {"limit": bench._runner("limit", cands, refs, "minilm", "cpu"), "ours (as shipped)": ours}
    for mib in args.budget_mib:
        runners[f"ours, budget {mib} MiB"] = with_budget(mib, ours)
    runners["bert-score 0.3.13"] = bench._runner("bert-score", cands, refs, "minilm", "cpu")
    ratios: dict[str, list[float]] = {k: [] for k in runners}
    load = os.getloadavg()
    for r in range(args.rounds):
        seconds = {}
        for k, run in runners.items():
            start = time.perf_counter()
            run()
            seconds[k] = time.perf_counter() - start
        for k in runners:
            ratios[k].append(seconds[k] / seconds["limit"])
        print(f"round {r + 1}: " + ", ".join(f"{k} {seconds[k]:.2f} s" for k in runners), flush=True)
    print(
        f"\n{args.pairs} pairs, MiniLM cut to 5 layers, float32, {args.threads} threads, {args.rounds} rounds; "
        f"load average {load[0]:.1f} at the start, {os.getloadavg()[0]:.1f} at the end\n"
    )
    print("| configuration | time ratio to the limit (median round) | rounds |")
    print("| --- | ---: | --- |")
    for k, values in ratios.items():
        print(f"| {k} | {statistics.median(values):.3f}x | {', '.join(f'{v:.3f}' for v in values)} |")


if __name__ == "__main__":
    main()
