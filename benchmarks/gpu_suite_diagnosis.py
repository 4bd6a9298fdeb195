"""The device suite's diagnosis steps: why the bfloat16 metric is slower than its bare forward pass (where the
time beyond the bare packed pass of the same texts goes, in one run).

- `syncs`: every place update() and compute() make the host wait for the device (torch's sync debug mode),
  by the line of the package that asked and the innermost line that waited: a wait stops the host running
  ahead, so its work and the device's add up instead of overlapping.
- `profile`: torch's profiler around update() + compute(): how busy the device is while the metric runs, how
  often the host called the runtime's waits, copies and launches, and which ops cost the host most.
- `tokenise`: what update() spends tokenising: the metric's own Rust tokenizer in chunks of several sizes,
  its process CPU time against the wall (how many cores it really uses), and update() itself.

Each takes `gpu_suite.Suite` (its device, model, layer and helpers); `gpu_suite.run_steps` runs them.
"""

from __future__ import annotations

import os
import re
import time
import traceback
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

import knobs
from harness import UPDATE, feed

#: What torch's sync debug mode says of each synchronising CUDA call (c10's `warn_or_error_on_sync`).
SYNC_MESSAGE = "called a synchronizing CUDA operation"
#: Files of the warnings machinery: frames of theirs between a warning and its hook are not the caller's.
_WARNING_FILES = {"warnings.py", "_py_warnings.py"}
#: CUDA runtime calls whose count the profile reports (0 where the profile has none).
RUNTIME_CALLS = (
    "cudaStreamSynchronize",
    "cudaDeviceSynchronize",
    "cudaEventSynchronize",
    "cudaMemcpyAsync",
    "cudaMemcpy",
    "cudaHostAlloc",
    "cudaLaunchKernel",
)


# ----------------------------------------------------------------------------------------------- syncs
def _where(frame: traceback.FrameSummary, marker: str | None = None) -> str:
    """ "path:line function" of a frame: the path after `marker` where given (a package's own files read
    short), else its last two parts (enough to tell torch's files from transformers')."""
    if marker is not None and marker in frame.filename:
        path = frame.filename.split(marker)[-1].lstrip("/\\")
    else:
        path = "/".join(Path(frame.filename).parts[-2:])
    return f"{path}:{frame.lineno} {frame.name}"


def sync_site(frames: list[traceback.FrameSummary], marker: str = "bertscore_tm") -> tuple[str, str]:
    """(the innermost frame in a file whose path holds `marker`, the innermost frame of all) of a stack,
    outermost first: the line of ours that asked for the wait, and the line that waited (often torch's or
    transformers'). "-" for the first where no frame is ours."""
    if not frames:
        return "-", "-"
    ours = next((f for f in reversed(frames) if marker in f.filename), None)
    return ("-" if ours is None else _where(ours, marker)), _where(frames[-1])


class SyncRecorder:
    """Counts the sync debug mode's warnings by site (`sync_site`) while it is entered, and by phase (whatever
    `phase` is set to when each comes). Inside, every warning is shown ("always": the same line warning again
    is another wait) and none is printed; warnings of other kinds are only counted. Leaving restores the
    warning filters and hook as they were. `marker` names our files in a path (a test passes its own)."""

    def __init__(self, marker: str = "bertscore_tm", message: str = SYNC_MESSAGE) -> None:
        self.marker, self.message = marker, message
        self.sites: Counter[tuple[str, str]] = Counter()
        self.phases: Counter[str] = Counter()
        self.phase = "-"
        self.other_warnings: Counter[str] = Counter()
        self._catch: Any = None

    def __enter__(self) -> SyncRecorder:
        self._catch = warnings.catch_warnings()
        self._catch.__enter__()
        warnings.simplefilter("always")
        warnings.showwarning = self._show
        return self

    def __exit__(self, *exc: object) -> None:
        self._catch.__exit__(*exc)

    def _show(
        self, message: Any, category: Any, filename: str, lineno: int, file: Any = None, line: Any = None
    ) -> None:
        if self.message not in str(message):
            self.other_warnings[f"{getattr(category, '__name__', category)}: {str(message)[:120]}"] += 1
            return
        frames = traceback.extract_stack()[:-1]  # without this hook's own frame
        while frames and Path(frames[-1].filename).name in _WARNING_FILES:
            frames.pop()
        self.sites[sync_site(frames, self.marker)] += 1
        self.phases[self.phase] += 1

    def summary(self, top: int = 15) -> dict:
        """The total, the count by phase and the `top` sites by count (ours, innermost)."""
        return {
            "syncs": sum(self.sites.values()),
            "by_phase": dict(self.phases),
            "sites": [{"ours": o, "innermost": i, "count": n} for (o, i), n in self.sites.most_common(top)],
            "distinct_sites": len(self.sites),
            "other_warnings": dict(self.other_warnings.most_common(5)),
        }


