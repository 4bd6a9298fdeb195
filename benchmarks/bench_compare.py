"""Speed of `compare`: several systems scored by one metric in one compute, against one `score` run per system
with the model already loaded, and the cost of the resampling itself.

One compute embeds each distinct text once, so the references (and lines systems share) are embedded once
for all systems: 4 systems of N lines against N references embed about 5N texts instead of 8N, so the time
should be about 5/8 of the separate runs. The resampling (intervals and paired tests) only touches per-pair
scores: 1000 resamples of 3000 pairs must take well under a second.

    python benchmarks/bench_compare.py                          # 4 systems on all WMT pairs, 2 threads
    python benchmarks/bench_compare.py --pairs 500 --rounds 1   # a quick look

The systems are made from the WMT pairs (tests/data/wmt/*_long.txt): the hypotheses; the hypotheses without
their last word; the hypotheses with their first two words swapped; the references in a shuffled order
without their first word (a poor system whose lines are not the references' own). Prints a markdown
section for benchmarks/RESULTS.md, to paste between its `<!-- bench_compare: begin -->` and `end` lines
(bench.py keeps marked blocks when it rewrites the file). Times are wall-clock and this process's CPU time
(both threads), which moves less when other work shares the machine.
"""

from __future__ import annotations

import argparse
import datetime as dt
import math
import platform
import random
import statistics
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "tests" / "data" / "wmt"
MINILM = "sentence-transformers/all-MiniLM-L6-v2"


def make_systems(hyps: list[str], refs: list[str], seed: int = 0) -> dict[str, list[str]]:
    """Four systems for the same references, of different quality."""

    def drop_last(line: str) -> str:
        words = line.split()
        return " ".join(words[:-1]) if len(words) > 1 else line

    def swap_first(line: str) -> str:
        words = line.split()
        return " ".join([words[1], words[0], *words[2:]]) if len(words) > 1 else line

    def drop_first(line: str) -> str:
        words = line.split()
        return " ".join(words[1:]) if len(words) > 1 else line

    shuffled = list(refs)
    random.Random(seed).shuffle(shuffled)
    return {
        "hypotheses": list(hyps),
        "last word dropped": [drop_last(x) for x in hyps],
        "first two words swapped": [swap_first(x) for x in hyps],
        "references shuffled, first word dropped": [drop_first(x) for x in shuffled],
    }


