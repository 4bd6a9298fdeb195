"""The benchmarks' harness: configurations taking turns round after round (so the machine's drift falls on all
alike), the median round, each configuration's peak memory alone in a fresh process, the environment a figure
hangs on, and results as JSON rows that `render.py` turns into RESULTS.md.

A suite or study names its configurations and builds each with `configure(name, params)`: a function that runs
the configuration once and returns what it measured besides time (its F1 under "f1", figures under other keys).
Every reach into the package's internals is in `knobs.py`.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import importlib
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
for _path in (str(HERE), str(REPO / "src")):  # this checkout's package, not an installed copy
    if _path not in sys.path:
        sys.path.insert(0, _path)

import knobs  # noqa: E402

WMT = REPO / "tests" / "data" / "wmt"
WMT17 = REPO / "tests" / "data" / "wmt17-da" / "da-seglevel-toen.tsv"
MINILM = "sentence-transformers/all-MiniLM-L6-v2"
UPDATE = 64  # pairs per update(), as a validation loop feeds them
#: oneDNN's kernel cache in a timing process (its default holds 1024): in bfloat16 on a CPU it makes a kernel per
#: matrix shape, and configurations taking turns would evict each other's kernels, which none pays alone.
PRIMITIVE_CACHE = 16384
#: Model shapes built from a config with random weights and MiniLM's tokenizer (their cost is the real model's,
#: their scores mean nothing): roberta-large cut at its tuned layer 17, and a tiny one for dry runs.
SHAPES: dict[str, dict[str, int]] = {
    "roberta-large": dict(hidden_size=1024, num_attention_heads=16, intermediate_size=4096, num_hidden_layers=17),
    "tiny": dict(hidden_size=64, num_attention_heads=4, intermediate_size=128, num_hidden_layers=2),
}
Runner = Callable[[], dict]
MEMORY_KEYS = ("seconds", "rss_mib", "tensor_mib")  # what `memory_apart` adds to a run's own figures


# ----------------------------------------------------------------------------------------------- the texts
def lines(name: str) -> list[str]:
    return (WMT / f"{name}.txt").read_text(encoding="utf-8").splitlines()


def wmt_pairs(n: int, offset: int = 0) -> tuple[list[str], list[str]]:
    """The first n vendored WMT pairs (from `offset`)."""
    hyps, refs = lines("hyps_long"), lines("refs_long")
    if offset + n > len(hyps):
        raise SystemExit(f"only {len(hyps)} WMT pairs; asked for {n} from {offset}")
    return hyps[offset : offset + n], refs[offset : offset + n]


def repeated_pairs(n: int) -> tuple[list[str], list[str]]:
    """n pairs: the vendored WMT pairs repeated, copy k > 0 with " k" appended to both texts (all distinct, so
    that nothing is embedded once for several pairs)."""
    hyps, refs = lines("hyps_long"), lines("refs_long")
    tail = lambda i: f" {i // len(hyps)}" if i >= len(hyps) else ""  # noqa: E731
    return [hyps[i % len(hyps)] + tail(i) for i in range(n)], [refs[i % len(refs)] + tail(i) for i in range(n)]


def joined_pairs(n: int) -> tuple[list[str], list[str]]:
    """n distinct pairs of two joined WMT lines: pair k joins lines a = k mod 3003 and a + 1 + k div 3003."""
    hyps, refs = lines("hyps_long"), lines("refs_long")
    ab = [(k % len(hyps), (k % len(hyps) + 1 + k // len(hyps)) % len(hyps)) for k in range(n)]
    return [f"{hyps[a]} {hyps[b]}" for a, b in ab], [f"{refs[a]} {refs[b]}" for a, b in ab]


def read_judgements(path: Path = WMT17) -> Any:
    """The WMT17 segment-level judgements (or another file of the same columns), grouped by language pair."""
    from bertscore_tm.tuning import read_judgements as read

    return read(path, group="lp", system="system")


def distinct(texts: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(t.strip() for t in texts))


def feed(metric: Any, cands: Sequence[str], refs: Sequence[str], deadline: float = float("inf"), **kw: Any) -> int:
    """update() in slices of `UPDATE` pairs until the pairs or the time run out; the pairs fed."""
    done = 0
    while done < len(cands) and time.perf_counter() < deadline:
        metric.update(cands[done : done + UPDATE], refs[done : done + UPDATE], **kw)
        done = min(len(cands), done + UPDATE)
    return done


class Pairs:
    """A DataLoader's dataset of (candidate, reference) pairs."""

    def __init__(self, cands: Sequence[str], refs: Sequence[str]) -> None:
        self.cands, self.refs = cands, refs

    def __len__(self) -> int:
        return len(self.cands)

    def __getitem__(self, i: int) -> tuple[str, str]:
        return self.cands[i], self.refs[i]


