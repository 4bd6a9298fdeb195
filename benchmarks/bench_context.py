"""Speed of context, prompts, masks and F-beta (issue 39): one Metric's compute() on the long WMT pairs, each
setting against the plain metric in turns (plain, context, prompts, mask, beta; repeated), the minimum of each
reported with its ratio to the plain one. The context is the candidate itself (a context of the candidate's
length, the issue's case: target at most 2.1x); prompts are E5's ``query: `` / ``passage: ``; the mask is
``ignore="punctuation"``; F-beta ``beta=3`` (targets: nothing measurable).

    python benchmarks/bench_context.py                   # 200 long pairs, 3 rounds, 1 thread
    python benchmarks/bench_context.py --pairs 50 --rounds 1
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import torch

from bertscore_tm import PACKAGED_MINILM, BERTScore

WMT = Path(__file__).resolve().parents[1] / "tests" / "data" / "wmt"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    warnings.simplefilter("ignore")
    hyps = (WMT / "hyps_long.txt").read_text(encoding="utf-8").splitlines()[: args.pairs]
    refs = (WMT / "refs_long.txt").read_text(encoding="utf-8").splitlines()[: args.pairs]
    plain = BERTScore(PACKAGED_MINILM)
    settings = {
        "plain": (plain, None),
        "context (the candidate)": (plain, hyps),
        "prompts": (BERTScore(PACKAGED_MINILM, candidate_prompt="query: ", reference_prompt="passage: "), None),
        "ignore='punctuation'": (BERTScore(PACKAGED_MINILM, ignore="punctuation"), None),
        "beta=3": (BERTScore(PACKAGED_MINILM, beta=3), None),
    }
    times: dict[str, list[float]] = {name: [] for name in settings}
    for _ in range(args.rounds):
        for name, (metric, context) in settings.items():
            metric.reset()
            metric.update(hyps, refs, context=context)
            start = time.perf_counter()
            metric.compute()
            times[name].append(time.perf_counter() - start)
    base = min(times["plain"])
    print(f"| setting ({args.pairs} long WMT pairs, MiniLM, {args.threads} thread(s)) | compute() s (min) | x plain |")
    print("| --- | --- | --- |")
    for name, values in times.items():
        print(f"| {name} | {min(values):.2f} | {min(values) / base:.2f}x |")


if __name__ == "__main__":
    main()