def _bf16_metric(suite: Any, cands: list[str], refs: list[str]) -> Any:
    """The bfloat16 metric on the suite's device, warmed up by one update() + compute() of a slice (CUDA's
    handles and kernels, the first allocations: none of it the steady state), then reset."""
    import torch

    from bertscore_tm import BERTScore

    metric = BERTScore(suite.path, num_layers=suite.layers, model_dtype=torch.bfloat16, device=suite.device)
    metric.update(cands[:UPDATE], refs[:UPDATE])
    metric.compute()
    metric.reset()
    suite.sync()
    return metric


class PassCounter:
    """Counts the forward passes (packs, or batches of one length) of a metric's model while entered, by a
    pre-hook on its encoder's blocks (the packed pass calls them without the model's own forward), and the
    texts embedded (`knobs.rows_embedded`); the hook is removed on leaving. Counts nothing where the model
    is the user's or has no `encoder`."""

    def __init__(self, metric: Any) -> None:
        self.metric = metric
        self.passes = 0
        self.texts = 0
        self._hook: Any = None

    def __enter__(self) -> PassCounter:
        import torch

        blocks = knobs.encoder_blocks(self.metric)
        if isinstance(blocks, torch.nn.Module):
            self._hook = blocks.register_forward_pre_hook(self._count)
        self._rows = knobs.rows_embedded(self.metric)
        return self

    def _count(self, *_: object) -> None:
        self.passes += 1

    def __exit__(self, *exc: object) -> None:
        if self._hook is not None:
            self._hook.remove()
        self.texts = knobs.rows_embedded(self.metric) - self._rows

    def figures(self) -> dict:
        return {"forward_passes": self.passes if self._hook is not None else None, "texts_embedded": self.texts}


