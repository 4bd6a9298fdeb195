"""Corpus-scale figures (issue 13), measured in one run on one machine: the embedding cache over validation
epochs, cost against the number of pairs, torchrun against one process, and the command line's memory on a
million lines. Results go to the section "## Corpus scale" of benchmarks/RESULTS.md, between the lines
`<!-- bench_scale: begin -->` and `<!-- bench_scale: end -->` (replaced on each run; bench.py keeps such marked
sections when it rewrites the file, and other sections are left as they are); the bfloat16 figures are bench.py's.

    python benchmarks/bench_scale.py                                # everything, 2 threads
    python benchmarks/bench_scale.py --sections epochs,torchrun     # some of it

- epochs: 3 epochs of --pairs WMT pairs, the same references every epoch and new candidates each epoch (lines
  1000-1999 and 2000-2999 of hyps_long.txt as epochs 2 and 3: another "system", scores meaningless, cost real),
  scored by a metric with the cache and one without, taking turns; epochs 2-3 against epoch 1.
- linear: time per pair and peak working memory at 750, 3000 and 12,000 distinct pairs, each size in a fresh
  process. 12,000 distinct pairs need more than the 3003 WMT lines, so every size uses pairs of joined lines:
  pair k is hyps_long[a] + " " + hyps_long[b] against refs_long[a] + " " + refs_long[b], a = k mod 3003,
  b = a + 1 + k div 3003 (mod 3003); 750 and 3000 are the first pairs of the 12,000.
- torchrun: `bertscore-tm score` on the 3003 WMT pairs, one process with all threads against
  `torchrun --nproc-per-node 2` with half the threads each (wall time of the whole command, model loading
  included), taking turns for --torchrun-rounds rounds (median), and whether the outputs (JSON, every digit)
  are the same.
- stream: `bertscore-tm score` on 1,000,000 short lines (the first five words of the WMT lines, cycled), peak
  resident memory against the same command on 1,000 of those lines and against reading the two files whole.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DATA = REPO / "tests" / "data" / "wmt"
MINILM = "sentence-transformers/all-MiniLM-L6-v2"
BATCH = 64
HEADING = "## Corpus scale: caching and many processes (issue 13, `benchmarks/bench_scale.py`)"
BEGIN, END = "<!-- bench_scale: begin -->", "<!-- bench_scale: end -->"
SECTIONS = ("epochs", "linear", "torchrun", "stream")


def _lines(name: str) -> list[str]:
    return (DATA / f"{name}.txt").read_text(encoding="utf-8").splitlines()


def _joined_pairs(n: int) -> tuple[list[str], list[str]]:
    hyps, refs = _lines("hyps_long"), _lines("refs_long")
    size = len(hyps)
    cands, targets = [], []
    for k in range(n):
        a = k % size
        b = (a + 1 + k // size) % size
        cands.append(hyps[a] + " " + hyps[b])
        targets.append(refs[a] + " " + refs[b])
    return cands, targets


def _peak_rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _env(threads: int) -> dict[str, str]:
    env = dict(
        os.environ,
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        TOKENIZERS_PARALLELISM="false",
        OMP_NUM_THREADS=str(threads),
        GLOO_SOCKET_IFNAME=os.environ.get("GLOO_SOCKET_IFNAME", "lo"),
    )
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO / "src"), env.get("PYTHONPATH", "")) if p)
    for name in ("WORLD_SIZE", "RANK", "LOCAL_RANK"):
        env.pop(name, None)
    return env


def _state_bytes(metric) -> int:
    import torch

    total = 0
    for name in metric._defaults:
        value = getattr(metric, name)
        for t in value if isinstance(value, list) else [value]:
            if isinstance(t, torch.Tensor):
                total += t.numel() * t.element_size()
    return total


def _score(metric, cands: list[str], refs: list[str]):
    metric.reset()
    for i in range(0, len(cands), BATCH):  # as a validation loop feeds it
        metric.update(cands[i : i + BATCH], refs[i : i + BATCH])
    return metric.compute()


# --------------------------------------------------------------------------- workers (run in subprocesses)
def _worker_epochs(args: argparse.Namespace) -> dict:
    import torch

    from bertscore_tm import BERTScore

    n = args.pairs
    hyps, refs = _lines("hyps_long"), _lines("refs_long")
    epochs = [(hyps[e * n : (e + 1) * n], refs[:n]) for e in range(3)]
    cached = BERTScore(MINILM, embedding_cache_mb=args.cache_mb)
    plain = BERTScore(MINILM)
    rounds, equal = [], True
    for _ in range(args.repeats):
        cached.clear_cache()
        row: dict[str, list[float]] = {"cached": [], "uncached": [], "cached_cpu": [], "uncached_cpu": []}
        for cands, targets in epochs:
            results = {}
            for name, metric in (("cached", cached), ("uncached", plain)):
                wall, cpu = time.perf_counter(), time.process_time()
                results[name] = _score(metric, cands, targets)
                row[name].append(time.perf_counter() - wall)
                row[f"{name}_cpu"].append(time.process_time() - cpu)
            equal &= all(
                torch.equal(results["cached"][k], results["uncached"][k]) for k in ("precision", "recall", "f1")
            )
        rounds.append(row)
    cache = cached.embedding_cache
    tokens = sum(v.shape[0] for v in cache._entries.values())
    return {
        "rounds": rounds,
        "equal": equal,
        "cache_mib": cache.nbytes / 2**20,
        "cache_texts": len(cache),
        "cache_tokens": tokens,
    }


def _worker_linear(args: argparse.Namespace) -> dict:
    from bertscore_tm import BERTScore

    cands, refs = _joined_pairs(args.pairs)
    metric = BERTScore(MINILM)
    _score(metric, cands[:50], refs[:50])  # warm up (first-call costs are not per pair)
    if not args.memory:
        wall, cpu = time.perf_counter(), time.process_time()
        _score(metric, cands, refs)
        return {"pairs": args.pairs, "seconds": time.perf_counter() - wall, "cpu_seconds": time.process_time() - cpu}
    sys.path.insert(0, str(HERE))
    from bench import _tensor_peak

    out: dict = {"pairs": args.pairs}

    def run() -> None:
        metric.reset()
        for i in range(0, len(cands), BATCH):
            metric.update(cands[i : i + BATCH], refs[i : i + BATCH])
        out["state_mib"] = _state_bytes(metric) / 2**20
        metric.compute()

    _, out["tensor_peak_mib"] = _tensor_peak(run)
    out["state_after_compute_mib"] = _state_bytes(metric) / 2**20
    from bench import _forward_peak

    out["forward_peak_mib"] = _forward_peak(cands, refs)
    return out


def _worker_read_whole(args: argparse.Namespace) -> dict:
    from bertscore_tm.cli import read_lines

    base = _peak_rss_mib()
    held = [read_lines(p, "file") for p in args.files]
    return {"lines": len(held[0]), "peak_growth_mib": _peak_rss_mib() - base}


def _worker_cli(args: argparse.Namespace) -> dict:
    """The command line in this process, its peak resident memory after."""
    import io

    from bertscore_tm.cli import main

    sink = io.StringIO()
    start = time.perf_counter()
    with contextlib.redirect_stdout(sink):
        code = main(args.cli)
    return {
        "code": code,
        "seconds": time.perf_counter() - start,
        "peak_rss_mib": _peak_rss_mib(),
        "output": sink.getvalue()[:400],
    }


def _worker(args: argparse.Namespace) -> dict:
    import torch

    warnings.filterwarnings("ignore")
    torch.set_num_threads(args.threads)
    return {"epochs": _worker_epochs, "linear": _worker_linear, "read-whole": _worker_read_whole, "cli": _worker_cli}[
        args.worker
    ](args)


def _run(worker: str, args: argparse.Namespace, *extra: str, threads: int | None = None) -> dict:
    cmd = [
        sys.executable,
        __file__,
        "--worker",
        worker,
        "--threads",
        str(threads or args.threads),
        "--repeats",
        str(args.repeats),
        "--cache-mb",
        str(args.cache_mb),
        *extra,
    ]
    print(f"  running {worker} {' '.join(extra)[:80]} ...", file=sys.stderr, flush=True)
    done = subprocess.run(cmd, check=True, capture_output=True, text=True, env=_env(threads or args.threads))
    return json.loads(done.stdout.strip().splitlines()[-1])


# --------------------------------------------------------------------------- sections
def _epochs(args: argparse.Namespace) -> list[str]:
    r = _run("epochs", args, "--pairs", str(args.pairs))
    rounds = r["rounds"]

    def ratio(name: str, epoch: int) -> float:
        return statistics.median(x[name][epoch] / x[name][0] for x in rounds)

    lines = [
        "### The embedding cache over validation epochs",
        "",
        f"{args.pairs} WMT pairs an epoch, the same references every epoch, new candidates each epoch; one metric "
        f"with `embedding_cache_mb={args.cache_mb}` and one without take turns, {args.repeats} rounds (the cache "
        "emptied at the start of each), median round reported; time = updates + compute().",
        "",
        "| epoch | cached: seconds | cached: ratio to epoch 1 | uncached: seconds | uncached: ratio to epoch 1 "
        "| cached: CPU-time ratio |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for e in range(3):
        lines.append(
            f"| {e + 1} | {statistics.median(x['cached'][e] for x in rounds):.2f} | {ratio('cached', e):.2f}x | "
            f"{statistics.median(x['uncached'][e] for x in rounds):.2f} | {ratio('uncached', e):.2f}x | "
            f"{ratio('cached_cpu', e):.2f}x |"
        )
    worst = max(ratio("cached", 1), ratio("cached", 2))
    per_token = r["cache_mib"] * 2**20 / max(1, r["cache_tokens"])
    lines += [
        "",
        f"- epochs 2-3 with the cache: at most {worst:.2f}x epoch 1 (target 0.60x: "
        f"{'met' if worst <= 0.60 else 'NOT met'}); cached and uncached scores bit for bit equal in every epoch: "
        f"{'yes' if r['equal'] else 'NO'}",
        f"- the cache held {r['cache_texts']} texts, {r['cache_tokens']} tokens, in {r['cache_mib']:.1f} MiB "
        f"({per_token:.0f} bytes a token: 384 x 4 bytes of vector, the rest the key and bookkeeping)",
        "",
    ]
    return lines


def _linear(args: argparse.Namespace) -> list[str]:
    sizes = args.scale
    timing = {n: _run("linear", args, "--pairs", str(n)) for n in sizes}
    memory = {n: _run("linear", args, "--pairs", str(n), "--memory") for n in sizes}
    small = sizes[0]
    per_pair = {n: timing[n]["seconds"] / n for n in sizes}
    cpu_per_pair = {n: timing[n]["cpu_seconds"] / n for n in sizes}
    lines = [
        "### Cost against the number of pairs",
        "",
        "Pairs of joined WMT lines (see the script's docstring), each size in a fresh process; time = updates + "
        "compute(); peak tensors = the peak of live tensor memory over the updates and compute() (torch's "
        "profiler, the model's weights excluded), in a second fresh process; the bare forward pass's peak = the "
        "same profiler's peak over the bare forward pass of the same distinct texts in the same one-length batches "
        "(`bench.py`'s limit), in that process.",
        "",
        "| pairs | seconds | ms per pair | ratio to the smallest | CPU-time ratio | peak tensors MiB "
        "| state after updates MiB | state after compute MiB | bare forward pass's peak MiB "
        "| peak less the forward pass's MiB |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for n in sizes:
        m = memory[n]
        lines.append(
            f"| {n} | {timing[n]['seconds']:.1f} | {per_pair[n] * 1e3:.2f} | {per_pair[n] / per_pair[small]:.3f}x | "
            f"{cpu_per_pair[n] / cpu_per_pair[small]:.3f}x | {m['tensor_peak_mib']:.1f} | {m['state_mib']:.2f} | "
            f"{m['state_after_compute_mib']:.2f} | {m['forward_peak_mib']:.1f} | "
            f"{m['tensor_peak_mib'] - m['forward_peak_mib']:.2f} |"
        )
    worst = max(abs(per_pair[n] / per_pair[small] - 1) for n in sizes[1:])
    lines += [
        "",
        f"- time per pair within {worst * 100:.1f}% of the {small}-pair run (target 10%: "
        f"{'met' if worst <= 0.10 else 'NOT met'})",
    ]

    def beyond(n: int) -> float:
        return memory[n]["tensor_peak_mib"] - memory[n]["forward_peak_mib"]

    for n in sizes[1:]:
        growth = memory[n]["tensor_peak_mib"] - memory[small]["tensor_peak_mib"]
        forward = memory[n]["forward_peak_mib"] - memory[small]["forward_peak_mib"]
        extra = memory[n]["state_after_compute_mib"] - memory[small]["state_after_compute_mib"]
        flat = beyond(n) - beyond(small) <= extra
        lines.append(
            f"- {small} -> {n} pairs: the peak grew by {growth:+.2f} MiB, of which the bare forward pass's own peak "
            f"{forward:+.2f} MiB (fuller batches: more texts share a length); less that, "
            f"{beyond(n) - beyond(small):+.2f} MiB against {extra:.2f} MiB more state after compute "
            f"({'flat beyond the state and the forward pass: met' if flat else 'NOT flat beyond the state'}; "
            f"all of it {'within' if growth <= extra else 'NOT within'} the state's growth)"
        )
    return [*lines, ""]


def _cli_args(cands: str, refs: str, *more: str) -> list[str]:
    return ["score", "-c", cands, "-r", refs, "-m", MINILM, "--no-progress", *more]


def _torchrun(args: argparse.Namespace) -> list[str]:
    cands, refs = str(DATA / "hyps_long.txt"), str(DATA / "refs_long.txt")
    cli = _cli_args(cands, refs, "--format", "json", "-s")
    runs = (
        ("one process", [sys.executable, "-m", "bertscore_tm", *cli], args.threads),
        (
            "torchrun, 2 processes",
            [
                sys.executable,
                "-m",
                "torch.distributed.run",
                "--standalone",
                "--nproc-per-node",
                "2",
                "-m",
                "bertscore_tm",
                *cli,
            ],
            max(1, args.threads // 2),
        ),
    )
    timings: dict[str, list[float]] = {name: [] for name, _, _ in runs}
    outputs: dict[str, set[str]] = {name: set() for name, _, _ in runs}
    for _ in range(args.torchrun_rounds):
        for name, cmd, threads in runs:
            print(f"  running {name} ...", file=sys.stderr, flush=True)
            start = time.perf_counter()
            done = subprocess.run(cmd, capture_output=True, text=True, env=_env(threads), check=True)
            timings[name].append(time.perf_counter() - start)
            outputs[name].add(done.stdout)
    same = len(outputs["one process"] | outputs["torchrun, 2 processes"]) == 1
    one, two = (statistics.median(timings[name]) for name, _, _ in runs)
    spread = {name: ", ".join(f"{t:.1f}" for t in timings[name]) for name, _, _ in runs}
    return [
        "### torchrun against one process",
        "",
        f"`bertscore-tm score -c hyps_long.txt -r refs_long.txt --format json -s` (3003 pairs), wall time of the "
        f"whole command (start-up and model loading included): one process with {args.threads} threads against "
        f"`torchrun --standalone --nproc-per-node 2` with {max(1, args.threads // 2)} thread(s) each, on this "
        f"{os.cpu_count()}-core machine; the two take turns, {args.torchrun_rounds} round(s), median reported.",
        "",
        "| run | seconds (median) | every round | speed-up |",
        "| --- | ---: | --- | ---: |",
        f"| one process | {one:.1f} | {spread['one process']} | 1.00x |",
        f"| torchrun, 2 processes | {two:.1f} | {spread['torchrun, 2 processes']} | {one / two:.2f}x |",
        "",
        f"- the outputs of every run are {'identical, every digit' if same else 'DIFFERENT'}",
        "",
    ]


def _stream(args: argparse.Namespace) -> list[str]:
    hyps, refs = _lines("hyps_long"), _lines("refs_long")
    short = [(" ".join(h.split()[:5]), " ".join(r.split()[:5])) for h, r in zip(hyps, refs, strict=True)]
    n = args.stream_lines
    with tempfile.TemporaryDirectory() as tmp:
        paths = {}
        for count in (1000, n):
            c, r = Path(tmp) / f"c{count}.txt", Path(tmp) / f"r{count}.txt"
            with c.open("w", encoding="utf-8") as fc, r.open("w", encoding="utf-8") as fr:
                for i in range(count):
                    a, b = short[i % len(short)]
                    fc.write(a + "\n")
                    fr.write(b + "\n")
            paths[count] = (str(c), str(r))
        size_mib = sum(Path(p).stat().st_size for p in paths[n]) / 2**20
        small = _run("cli", args, "--cli", *_cli_args(*paths[1000]))
        large = _run("cli", args, "--cli", *_cli_args(*paths[n]))
        whole = _run("read-whole", args, "--files", *paths[n])
    return [
        "### The command line on a million lines",
        "",
        f"`bertscore-tm score` (one process) on {n:,} short lines (the first five words of each WMT line, cycled; "
        f"candidate and reference files {size_mib:.0f} MiB together), read as a stream in chunks of 10,000 lines.",
        "",
        "| run | seconds | peak resident memory MiB |",
        "| --- | ---: | ---: |",
        f"| `score` on 1,000 of those lines (torch, the model, the start-up) | {small['seconds']:.1f} "
        f"| {small['peak_rss_mib']:.0f} |",
        f"| `score` on {n:,} lines | {large['seconds']:.1f} | {large['peak_rss_mib']:.0f} |",
        f"| reading the two {n:,}-line files whole (as `score` did before), growth only | - "
        f"| {whole['peak_growth_mib']:.0f} |",
        "",
        f"- {n:,} lines cost {large['peak_rss_mib'] - small['peak_rss_mib']:.0f} MiB over 1,000 lines "
        f"({(large['peak_rss_mib'] - small['peak_rss_mib']) * 2**20 / n:.0f} bytes a line): the token-id states, "
        "the per-token best similarities and compute()'s bookkeeping; the lines themselves are never all in memory",
        "",
    ]


# --------------------------------------------------------------------------- driver
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sections", default=",".join(SECTIONS), help=f"comma-separated, of {', '.join(SECTIONS)}")
    parser.add_argument("--pairs", type=int, default=1000, help="pairs per epoch")
    parser.add_argument("--scale", type=lambda s: [int(x) for x in s.split(",")], default=[750, 3000, 12000])
    parser.add_argument("--stream-lines", type=int, default=1_000_000)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3, help="rounds of the epochs")
    parser.add_argument("--cache-mb", type=int, default=1024)
    parser.add_argument("--torchrun-rounds", type=int, default=2, help="rounds of one process vs torchrun")
    parser.add_argument("--out", type=Path, default=HERE / "RESULTS.md")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--memory", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--files", nargs="+", help=argparse.SUPPRESS)
    parser.add_argument("--cli", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(_worker(args)))
        return

    import torch

    chosen = [s for s in args.sections.split(",") if s]
    unknown = set(chosen) - set(SECTIONS)
    if unknown:
        raise SystemExit(f"unknown sections: {', '.join(sorted(unknown))}")
    cpu = "unknown"
    with contextlib.suppress(OSError, StopIteration):
        info = Path("/proc/cpuinfo").read_text().splitlines()
        cpu = next(line.split(":", 1)[1].strip() for line in info if line.startswith("model name"))
    body = [
        HEADING,
        "",
        f"Measured {dt.date.today().isoformat()}, each part by the command it names, on {platform.machine()}, "
        f"{cpu}, {os.cpu_count()} cores, torch "
        f"{torch.__version__}; the model: {MINILM} cut to 5 layers. The bfloat16 figures are bench.py's, in the "
        "tables above. GPU: none was available in the session that ran this, so GPU figures were not measured (the "
        "roberta-large bfloat16 target of 10,000 pairs/s on an H100 is unmeasured).",
        "",
    ]
    # the heading, then each section in its own marked block, written as soon as it is measured (so a run of
    # some sections replaces those and keeps the others)
    _write_section(args.out, "\n".join([BEGIN, *body, END]) + "\n")
    for section in chosen:
        load_before, start = os.getloadavg(), time.perf_counter()
        lines = {"epochs": _epochs, "linear": _linear, "torchrun": _torchrun, "stream": _stream}[section](args)
        seconds, load_after = time.perf_counter() - start, os.getloadavg()
        lines[1:1] = [
            "",
            f"Measured by `python benchmarks/bench_scale.py {' '.join(sys.argv[1:])}` ({seconds / 60:.0f} min); "
            f"load average {load_before[0]:.1f} / {load_before[1]:.1f} / {load_before[2]:.1f} (1 / 5 / 15 min) at "
            f"the start, {load_after[0]:.1f} / {load_after[1]:.1f} / {load_after[2]:.1f} at the end, on "
            f"{os.cpu_count()} cores, the benchmark itself keeping {args.threads} threads busy (above that, other "
            "jobs shared the machine and wall-clock figures are noisy).",
        ]
        begin, end = f"<!-- bench_scale_{section}: begin -->", f"<!-- bench_scale_{section}: end -->"
        _write_section(args.out, "\n".join([begin, *lines, end]) + "\n", begin, end)
        print("\n".join(lines), flush=True)
        print(f"  {section}: {seconds:.0f} s", file=sys.stderr, flush=True)


def _write_section(path: Path, text: str, begin: str = BEGIN, end: str = END) -> None:
    """Put a block in `path`, replacing an earlier one (between `begin` and `end`, or for the heading's block an
    older unmarked section from its heading to the next '## ' heading); everything else is left as it is."""
    old = path.read_text(encoding="utf-8") if path.exists() else ""
    if begin in old and end in old:
        start, stop = old.index(begin), old.index(end) + len(end)
    elif begin == BEGIN and HEADING in old:
        start = old.index(HEADING)
        after = old.find("\n## ", start + len(HEADING))
        stop = len(old) if after < 0 else after + 1
    else:
        start = stop = len(old)
    before, rest = old[:start].rstrip("\n"), old[stop:].lstrip("\n")
    new = (before + "\n\n" if before else "") + text + ("\n" + rest if rest else "")
    path.write_text(new, encoding="utf-8")


if __name__ == "__main__":
    main()