class Tokenized:
    """A collate_fn: a batch of pairs tokenised by the metric's own (picklable) `tokenize`."""

    def __init__(self, tokenize: Any) -> None:
        self.tokenize = tokenize

    def __call__(self, batch: list[tuple[str, str]]) -> Any:
        return self.tokenize([c for c, _ in batch], [r for _, r in batch])


def feed_tokenized(
    metric: Any, cands: Sequence[str], refs: Sequence[str], workers: int, deadline: float = float("inf")
) -> int:
    """`feed`, the slices tokenised by `workers` DataLoader workers (`metric.tokenize` as the collate_fn)."""
    from torch.utils.data import DataLoader

    loader = DataLoader(
        Pairs(cands, refs), batch_size=UPDATE, num_workers=workers, collate_fn=Tokenized(metric.tokenize)
    )
    done = 0
    for batch in loader:
        metric.update(batch)
        done = min(len(cands), done + UPDATE)
        if time.perf_counter() >= deadline:
            break
    return done


# ----------------------------------------------------------------------------------------------- the models
def model(shape: str = "minilm", tokenizer: str | None = None) -> tuple[str, int, str]:
    """(model folder, layer, description): the packaged MiniLM cut at its default layer, or a `SHAPES` model
    built once in the temporary folder (with `tokenizer`'s files, by default the packaged MiniLM's)."""
    if shape == "minilm":
        layers = knobs.default_layers(MINILM)
        return knobs.model_path(MINILM), layers, f"{MINILM} cut to {layers} layers"
    import torch
    from transformers import AutoTokenizer, RobertaConfig, RobertaModel

    folder = Path(tempfile.gettempdir()) / "bertscore-tm-bench" / shape
    if not (folder / "done").exists():
        tok = AutoTokenizer.from_pretrained(tokenizer or knobs.model_path(MINILM))
        config = RobertaConfig(
            **SHAPES[shape],
            max_position_embeddings=514,
            type_vocab_size=1,
            vocab_size=max(50265, len(tok)),
            pad_token_id=tok.pad_token_id,
            bos_token_id=tok.cls_token_id,
            eos_token_id=tok.sep_token_id,
        )
        torch.manual_seed(0)
        RobertaModel(config, add_pooling_layer=False).save_pretrained(folder)
        tok.save_pretrained(folder)
        (folder / "done").write_text("ok")
    layers = SHAPES[shape]["num_hidden_layers"]
    return str(folder), layers, f"{shape}'s shape, {layers} blocks: random weights, MiniLM's tokenizer"


def padded_batches(lengths: Sequence[int], budget: int) -> list[list[int]]:
    """Length-sorted batches padded to their longest text (the batching before one-length batches), within
    `budget` padded tokens and a quadratic cap on attention."""
    out: list[list[int]] = []
    for i in sorted(range(len(lengths)), key=lambda i: -lengths[i]):
        n, longest = (len(out[-1]) + 1, lengths[out[-1][0]]) if out else (0, 0)
        if not out or n * longest > budget or n * longest**2 > budget * 32:
            out.append([])
        out[-1].append(i)
    return out


