"""The scale suite: what grows with the corpus. Parts (`--parts`, all by default):

- epochs: validation epochs of `--pairs` WMT pairs, the same references every epoch and new candidates each
  (lines 1000-1999 and 2000-2999 of hyps_long as epochs 2 and 3), a metric with the embedding cache and one
  without taking turns epoch by epoch, the cache emptied at each round's start; epochs 2-3 against epoch 1;
- linear: time per pair and peak memory at `--sizes` distinct pairs of joined WMT lines (`harness.joined_pairs`),
  each size in fresh processes, against the bare pass's own peak over the same texts: memory bounded as pairs grow;
- torchrun: `bertscore-tm score` on `--torchrun-pairs` WMT pairs, one process with all threads against torchrun with two
  processes of half the threads, taking turns, and whether their outputs are the same;
- stream: `bertscore-tm score` on `--stream-lines` short lines against 1,000 of them, the peak resident memory of
  each, and that of reading the two files whole.

    python benchmarks/bench.py --suite scale
    python benchmarks/bench.py --suite scale --pairs 40 --sizes 40,80 --torchrun-pairs 40 \\
        --stream-lines 4000 --repeats 1 --out /tmp/smoke
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

import harness
import knobs
from harness import MINILM, check, max_diff, row

_METRICS: dict[bool, Any] = {}  # the cached and the uncached metric, shared by their epochs' configurations


def configure(name: str, p: dict) -> harness.Runner:
    from bertscore_tm import BERTScore

    if name.startswith(("cached", "uncached")):  # "cached, epoch 2"
        cached, epoch = name.startswith("cached"), int(name[-1]) - 1
        if cached not in _METRICS:
            _METRICS[cached] = BERTScore(MINILM, **({"embedding_cache_mb": p["cache_mb"]} if cached else {}))
        metric, n = _METRICS[cached], p["pairs"]
        cands, refs = harness.lines("hyps_long")[epoch * n : (epoch + 1) * n], harness.lines("refs_long")[:n]
        run = harness.metric_runner(metric, cands, refs)
        if cached and epoch == 0:
            return lambda: (metric.clear_cache(), {**run(), **knobs.cache_figures(metric)})[1]
        return (lambda: {**run(), **knobs.cache_figures(metric)}) if cached else run
    if name == "read whole":
        return lambda: {"lines": sum(len(knobs.read_lines(f)) for f in p["files"])}
    cands, refs = harness.joined_pairs(p["pairs"])
    if name == "bare":
        path, layers, _ = harness.model("minilm")
        return harness.bare_runner(path, layers, cands + refs)
    metric = BERTScore(MINILM)
    harness.metric_runner(metric, cands[:50], refs[:50])()  # warm up: first-call costs are not per pair
    run = harness.metric_runner(metric, cands, refs)
    return lambda: {**run(), "state_after_compute_mib": knobs.state_bytes(metric) / 2**20}


def epochs(args: Any, p: dict) -> tuple[list[dict], list[dict]]:
    p = {**p, "pairs": args.pairs, "cache_mb": args.cache_mb}
    names = [f"{kind}, epoch {e}" for e in (1, 2, 3) for kind in ("cached", "uncached")]
    timing = harness.timed_apart(__name__, names, p, args.repeats)
    rows = [row("epochs", k, p, timing, f"{k.split(',')[0]}, epoch 1", args.pairs) for k in names]
    got = timing["results"]
    same = all(max_diff(got[f"cached, epoch {e}"]["f1"], got[f"uncached, epoch {e}"]["f1"]) == 0 for e in (1, 2, 3))
    worst = max(r["ratio"] for r in rows if r["name"] in ("cached, epoch 2", "cached, epoch 3"))
    return rows, [
        check("epochs 2-3 with the cache at most 0.60x epoch 1", worst, 0.60),
        check("cached and uncached scores equal bit for bit (1: yes)", float(same), 1, at_least=True),
    ]


def linear(args: Any, p: dict) -> tuple[list[dict], list[dict]]:
    rows = []
    for n in args.sizes:
        q = {**p, "pairs": n}
        timing = harness.timed_apart(__name__, ["metric"], q, 1)
        memory, bare = harness.memory_apart(__name__, "metric", q), harness.memory_apart(__name__, "bare", q)
        figures = dict(bare_peak_mib=bare["tensor_mib"], beyond_bare_mib=memory["tensor_mib"] - bare["tensor_mib"])
        figures["state_mib"] = memory["state_bytes_per_pair"] * n / 2**20
        rows.append(row("linear", f"{n} pairs", q, timing, None, n, memory=memory, key="metric", **figures))
        rows[-1]["figures"]["ms_per_pair"] = 1e3 * rows[-1]["median_s"] / n
    first = rows[0]["figures"]
    for r in rows:
        r["ratio"] = round(r["figures"]["ms_per_pair"] / first["ms_per_pair"], 4)  # to the smallest size, per pair
    checks = [
        check(
            f"time per pair within 10% of the {args.sizes[0]}-pair run's", max(abs(r["ratio"] - 1) for r in rows), 0.10
        )
    ]
    for r in rows[1:]:
        state = r["figures"]["state_after_compute_mib"] - first["state_after_compute_mib"]
        what = f"{r['name']}: peak beyond the bare pass grows by no more than the state after compute ({state:.2f} MiB)"
        checks.append(check(what, r["figures"]["beyond_bare_mib"] - first["beyond_bare_mib"], state))
    return rows, checks


def torchrun(args: Any, p: dict) -> tuple[list[dict], list[dict]]:
    folder = Path(tempfile.mkdtemp(prefix="bench-torchrun."))
    for side, texts in zip("cr", harness.wmt_pairs(args.torchrun_pairs), strict=True):
        (folder / f"{side}.txt").write_text("\n".join(texts) + "\n", encoding="utf-8")
    cli = ["-m", "bertscore_tm", "score", "-c", str(folder / "c.txt"), "-r", str(folder / "r.txt"), "-m", MINILM]
    cli += ["--no-progress", "--format", "json", "-s"]
    launch = ["-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"]
    runs = {"one process": ([], args.threads), "torchrun, 2 processes": (launch, max(1, args.threads // 2))}
    timing: dict = {"seconds": {k: [] for k in runs}, "cpu_seconds": {k: [] for k in runs}, "results": {}}
    outputs = set()
    for _ in range(args.repeats):
        for name, (before, threads) in runs.items():
            done = harness.run_command(
                [sys.executable, *before, *cli], harness.child_env(threads, GLOO_SOCKET_IFNAME="lo")
            )
            if done["rc"]:
                raise SystemExit(f"{name} failed:\n{done['stderr'][-2000:]}")
            timing["seconds"][name].append(done["seconds"]), timing["cpu_seconds"][name].append(done["cpu_seconds"])
            outputs.add(done["stdout"])
    rows = [row("torchrun", k, {**p, "threads": runs[k][1]}, timing, "one process", args.torchrun_pairs) for k in runs]
    return rows, [
        check("every run's output the same, every digit (1: yes)", float(len(outputs) == 1), 1, at_least=True)
    ]


def stream(args: Any, p: dict) -> tuple[list[dict], list[dict]]:
    short = [(" ".join(h.split()[:5]), " ".join(r.split()[:5])) for h, r in zip(*harness.wmt_pairs(3003), strict=True)]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for count in (1000, args.stream_lines):
            files = [Path(tmp) / f"c{count}.txt", Path(tmp) / f"r{count}.txt"]
            for side, path in enumerate(files):
                path.write_text("".join(short[i % len(short)][side] + "\n" for i in range(count)), encoding="utf-8")
            cli = [
                sys.executable,
                "-m",
                "bertscore_tm",
                "score",
                "-c",
                str(files[0]),
                "-r",
                str(files[1]),
                "-m",
                MINILM,
            ]
            done = harness.run_command([*cli, "--no-progress"], harness.child_env(args.threads))
            mib = sum(f.stat().st_size for f in files) / 2**20
            q = {**p, "lines": count}
            rows.append(
                row(
                    "stream",
                    f"`score` on {count:,} lines",
                    q,
                    memory={"rss_mib": done["rss_mib"], "seconds": done["seconds"]},
                    files_mib=mib,
                )
            )
        whole = harness.memory_apart(__name__, "read whole", {**p, "files": [str(f) for f in files]})
    rows.append(row("stream", f"reading the two {args.stream_lines:,}-line files whole (growth only)", q, memory=whole))
    growth = (rows[1]["memory"]["rss_mib"] - rows[0]["memory"]["rss_mib"]) * 2**20 / args.stream_lines
    rows[1]["figures"]["bytes_a_line_over_1000_lines"] = growth
    return rows, []


PARTS = {"epochs": epochs, "linear": linear, "torchrun": torchrun, "stream": stream}
ARGUMENTS = (
    (
        ("--parts",),
        dict(type=lambda s: s.split(","), default=list(PARTS), help=f"comma-separated, of {', '.join(PARTS)}"),
    ),
    (("--repeats",), dict(type=int, default=3, help="rounds of the epochs and of torchrun (default 3)")),
    (("--pairs",), dict(type=int, default=1000, help="pairs an epoch (default 1000)")),
    (("--cache-mb",), dict(type=int, default=1024)),
    (("--sizes",), dict(type=lambda s: [int(x) for x in s.split(",")], default=[750, 3000, 12000])),
    (("--torchrun-pairs",), dict(type=int, default=3003, help="WMT pairs of the torchrun part (default 3003)")),
    (("--stream-lines",), dict(type=int, default=1_000_000)),
)


def run(args: Any) -> dict:
    rows, checks = [], []
    for part in args.parts:
        got = PARTS[part](args, {"threads": args.threads, "part": part})
        rows, checks = rows + got[0], checks + got[1]
    notes = [
        f"model: {MINILM} cut to 5 layers; texts: `tests/data/wmt/*_long.txt`",
        "peak tensors: torch's profiler, each size alone in its process; the bare pass's own peak over the same texts "
        "grows with how full its batches are (more texts sharing a length), so the metric's is read against it",
    ]
    return {"suite": "scale", "title": "Scale", "notes": notes, "rows": rows, "checks": checks}
