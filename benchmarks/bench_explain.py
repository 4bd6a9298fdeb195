"""Speed of `bertscore-tm explain --worst K` against `bertscore-tm score` on the same files, in one process.

`explain` scores every pair once with the paired engine, as `score` does, then embeds and explains only the K
pairs of lowest F1 (docs/explain.md), so it should cost little more than `score`: the target is at most 1.2x
`score`'s time. Both commands run in this process through the command line's `main` (model loading included,
as a user runs them), in interleaved rounds (score, explain, score, explain, ...) so that load from other work
on the machine falls on both alike; each round's ratio and their median are printed.

    python benchmarks/bench_explain.py                       # all WMT pairs (3003), K = 100, 3 rounds
    python benchmarks/bench_explain.py --pairs 500 --rounds 1

Times are wall-clock and this process's CPU time (which moves less when other work shares the machine).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "tests" / "data" / "wmt"
MINILM = "sentence-transformers/all-MiniLM-L6-v2"


def _files(folder: Path, pairs: int | None) -> tuple[str, str]:
    """The WMT hypotheses and references (the first `pairs` lines) as files."""
    paths = []
    for name in ("hyps_long", "refs_long"):
        lines = (DATA / f"{name}.txt").read_text(encoding="utf-8").splitlines()[:pairs]
        path = folder / f"{name}.txt"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        paths.append(str(path))
    return paths[0], paths[1]


def _run(argv: list[str]) -> tuple[float, float]:
    """Wall-clock and CPU seconds of one command run through the command line's main."""
    from bertscore_tm.cli import main

    wall, cpu = time.perf_counter(), time.process_time()
    code = main(argv)
    if code != 0:
        raise SystemExit(f"{argv[0]} failed with exit code {code}")
    return time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=None, help="WMT pairs (default: all)")
    parser.add_argument("--worst", type=int, default=100, help="K, the pairs explain explains (default: 100)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default: 3)")
    parser.add_argument("--threads", type=int, default=2, help="torch threads (default: 2)")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch

    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as folder:
        cands, refs = _files(Path(folder), args.pairs)
        common = ["-c", cands, "-r", refs, "-m", MINILM, "--device", "cpu", "--no-progress"]
        score = ["score", *common, "-s", "--format", "json", "-o", f"{folder}/score.json"]
        explain = ["explain", *common, "--worst", str(args.worst), "--format", "json", "-o", f"{folder}/why.json"]
        _run(score)  # warm-up: imports, the first model load, oneDNN kernels
        rows = []
        for n in range(args.rounds):
            s_wall, s_cpu = _run(score)
            e_wall, e_cpu = _run(explain)
            rows.append((s_wall, e_wall, e_wall / s_wall, e_cpu / s_cpu))
            print(
                f"round {n + 1}: score {s_wall:.2f} s, explain --worst {args.worst} {e_wall:.2f} s: "
                f"{e_wall / s_wall:.3f}x wall, {e_cpu / s_cpu:.3f}x CPU",
                file=sys.stderr,
            )
    wall = statistics.median(r[2] for r in rows)
    cpu = statistics.median(r[3] for r in rows)
    lines = args.pairs or "all"
    print(f"explain --worst {args.worst} / score on {lines} WMT pairs, {args.threads} threads, {args.rounds} rounds:")
    print(f"median ratio {wall:.3f}x wall-clock, {cpu:.3f}x CPU (target: at most 1.2x)")


if __name__ == "__main__":
    main()
