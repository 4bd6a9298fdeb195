"""What a checkpoint costs (issue 26, item 1): the time of a resumable run (`bertscore_tm.corpus.resumable`, every shard
written atomically to a checkpoint folder) against the same pairs scored without one (``BERTScore.update`` then
``compute_scores()``, as ``bertscore-tm score`` runs), and the checkpoint's bytes per pair.

The two runs take turns, round after round (which goes first alternating), in one process with the model
loaded once; each round's ratio is its own and the median round is reported, with the scores checked to be
equal (``torch.equal``). The issue's target is at most 3% of a 100,000-line run's time; a shard costs a hash of
its texts and one small file, so the ratio does not grow with the corpus.

    python benchmarks/bench_checkpoint.py                          # 3,003 lines, 3 rounds
    python benchmarks/bench_checkpoint.py --lines 1000 --rounds 2  # a quick run
    python benchmarks/bench_checkpoint.py --lines 30030 --shard-size 10000 --rounds 2  # lines past 3,003: repeats

Texts: `tests/data/wmt/hyps_long.txt` and `refs_long.txt`. Docs: docs/corpus-scale.md ("Resumable runs").
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
DATA = HERE.parent / "tests" / "data" / "wmt"
sys.path.insert(0, str(HERE.parent / "src"))

from bertscore_tm import PACKAGED_MINILM, BERTScore  # noqa: E402
from bertscore_tm.corpus.resumable import score_resumable  # noqa: E402
from bertscore_tm.settings.arguments import SHARD_SIZE  # noqa: E402


def _lines(name: str, n: int) -> list[str]:
    """The file's first n lines; past its end, its lines again, each ending in " (k)" for the k-th repeat, so that
    every text is distinct (repeated texts would be embedded once, which flatters the run without shards)."""
    lines = (DATA / name).read_text(encoding="utf-8").splitlines()
    return [lines[i % len(lines)] + (f" ({i // len(lines)})" if i >= len(lines) else "") for i in range(n)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--lines",
        type=int,
        default=3003,
        help="pairs scored (default: 3003, the whole files; more repeat them, each made distinct)",
    )
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the two runs taking turns (default: 3)")
    parser.add_argument("--shard-size", type=int, default=SHARD_SIZE, help=f"pairs per shard (default: {SHARD_SIZE})")
    parser.add_argument(
        "--first",
        choices=("plain", "checkpoint"),
        default="plain",
        help="the run that goes first in odd rounds (a process's first long run tends to be the slower)",
    )
    parser.add_argument("--idf", action="store_true", help="with IDF counted over the references")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    cands, refs = _lines("hyps_long.txt", args.lines), _lines("refs_long.txt", args.lines)
    metric = BERTScore(PACKAGED_MINILM, idf=args.idf)
    metric.update(cands[:8], refs[:8])  # warm up: the model loaded, first passes done
    metric.compute_scores()
    ratios, cpu_ratios, plain_times, kept_bytes = [], [], [], 0
    for round_ in range(args.rounds):
        times: dict[str, float] = {}
        # the two runs take turns, the first of each round alternating, so neither always runs on a warmer machine
        order = ("plain", "checkpoint") if args.first == "plain" else ("checkpoint", "plain")
        for run in order if round_ % 2 == 0 else order[::-1]:
            start, cpu = time.perf_counter(), time.process_time()
            if run == "plain":
                metric.reset()
                metric.update(cands, refs)
                expected = metric.compute_scores()
            else:
                folder = Path(tempfile.mkdtemp(prefix="bench_checkpoint."))
                got = score_resumable(metric, cands, refs, folder, shard_size=args.shard_size)
            times[run], times[run + " cpu"] = time.perf_counter() - start, time.process_time() - cpu
        kept_bytes = sum(f.stat().st_size for f in folder.iterdir())
        shutil.rmtree(folder)
        same = all(torch.equal(a, b) for a, b in zip(got.as_tuple(), expected.as_tuple(), strict=True))
        ratios.append(times["checkpoint"] / times["plain"])
        cpu_ratios.append(times["checkpoint cpu"] / times["plain cpu"])
        plain_times.append(times["plain"])
        print(
            f"round {round_ + 1}: without {times['plain']:.2f} s, with checkpoint {times['checkpoint']:.2f} s, "
            f"ratio {ratios[-1]:.4f}; CPU time {times['plain cpu']:.2f} s and {times['checkpoint cpu']:.2f} s, ratio "
            f"{cpu_ratios[-1]:.4f}; equal scores: {same}",
            flush=True,
        )
    print(f"pairs {len(cands)}, shard size {args.shard_size}, idf {args.idf}, threads {torch.get_num_threads()}")
    median = statistics.median(plain_times)
    print(f"median ratio {statistics.median(ratios):.4f} (without checkpoint: median {median:.2f} s)")
    print(
        f"median CPU-time ratio {statistics.median(cpu_ratios):.4f} (the process's own CPU time: less moved by "
        "other work on a shared machine)"
    )
    print(f"checkpoint: {kept_bytes} bytes in all, {kept_bytes / len(cands):.1f} bytes per pair")


if __name__ == "__main__":
    main()