def _timed(fn):
    """fn()'s result, its wall-clock seconds and this process's CPU seconds."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn()
    return result, time.perf_counter() - wall, time.process_time() - cpu


def _median_seconds(fn, repeats: int) -> tuple[float, float]:
    """Median wall-clock and CPU seconds of fn() over `repeats` calls."""
    runs = [_timed(fn)[1:] for _ in range(repeats)]
    return statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=None, help="WMT pairs per system (default: all)")
    parser.add_argument("--threads", type=int, default=2, help="torch threads (default: 2)")
    parser.add_argument("--rounds", type=int, default=1, help="rounds of (compare, separate runs); median reported")
    parser.add_argument("--resample-repeats", type=int, default=7, help="timings of the resampling (median)")
    args = parser.parse_args()

    import torch

    from bertscore_tm import BERTScore
    from bertscore_tm.comparison.significance import bootstrap_interval, paired_test
    from bertscore_tm.comparison.systems import score_systems

    torch.set_num_threads(args.threads)
    hyps = (DATA / "hyps_long.txt").read_text(encoding="utf-8").splitlines()
    refs = (DATA / "refs_long.txt").read_text(encoding="utf-8").splitlines()
    n = len(hyps) if args.pairs is None else args.pairs
    hyps, refs = hyps[:n], refs[:n]
    systems = make_systems(hyps, refs)
    names = list(systems)

    metric = BERTScore(MINILM)  # loaded once, shared by both ways
    metric.update(hyps[:64], refs[:64])
    metric.compute()  # warm-up
    embedder = metric.embedder

    def separate() -> tuple[torch.Tensor, int]:
        """One `score` run per system (what `bertscore-tm score` does after loading the model)."""
        f1, before = [], embedder.rows_embedded
        for cands in systems.values():
            metric.reset()
            metric.update(cands, refs)
            f1.append(metric.compute()["f1"])
        return torch.stack(f1), embedder.rows_embedded - before

    def together() -> tuple[torch.Tensor, int]:
        """What `bertscore-tm compare` does after loading the model: one compute, then the statistics."""
        metric.reset()
        before = embedder.rows_embedded
        f1 = score_systems(metric, list(systems.values()), refs)["f1"].double()
        bootstrap_interval(f1, 0.95, 1000, 0)
        paired_test(f1[0], f1[1:], "bootstrap", 1000, 0, 0.95)
        return f1, embedder.rows_embedded - before

    times: dict[str, list[float]] = {"compare": [], "separate": []}
    cpu: dict[str, list[float]] = {"compare": [], "separate": []}
    results = {}
    for _ in range(args.rounds):
        for way, fn in (("compare", together), ("separate", separate)):
            results[way], wall, used = _timed(fn)
            times[way].append(wall)
            cpu[way].append(used)
    (f1_together, rows_together), (f1_separate, rows_separate) = results["compare"], results["separate"]
    mean_error = float((f1_together.mean(dim=1) - f1_separate.double().mean(dim=1)).abs().max())
    t_compare, t_separate = statistics.median(times["compare"]), statistics.median(times["separate"])
    c_compare, c_separate = statistics.median(cpu["compare"]), statistics.median(cpu["separate"])

    # the resampling alone, on real per-pair F1 (3000 pairs where there are that many)
    m = min(3000, n)
    f1 = f1_together[:, :m].contiguous()
    resampling = {
        "bootstrap_interval, 1 system": lambda: bootstrap_interval(f1[0], 0.95, 1000, 0),
        "paired_test bootstrap, 1 pair of systems": lambda: paired_test(f1[0], f1[1], "bootstrap", 1000, 0),
        "paired_test randomization, 1 pair of systems": lambda: paired_test(f1[0], f1[1], "randomization", 1000, 0),
        "compare's statistics: 4 intervals + 3 bootstrap tests": lambda: (
            bootstrap_interval(f1, 0.95, 1000, 0),
            paired_test(f1[0], f1[1:], "bootstrap", 1000, 0),
        ),
    }
    resample_times = {name: _median_seconds(fn, args.resample_repeats) for name, fn in resampling.items()}

    means = f1_together.mean(dim=1).tolist()
    print("## Issue 12: `compare` (several systems in one compute) and the resampling\n")
    print(
        f"Measured {dt.date.today().isoformat()} by `python benchmarks/bench_compare.py"
        f"{'' if args.pairs is None else f' --pairs {n}'} --threads {args.threads} --rounds {args.rounds}`.\n"
    )
    print(
        f"- machine: {platform.machine()}, {platform.processor() or 'cpu'}, torch threads {args.threads}, "
        f"torch {torch.__version__}; {MINILM} cut to 5 layers, float32, CPU"
    )
    print(
        f"- systems ({n} WMT pairs each, same references): "
        + "; ".join(f"{name} (mean F1 {mean:.4f})" for name, mean in zip(names, means, strict=True))
    )
    print(
        f"- rounds: {args.rounds}; compare times {', '.join(f'{t:.1f}' for t in times['compare'])} s, "
        f"separate {', '.join(f'{t:.1f}' for t in times['separate'])} s\n"
    )
    print("| way | texts embedded | wall s | ratio | CPU s | ratio |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    print(
        f"| 4 separate `score` runs (model loaded once) | {rows_separate} | {t_separate:.1f} | 1.00 | "
        f"{c_separate:.1f} | 1.00 |"
    )
    print(
        f"| `compare`: one compute + intervals + paired tests | {rows_together} | {t_compare:.1f} | "
        f"{t_compare / t_separate:.2f} | {c_compare:.1f} | {c_compare / c_separate:.2f} |"
    )
    print(
        f"\n- texts embedded: {rows_together / rows_separate:.3f} of the separate runs' "
        f"(expected about (4 + 1) / 8 = 0.625); wall time {t_compare / t_separate:.3f}, "
        f"CPU time {c_compare / c_separate:.3f}"
    )
    print(f"- per-system mean F1, compare vs separate runs: max difference {mean_error:.1e}\n")
    print(f"| resampling ({m} pairs, 1000 resamples) | median wall ms | median CPU ms |")
    print("| --- | ---: | ---: |")
    for name, (wall, used) in resample_times.items():
        print(f"| {name} | {wall * 1000:.1f} | {used * 1000:.1f} |")
    assert math.isfinite(mean_error)


if __name__ == "__main__":
    main()
