"""Scale-out routes against the command line (issue 38): the same WMT pairs scored by `bertscore-tm score` on
line files, by `score --data` on a Parquet file, through Ray Data (`map_batches(BatchScorer)`, one actor) and
through Hugging Face `datasets` (`Dataset.map(BatchScorer(...), batched=True)` in one process), each in a
fresh process, wall time of the whole route with the model's loading; Ray's start-up (`ray.init`) is timed
apart and left out of its route. The Ray route is docs/dataframes.md's recipe for CPUs: the actor takes 2 CPUs
(so torch runs 2 threads there, as the command line does) in a Ray of 3 logical CPUs (with 2 the actor held
both and the Parquet read tasks never ran), batches of 10,000 rows (2,000 cost 6% more CPU: small batches
leave the scorer's forward batches part-filled).
Every route's F1 column is checked equal to the command line's.

    python benchmarks/bench_scaleout.py                  # 20,000 pairs, one round
    python benchmarks/bench_scaleout.py --pairs 2000 --rounds 3

Pairs: 20,000 distinct pairs made from the 3,003 vendored WMT pairs (tests/data/wmt/*_long.txt): pair k is
line a = k mod 3003 of both files, with " (j)" appended to both texts for j = k div 3003 > 0 (so no text
repeats and every route embeds every text). The targets: Ray at most 1.15x `score`, datasets at most 1.10x,
`score --data` at most 1.05x. Figures go to benchmarks/RESULTS.md by hand.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WMT = REPO / "tests" / "data" / "wmt"
MODEL = "sentence-transformers/all-MiniLM-L6-v2"

RAY = """
import sys, time
t = time.perf_counter()
import ray, ray.data
ray.init(num_cpus=3, include_dashboard=False, log_to_driver=False)  # the actor's 2 and 1 for reading
init = time.perf_counter() - t
from bertscore_tm import BatchScorer
t = time.perf_counter()
ds = ray.data.read_parquet(sys.argv[1])
out = ds.map_batches(BatchScorer, fn_constructor_kwargs={"model_name_or_path": sys.argv[3], "device": "cpu"},
                     compute=ray.data.ActorPoolStrategy(size=1), num_cpus=2, batch_size=10_000, batch_format="pyarrow")
out.write_parquet(sys.argv[2])
print(init, time.perf_counter() - t)
ray.shutdown()
"""

DATASETS = """
import sys, time
t = time.perf_counter()
import datasets
from bertscore_tm import BatchScorer
ds = datasets.Dataset.from_parquet(sys.argv[1])
out = ds.map(BatchScorer(sys.argv[3], device="cpu"), batched=True, batch_size=2000, load_from_cache_file=False)
out.to_parquet(sys.argv[2])
print(0.0, time.perf_counter() - t)
"""


def make_pairs(n: int, folder: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    hyps = (WMT / "hyps_long.txt").read_text(encoding="utf-8").splitlines()
    refs = (WMT / "refs_long.txt").read_text(encoding="utf-8").splitlines()
    m = min(len(hyps), len(refs))
    tail = [("" if k < m else f" ({k // m})") for k in range(n)]
    cands = [hyps[k % m] + tail[k] for k in range(n)]
    references = [refs[k % m] + tail[k] for k in range(n)]
    (folder / "c.txt").write_text("\n".join(cands) + "\n", encoding="utf-8")
    (folder / "r.txt").write_text("\n".join(references) + "\n", encoding="utf-8")
    pq.write_table(pa.table({"id": list(range(n)), "candidate": cands, "reference": references}), folder / "p.parquet")


def timed(command: list[str]) -> tuple[float, str]:
    t = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True, env=dict(os.environ, HF_HUB_OFFLINE="1"))
    if proc.returncode:
        raise SystemExit(f"{command[:4]} failed:\n{proc.stderr[-2000:]}")
    return time.perf_counter() - t, proc.stdout


def run_round(folder: Path) -> dict[str, float]:
    cli = [sys.executable, "-m", "bertscore_tm", "score", "-m", MODEL, "--device", "cpu"]
    lines, _ = timed(
        [
            *cli,
            "-c",
            str(folder / "c.txt"),
            "-r",
            str(folder / "r.txt"),
            "-s",
            "--format",
            "tsv",
            "-o",
            str(folder / "lines.tsv"),
        ]
    )
    data, _ = timed([*cli, "--data", str(folder / "p.parquet"), "-o", str(folder / "data.parquet")])
    times = {"score (line files)": lines, "score --data (Parquet)": data}
    for name, script, out in (("Ray Data, one actor", RAY, "ray_out"), ("datasets.map", DATASETS, "ds.parquet")):
        _, printed = timed([sys.executable, "-c", script, str(folder / "p.parquet"), str(folder / out), MODEL])
        init, wall = (float(x) for x in printed.split()[-2:])
        times[name] = wall
        if init:
            times["(Ray start-up, apart)"] = init
    check(folder)
    return times


def check(folder: Path) -> None:
    """Every route's F1 equals the line files' (as float32) pair for pair."""
    import numpy as np
    import pyarrow.parquet as pq

    rows = [line.split("\t") for line in (folder / "lines.tsv").read_text().splitlines() if line[:1].isdigit()]
    expected = np.array([float(r[3]) for r in rows], dtype=np.float32)
    for path in (folder / "data.parquet", folder / "ray_out", folder / "ds.parquet"):
        table = pq.read_table(path).sort_by("id")
        assert np.array_equal(table["bertscore_f1"].to_numpy(), expected), path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        make_pairs(args.pairs, folder)
        rounds = [run_round(folder) for _ in range(args.rounds)]
    print(f"{args.pairs} pairs, {args.rounds} round(s), load average {os.getloadavg()[0]:.1f}")
    base = statistics.median(r["score (line files)"] for r in rounds)
    for name in rounds[0]:
        seconds = statistics.median(r[name] for r in rounds)
        ratio = "" if name.startswith("(") else f"  {seconds / base:.3f}x score"
        print(f"{name:28s} {seconds:8.1f} s{ratio}   rounds: {', '.join(f'{r[name]:.1f}' for r in rounds)}")


if __name__ == "__main__":
    main()