def bare_pass(
    model: Any,
    ids: Sequence[Any],
    kind: str,
    budget: int,
    device: str = "cpu",
    batch_size: int | None = None,
    hidden_states: bool = False,
    deadline: float = float("inf"),
) -> tuple[int, int]:
    """The bare forward pass of `ids` (no scoring) in batches of one length, padded batches or the
    accelerator's packs: (texts, tokens) run before `deadline`."""
    import torch

    lengths = [len(x) for x in ids]
    if kind == "one-length":
        batches = knobs.one_length_batches(lengths, budget, batch_size)
    else:
        batches = knobs.packs(lengths, budget) if kind == "packed" else padded_batches(lengths, budget)
    texts = tokens = 0
    with torch.inference_mode():
        for batch in batches:
            seqs = [ids[i] for i in batch]
            if kind == "packed":
                knobs.packed_forward(model, seqs, budget)
            else:
                inp = torch.zeros((len(seqs), max(len(s) for s in seqs)), dtype=torch.long)
                mask = torch.zeros_like(inp)
                for row, s in enumerate(seqs):
                    inp[row, : len(s)], mask[row, : len(s)] = torch.as_tensor(s), 1
                model(input_ids=inp.to(device), attention_mask=mask.to(device), output_hidden_states=hidden_states)
            texts, tokens = texts + len(seqs), tokens + sum(len(s) for s in seqs)
            if time.perf_counter() > deadline:
                break
    sync(device)
    return texts, tokens


def bare_runner(
    path: str, layers: int, texts: Sequence[str], device: str = "cpu", dtype: str = "float32", kind: str = "one-length"
) -> Runner:
    """The bare pass of the distinct `texts` through the model cut at `layers` (all of them, their hidden states
    kept, for 0), cast to `dtype` as the metric casts it, at the metric's token budget on `device`."""
    encoder, budget, batch_size = knobs.load_encoder(path, layers, device, dtype, all_layers=layers == 0)
    ids = knobs.token_ids(path, distinct(texts))

    def run() -> dict:
        done, tokens = bare_pass(encoder, ids, kind, budget, device, batch_size, hidden_states=layers == 0)
        return {"texts": done, "tokens": tokens}

    return run


def metric_runner(metric: Any, cands: Sequence[str], refs: Sequence[str], **update: Any) -> Runner:
    """update() in slices of `UPDATE` pairs, as a validation loop feeds them, then compute(): its F1 and its
    state's bytes per pair after the updates."""

    def run() -> dict:
        metric.reset()
        feed(metric, cands, refs, **update)
        state = knobs.state_bytes(metric) / len(cands)
        return {"f1": [float(x) for x in metric.compute()["f1"]], "state_bytes_per_pair": state}

    return run


def sync(device: str) -> None:
    if str(device).startswith("cuda"):
        import torch

        torch.cuda.synchronize()


# ----------------------------------------------------------------------------------------------- timing
def turns(names: Sequence[str], rounds: int, alternate: bool = False) -> list[list[str]]:
    """The order of each round: the same every round, or reversed every other round (A B, B A, ...: what a
    round's first turn gains or loses falls on each configuration alike)."""
    return [list(names)[::-1] if alternate and k % 2 else list(names) for k in range(rounds)]


def interleave(runners: dict[str, Runner], rounds: int, alternate: bool = False) -> dict:
    """Every configuration once a round, `rounds` rounds: wall and process CPU seconds per configuration and
    round, each configuration's last result, and the figures (numbers and words) of every round's result."""
    wall: dict[str, list[float]] = {name: [] for name in runners}
    cpu: dict[str, list[float]] = {name: [] for name in runners}
    figures: dict[str, list[dict]] = {name: [] for name in runners}
    results: dict[str, dict] = {}
    for order in turns(list(runners), rounds, alternate):
        for name in order:
            start, used = time.perf_counter(), time.process_time()
            results[name] = runners[name]() or {}
            wall[name].append(time.perf_counter() - start)
            cpu[name].append(time.process_time() - used)
            figures[name].append({k: v for k, v in results[name].items() if isinstance(v, int | float | str)})
    return {"seconds": wall, "cpu_seconds": cpu, "results": results, "figures": figures}


def median(values: Sequence[float]) -> float:
    """The median, nan for none."""
    return statistics.median(values) if values else float("nan")