def step_syncs(suite: Any) -> dict:
    """Where update() and compute() of the bfloat16 metric (2,000 pairs) make the host wait for the device:
    torch's sync debug mode warns at each synchronising CUDA call, and each warning's stack names the line.
    The mode is CUDA's alone (torch without CUDA refuses it): on a CPU the same code runs and counts none.
    The mode is always set back, whatever fails."""
    import torch

    cands, refs = suite.pairs(2_000 if not suite.dry else 8)
    metric = _bf16_metric(suite, cands, refs)
    cuda = suite.device.startswith("cuda") and hasattr(torch.cuda, "set_sync_debug_mode")
    start = time.perf_counter()
    with SyncRecorder() as recorder, PassCounter(metric) as passes:
        try:
            if cuda:
                torch.cuda.set_sync_debug_mode("warn")
            recorder.phase = "update"
            done = feed(metric, cands, refs, start + suite.cap("syncs") / 2)
            updated = time.perf_counter()
            recorder.phase = "compute"
            metric.compute()
        finally:
            if cuda:
                torch.cuda.set_sync_debug_mode("default")  # never left on
    suite.sync()
    out: dict = {"pairs": done, "updates": -(-done // UPDATE), **recorder.summary()}
    out.update(update_seconds=round(updated - start, 3), compute_seconds=round(time.perf_counter() - updated, 3))
    out.update(packed=knobs.facts(metric)["packed"], **passes.figures())
    if not suite.device.startswith("cuda"):
        out["note"] = "sync debug mode reports CUDA only"
    elif not cuda:
        out["note"] = "this torch has no torch.cuda.set_sync_debug_mode: nothing was counted"
    return out


# ---------------------------------------------------------------------------------------------- profile
def _self_device_us(event: Any) -> float:
    """An event's self device time in microseconds (`self_device_time_total`; `self_cuda_time_total` before
    torch renamed it), 0 where it has neither."""
    for name in ("self_device_time_total", "self_cuda_time_total"):
        value = getattr(event, name, None)
        if value is not None:
            return float(value)
    return 0.0


def _on_device(event: Any) -> bool:
    """Whether an event is the device's own (a kernel, a copy), as the profiler's table sums them for its
    "Self CUDA time total": device-typed and not a user annotation (CPU ops carry their kernels' time too,
    so summing every event would count each kernel twice)."""
    kind = str(getattr(event, "device_type", ""))
    return kind.endswith(("CUDA", "PrivateUse1", "XPU", "MTIA")) and not getattr(event, "is_user_annotation", False)


def profile_figures(averages: list[Any], wall: float, cuda: bool) -> dict:
    """From a profile's `key_averages()`: device time and busy share (None without CUDA), the runtime calls'
    counts (`RUNTIME_CALLS`, and any other cuda*/cu* runtime call among the top 10 by count: launches have other
    names under some CUDA versions), the device's copies by direction ("Memcpy DtoH (Device -> Pageable)": a
    copy to pageable memory makes the host wait) and the 10 ops with the most self CPU time."""
    counts = {e.key: int(e.count) for e in averages}
    device_us = sum(_self_device_us(e) for e in averages if _on_device(e)) if cuda else None
    others = Counter({k: n for k, n in counts.items() if re.match(r"cu(da)?[A-Z]", k or "") and k not in RUNTIME_CALLS})
    top = sorted(averages, key=lambda e: float(getattr(e, "self_cpu_time_total", 0) or 0), reverse=True)[:10]
    return {
        "device_seconds": None if device_us is None else round(device_us / 1e6, 3),
        "busy_share": None if device_us is None or wall <= 0 else round(device_us / 1e6 / wall, 3),
        "runtime_calls": {name: counts.get(name, 0) for name in RUNTIME_CALLS},
        "other_runtime_calls": dict(others.most_common(10)),
        "device_copies": {k: n for k, n in counts.items() if (k or "").startswith(("Memcpy", "Memset"))},
        "top_cpu_ops": [
            {"name": e.key, "self_cpu_ms": round(float(e.self_cpu_time_total) / 1e3, 2), "calls": int(e.count)}
            for e in top
        ],
        "self_cpu_seconds": round(sum(float(getattr(e, "self_cpu_time_total", 0) or 0) for e in averages) / 1e6, 3),
    }


def _tables(averages: Any, cuda: bool, rows: int = 40) -> str:
    """The profile's tables by self device time (on CUDA) and by self CPU time; a table torch cannot make is
    replaced by its error, so the figures still come back."""
    parts = []
    for title, key in (("self device time", "self_cuda_time_total"), ("self CPU time", "self_cpu_time_total")):
        if key == "self_cuda_time_total" and not cuda:
            continue
        try:
            table = averages.table(sort_by=key, row_limit=rows)
        except Exception as err:  # an older or newer torch's sort keys: the figures matter more than the table
            table = f"(no table: {type(err).__name__}: {err})"
        parts.append(f"# sorted by {title}, {rows} rows\n\n{table}\n")
    return "\n".join(parts)


def step_profile(suite: Any) -> dict:
    """torch's profiler (CPU, and CUDA on a GPU) around update() + compute() of the bfloat16 metric on 10,000
    pairs after a warm-up: wall seconds under the profiler, the device's busy share of them, the runtime's
    waits, copies and launches, and the ops costing the host most; the full tables in `profile-bf16.txt`.
    The profiler stops with its `with` block, whatever fails inside."""
    from torch.profiler import ProfilerActivity, profile

    cands, refs = suite.pairs(10_000 if not suite.dry else 16)
    metric = _bf16_metric(suite, cands, refs)
    cuda = suite.device.startswith("cuda")
    activities = [ProfilerActivity.CPU, *([ProfilerActivity.CUDA] if cuda else [])]
    with PassCounter(metric) as passes, profile(activities=activities) as prof:
        start = time.perf_counter()
        done = feed(metric, cands, refs, start + suite.cap("profile") / 4)
        updated = time.perf_counter()
        metric.compute()
        suite.sync()
        end = time.perf_counter()
    stopped = time.perf_counter()
    averages = prof.key_averages()
    (suite.out_dir / "profile-bf16.txt").write_text(_tables(averages, cuda), encoding="utf-8")
    out: dict = {"pairs": done, "wall_seconds": round(end - start, 3), "update_seconds": round(updated - start, 3)}
    out["compute_seconds"] = round(end - updated, 3)
    out["profiler_stop_seconds"] = round(stopped - end, 3)
    out.update(profile_figures(list(averages), end - start, cuda))
    out["table_file"] = "profile-bf16.txt"
    out.update(passes.figures())
    if cuda and not out["device_seconds"]:
        out["note"] = "no device events: the profiler saw no kernels (CUPTI missing?); the busy share means nothing"
    return out


# --------------------------------------------------------------------------------------------- tokenise
def _timed(work: Any, items: list[Any], chunk: int, deadline: float, texts_each: int = 1) -> dict:
    """`work` over `items` in chunks of `chunk` until they or the time run out: items done, wall and process
    CPU seconds, texts/s (`texts_each` texts an item), and the cores used (CPU over wall: 1 where the work
    runs on one core, the cores' count where it runs on all)."""
    done, wall, cpu = 0, time.perf_counter(), time.process_time()
    while done < len(items) and time.perf_counter() < deadline:
        work(items[done : done + chunk])
        done = min(len(items), done + chunk)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {
        "chunk": chunk,
        "done": done,
        "seconds": round(wall, 3),
        "texts_per_s": round(done * texts_each / wall, 1) if wall > 0 else None,
        "cpu_seconds": round(cpu, 3),
        "cores_used": round(cpu / wall, 2) if wall > 0 else None,
    }


def _tokenise_setting() -> dict:
    """What the tokenizer's speed hangs on: the cores there are and this process may use, torch's threads,
    the variables that switch the Rust tokenizer's threads, and its version."""
    import torch

    try:
        from importlib.metadata import version

        tokenizers_version: str | None = version("tokenizers")
    except Exception:
        tokenizers_version = None
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    return {
        "cpu_count": os.cpu_count(),
        "affinity": affinity,
        "torch_threads": torch.get_num_threads(),
        "TOKENIZERS_PARALLELISM": os.environ.get("TOKENIZERS_PARALLELISM"),
        "RAYON_NUM_THREADS": os.environ.get("RAYON_NUM_THREADS"),
        "tokenizers": tokenizers_version,
    }


def step_tokenise(suite: Any) -> dict:
    """What update() spends tokenising, on the texts of 25,000 pairs: the metric's own Rust tokenizer (its
    `encode_batch_fast` where it has one, as update() calls it) in chunks of 128 texts (one
    update() of 64 pairs), 2,048 and all at once; `encode_pairs` in update()'s slices; then update() itself
    of a fresh float32 metric. Each part stops feeding past its share of the cap and says what it did."""
    from bertscore_tm import BERTScore

    cands, refs = suite.pairs(25_000 if not suite.dry else 32)
    metric = BERTScore(suite.path, num_layers=suite.layers, device=suite.device)
    texts = [t.strip() for t in cands + refs]
    out: dict = {"pairs": len(cands), "texts": len(texts), **_tokenise_setting()}
    rust, wrapper, encode_pairs = knobs.tokenizer_calls(metric)
    out["rust_call"] = None if rust is None else getattr(rust, "__name__", str(rust))
    work = wrapper if rust is None else lambda chunk: rust(chunk, add_special_tokens=True)  # the wrapper: update()'s
    work(texts[:UPDATE])  # warm up: the Rust thread pool starts on the first parallel call
    share = suite.cap("tokenise") / 5
    for label, chunk in (("128", 2 * UPDATE), ("2048", 2_048), ("all", len(texts))):
        out[f"tokenizer chunk {label}"] = _timed(work, texts, chunk, time.perf_counter() + share)
    pairs = list(zip(cands, refs, strict=True))
    sides = lambda s: ([c for c, _ in s], [r for _, r in s])  # noqa: E731
    pair_work = lambda s: encode_pairs(*sides(s))  # noqa: E731
    out["encode_pairs"] = _timed(pair_work, pairs, UPDATE, time.perf_counter() + share, texts_each=2)
    metric.update(*sides(pairs[:UPDATE]))  # warm up, then a clean state
    metric.reset()
    out["update"] = _timed(lambda s: metric.update(*sides(s)), pairs, UPDATE, time.perf_counter() + share, 2)
    suite.sync()
    return out
