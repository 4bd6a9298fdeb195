"""Scale-out routes against the command line: the same pairs scored by `bertscore-tm score` on line files, by
`score --data` on a Parquet file, through Ray Data (`map_batches(BatchScorer)`, one actor) and through Hugging
Face `datasets` (`Dataset.map(BatchScorer(...), batched=True)`), each in a fresh process, the wall time of the
whole route with its model's loading; Ray's start-up (`ray.init`) is timed apart and left out of its route. The
Ray route is docs/dataframes.md's recipe for CPUs: one actor of 2 CPUs (torch at 2 threads, as the command line)
in a Ray of 3 (with 2 the actor held both and the Parquet read tasks never ran), batches of 10,000 rows. Every
route's F1 column is checked equal to the command line's. Pairs: the WMT pairs repeated, each copy made distinct.

    python benchmarks/studies/scaleout.py                     # 20,000 pairs, one round
    python benchmarks/studies/scaleout.py --pairs 40 --out /tmp/smoke
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import harness

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
ROUTES = ("score (line files)", "score --data (Parquet)", "Ray Data, one actor", "datasets.map")


def one_round(folder: Path, timing: dict) -> None:
    """Each route once, in a fresh process; its seconds (and Ray's start-up) into `timing`."""
    cli = [sys.executable, *f"-m bertscore_tm score -m {harness.MINILM} --device cpu --no-progress".split()]
    c, r, parquet = (str(folder / name) for name in ("c.txt", "r.txt", "p.parquet"))
    commands = [
        [*cli, "-c", c, "-r", r, "-s", "--format", "tsv", "-o", str(folder / "lines.tsv")],
        [*cli, "--data", parquet, "-o", str(folder / "data.parquet")],
        [sys.executable, "-c", RAY, parquet, str(folder / "ray_out"), harness.MINILM],
        [sys.executable, "-c", DATASETS, parquet, str(folder / "ds.parquet"), harness.MINILM],
    ]
    for route, command in zip(ROUTES, commands, strict=True):
        done = harness.run_command(command)
        if done["rc"]:
            raise SystemExit(f"{route} failed:\n{done['stderr'][-2000:]}")
        seconds = done["seconds"]
        if command[1] == "-c":  # a script: its own route's seconds, start-up apart
            init, seconds = (float(x) for x in done["stdout"].split()[-2:])
            if init:
                timing["seconds"].setdefault("(Ray start-up, apart)", []).append(init)
        timing["seconds"][route].append(seconds)


def same_scores(folder: Path) -> bool:
    """Every route's F1 equal to the line files' (as float32), pair for pair."""
    import numpy as np
    import pyarrow.parquet as pq

    lines = [line.split("\t") for line in (folder / "lines.tsv").read_text().splitlines() if line[:1].isdigit()]
    expected = np.array([float(r[3]) for r in lines], dtype=np.float32)
    tables = [pq.read_table(folder / name).sort_by("id") for name in ("data.parquet", "ray_out", "ds.parquet")]
    return all(np.array_equal(t["bertscore_f1"].to_numpy(), expected) for t in tables)


def run(args: Any) -> dict:
    import pyarrow as pa
    import pyarrow.parquet as pq

    cands, refs = harness.repeated_pairs(args.pairs)
    timing: dict = {"seconds": {r: [] for r in ROUTES}, "results": {}}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "c.txt").write_text("\n".join(cands) + "\n", encoding="utf-8")
        (folder / "r.txt").write_text("\n".join(refs) + "\n", encoding="utf-8")
        table = pa.table({"id": list(range(args.pairs)), "candidate": cands, "reference": refs})
        pq.write_table(table, folder / "p.parquet")
        for _ in range(args.rounds):
            one_round(folder, timing)
        same = same_scores(folder)
    p = {"pairs": args.pairs}
    rows = [
        harness.row("routes", r, p, timing, ROUTES[0] if r in ROUTES else None, args.pairs) for r in timing["seconds"]
    ]
    ratio = {r["name"]: r.get("ratio") for r in rows}
    checks = [
        harness.check("score --data at most 1.05x score", ratio[ROUTES[1]], 1.05),
        harness.check("Ray Data at most 1.15x score", ratio[ROUTES[2]], 1.15),
        harness.check("datasets.map at most 1.10x score", ratio[ROUTES[3]], 1.10),
        harness.check("every route's F1 equal to score's (1: yes)", float(same), 1, at_least=True),
    ]
    return {"suite": "scaleout", "title": "Scale-out routes against the command line", "rows": rows, "checks": checks}


ARGUMENTS = ((("--pairs",), dict(type=int, default=20_000)), (("--rounds",), dict(type=int, default=1)))

if __name__ == "__main__":
    sys.exit(harness.main(__doc__, ARGUMENTS, run))