def ratios(seconds: Sequence[float], base: Sequence[float], items: int = 1, base_items: int = 1) -> list[float]:
    """Round by round, seconds per item over the base's seconds per item in the same round."""
    return [(s / items) / (b / base_items) for s, b in zip(seconds, base, strict=True)]


def checksum(f1: Sequence[float]) -> float:
    """A fingerprint of a run's scores: their sum, to 6 decimals."""
    return round(float(sum(f1)), 6)


def digest(*tensors: Any) -> str:
    """A fingerprint of tensors' bits (equal digests: equal bit for bit)."""
    import hashlib

    h = hashlib.sha256()
    for t in tensors:
        h.update(t.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()[:16]


def max_diff(a: Sequence[float], b: Sequence[float]) -> float:
    return max((abs(x - y) for x, y in zip(a, b, strict=False)), default=float("nan"))


def row(
    part: str,
    name: str,
    params: dict,
    timing: dict | None = None,
    base: str | None = "bare",
    items: int | None = None,
    base_items: int | None = None,
    memory: dict | None = None,
    key: str | None = None,
    **figures: Any,
) -> dict:
    """One JSON row: a configuration (`key` in `timing`, by default its name) at one size, its seconds each round
    and their median, its ratio per item to `base` (the bare pass of the same model over the same texts), its
    peak memory (`memory_apart`), the checksum of its F1 and the figures its runs returned or the suite adds."""
    key = key or name
    out: dict[str, Any] = {"part": part, "name": name, "params": params, "items": items}
    result = {**(memory or {}), **(timing or {}).get("results", {}).get(key, {})}
    if timing is not None and key in timing["seconds"]:
        seconds, cpu = timing["seconds"][key], timing.get("cpu_seconds", {})
        out.update(seconds=[round(s, 4) for s in seconds], median_s=round(median(seconds), 4))
        if base is not None and base in timing["seconds"] and base != key:
            n, m = items or 1, base_items or items or 1
            per_round = ratios(seconds, timing["seconds"][base], n, m)
            out.update(base=base, ratio=round(median(per_round), 4), ratio_rounds=[round(r, 4) for r in per_round])
            if key in cpu and base in cpu:
                out["cpu_ratio"] = round(median(ratios(cpu[key], cpu[base], n, m)), 4)
    elif memory is not None and "seconds" in memory:
        out.update(seconds=[round(memory["seconds"], 4)], median_s=round(memory["seconds"], 4))
    if memory is not None:
        out["memory"] = {k: round(memory[k], 1) for k in ("tensor_mib", "rss_mib") if memory.get(k) is not None}
    f1 = result.pop("f1", None)
    if f1:
        out["checksum"] = checksum(f1)
    kept = {k: v for k, v in result.items() if isinstance(v, int | float | str) and k not in MEMORY_KEYS}
    out["figures"] = {k: v for k, v in {**kept, **figures}.items() if v is not None}
    return out


def check(what: str, value: float | None, bound: float, at_least: bool = False) -> dict:
    """A target: met where `value` is at most (or, `at_least`, at least) `bound`; None where it was not measured."""
    met = None if value is None or value != value else (value >= bound if at_least else value <= bound)
    return {"what": what, "value": value, "bound": bound, "met": met}


# ----------------------------------------------------------------------------------------------- memory
def rss_kib(field: str = "VmHWM") -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def reset_peak() -> int:
    """Reset the peak resident size (Linux: `clear_refs` 5); the resident KiB now."""
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")
    return rss_kib("VmRSS")


def tensor_peak(fn: Callable[[], Any], device: str = "cpu") -> tuple[Any, float]:
    """fn()'s result and the peak MiB of tensors alive during it beyond those alive before (the model's
    weights): on CUDA, CUDA's own peak; on a CPU, torch's profiler's record of every allocation and free (free of
    the C allocator's caching, unlike resident sizes)."""
    import torch

    if str(device).startswith("cuda"):
        torch.cuda.synchronize()
        before = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        result = fn()
        torch.cuda.synchronize()
        return result, (torch.cuda.max_memory_allocated() - before) / 2**20
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        result = fn()
    events = sorted((e.start_ns(), e.nbytes()) for e in prof.profiler.kineto_results.events() if e.name() == "[memory]")
    live = peak = 0
    for _, nbytes in events:
        live += nbytes
        peak = max(peak, live)
    return result, peak / 2**20


# ----------------------------------------------------------------------------------------------- processes
def child_env(threads: int | None = None, **extra: str) -> dict[str, str]:
    """The environment of a benchmark's child process: offline, this checkout first on the path, no inherited
    rank, and the thread count where given."""
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO / "src"), str(HERE), env.get("PYTHONPATH")) if p)
    for name in ("WORLD_SIZE", "RANK", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(name, None)
    if threads:
        env["OMP_NUM_THREADS"] = str(threads)
    return {**env, **extra}


def run_command(cmd: Sequence[str], env: dict[str, str] | None = None, timeout: float = 3600) -> dict:
    """A command in a child process: its exit code, wall and CPU seconds, output and peak resident MiB (the
    child's own and its waited children's, from `wait4`)."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        child = subprocess.Popen(list(cmd), stdout=out, stderr=err, env=env or child_env(), text=True)
        timer = threading.Timer(timeout, child.kill)  # past `timeout` seconds: killed, its exit code says so
        timer.start()
        try:
            _, status, usage = os.wait4(child.pid, 0)
        except BaseException:
            child.kill()
            raise
        finally:
            timer.cancel()
        child.returncode = os.waitstatus_to_exitcode(status)
        seconds = time.perf_counter() - start
        out.seek(0), err.seek(0)
        output, errors = out.read(), err.read()
    cpu = usage.ru_utime + usage.ru_stime
    return {
        "rc": child.returncode,
        "seconds": seconds,
        "cpu_seconds": cpu,
        "stdout": output,
        "stderr": errors,
        "rss_mib": usage.ru_maxrss / 1024,
    }


def apart(task: dict, threads: int = 2, **env: str) -> dict:
    """A task (`_task`) in a fresh Python process; its JSON result, or its traceback as the error."""
    print(f"  {task['kind']}: {task.get('name') or ', '.join(task.get('names', []))} ...", file=sys.stderr, flush=True)
    done = run_command(
        [sys.executable, str(HERE / "harness.py"), "--task", json.dumps(task)], child_env(threads, **env)
    )
    if done["rc"] != 0:
        raise SystemExit(f"the {task['kind']} task failed (exit {done['rc']}):\n{done['stderr'][-3000:]}")
    return json.loads(done["stdout"].strip().splitlines()[-1])


def module_name(file: str) -> str:
    """The importable name of a benchmarks module from its file (`studies/x.py`: "studies.x"), for `apart`'s tasks."""
    return ".".join(Path(file).resolve().relative_to(HERE).with_suffix("").parts)


def timed_apart(module: str, names: Sequence[str], params: dict, rounds: int, alternate: bool = False) -> dict:
    """`interleave` of `module`'s configurations in one fresh process (with a large oneDNN kernel cache)."""
    task = {"kind": "time", "module": module, "names": list(names), "params": params, "rounds": rounds}
    cache = os.environ.get("ONEDNN_PRIMITIVE_CACHE_CAPACITY", str(PRIMITIVE_CACHE))
    return apart({**task, "alternate": alternate}, params.get("threads", 2), ONEDNN_PRIMITIVE_CACHE_CAPACITY=cache)


def memory_apart(module: str, name: str, params: dict) -> dict:
    """A configuration alone in a fresh process, built, then run twice: the growth of peak resident memory
    over the loaded model in the first run, and its seconds; the peak of live tensors in the second."""
    return apart({"kind": "memory", "module": module, "name": name, "params": params}, params.get("threads", 2))


def _task(task: dict) -> dict:
    import torch

    warnings.filterwarnings("ignore")
    torch.set_num_threads(task["params"].get("threads", 2))
    module = importlib.import_module(task["module"])
    if task["kind"] == "time":
        runners = {name: module.configure(name, task["params"]) for name in task["names"]}
        return interleave(runners, task["rounds"], task.get("alternate", False))
    run = module.configure(task["name"], task["params"])
    base, start = reset_peak(), time.perf_counter()
    result = run() or {}
    seconds, rss = time.perf_counter() - start, max(0, rss_kib("VmHWM") - base) / 1024
    _, tensors = tensor_peak(run, task["params"].get("device", "cpu"))
    return {**result, "seconds": seconds, "rss_mib": rss, "tensor_mib": tensors}


# ----------------------------------------------------------------------------------------------- environment
def _git(*args: str) -> str | None:
    try:
        done = subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def environment(device: str = "cpu", threads: int | None = None) -> dict:
    """What a figure hangs on: the date, the commit (with "+changes" where the tree differs from it), the machine,
    its cores and load, the versions, and the GPU with its clocks where one is used."""
    from importlib.metadata import PackageNotFoundError, version

    import torch

    cpu = "unknown"
    with contextlib.suppress(OSError, StopIteration):
        info = Path("/proc/cpuinfo").read_text().splitlines()
        cpu = next(line.split(":", 1)[1].strip() for line in info if line.startswith("model name"))
    commit = _git("rev-parse", "--short", "HEAD")
    if commit and _git("status", "--porcelain", "--untracked-files=no"):
        commit += "+changes"
    env: dict[str, Any] = {
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": commit,
        "machine": f"{platform.machine()}, {cpu}",
        "cores": os.cpu_count(),
        "usable_cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "torch_threads": threads or torch.get_num_threads(),
        "load_start": round(os.getloadavg()[0], 1),
        "python": platform.python_version(),
    }
    for name in ("torch", "transformers", "torchmetrics", "bert-score", "tokenizers", "lightning"):
        try:
            env[name] = version(name)
        except PackageNotFoundError:
            env[name] = None
    env["device"] = device
    if str(device).startswith("cuda"):
        props = torch.cuda.get_device_properties(device)
        env.update(gpu=props.name, gpu_memory_gib=round(props.total_memory / 2**30, 1), cuda=torch.version.cuda)
        query = "clocks.sm,clocks.max.sm,clocks.mem,clocks.max.mem,power.limit,driver_version"
        with contextlib.suppress(OSError):
            done = subprocess.run(
                ["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader"], capture_output=True, text=True
            )
            env["clocks (sm, max sm, mem, max mem, power limit, driver)"] = done.stdout.strip()
        env["float32_matmul_precision"] = torch.get_float32_matmul_precision()
    return env


# ----------------------------------------------------------------------------------------------- the entry
def main(
    doc: str,
    arguments: Sequence[tuple[tuple[str, ...], dict]],
    run: Callable[[Any], dict],
    argv: list[str] | None = None,
    command: list[str] | None = None,
) -> int:
    """A suite's or study's command line: its own arguments beside --threads and --out; `run(args)`
    returns {"suite", "rows", "checks", "notes"}; this adds the command and the environment, writes the JSON into
    `--out`/results/ and renders `--out`/RESULTS.md (`render.publish`)."""
    import render

    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
    parser.add_argument(
        "--out", type=Path, default=HERE, help="folder of RESULTS.md and results/ (default benchmarks/)"
    )
    for flags, options in arguments:
        parser.add_argument(*flags, **options)
    args = parser.parse_args(argv)
    import torch

    warnings.filterwarnings("ignore")
    torch.set_num_threads(args.threads)
    env = environment(getattr(args, "device", "cpu"), args.threads)
    results = run(args)
    env["load_end"] = round(os.getloadavg()[0], 1)
    script = Path(sys.argv[0]).resolve()
    where = script.relative_to(REPO) if script.is_relative_to(REPO) else script.name
    shown = " ".join(["python", str(where), *(command or (sys.argv[1:] if argv is None else argv))])
    print(render.publish({"command": shown, "environment": env, **results}, args.out))
    return 0


if __name__ == "__main__" and sys.argv[1:2] == ["--task"]:
    print(json.dumps(_task(json.loads(sys.argv[2])), default=str))
