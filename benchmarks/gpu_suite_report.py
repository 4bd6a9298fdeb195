"""The device suite's report: the card's peaks, the environment the figures hang on, the issue's targets and
`RESULTS-gpu.md` itself (`gpu_suite.py` runs the steps)."""

from __future__ import annotations

import json
import time
from typing import Any

#: Dense (no sparsity) tensor-core bfloat16 and plain float32 TFLOP/s from NVIDIA's H100 and H200 datasheets,
#: matched against torch's device name (first match wins: the longer names first).
PEAKS: dict[str, dict[str, float]] = {
    "H100 NVL": {"bfloat16": 835.0, "float32": 60.0},
    "H100 PCIe": {"bfloat16": 756.0, "float32": 51.0},
    "H100": {"bfloat16": 989.0, "float32": 67.0},  # SXM5 ("NVIDIA H100 80GB HBM3")
    "H200 NVL": {"bfloat16": 835.0, "float32": 60.0},
    "H200": {"bfloat16": 989.0, "float32": 67.0},  # SXM5
}


def peaks_of(name: str | None) -> dict[str, float] | None:
    """The card's dense peaks (`PEAKS`), by its name; None for a CPU or a card not in the table."""
    return next((peak for key, peak in PEAKS.items() if name and key in name), None)


def environment(suite: Any, description: str) -> dict:
    """The device, its clocks (nvidia-smi, where there is one), versions and settings that the figures hang on."""
    import os
    import platform
    import shutil
    import subprocess
    from importlib.metadata import PackageNotFoundError, version

    import torch

    env: dict = {"device": suite.device, "model": description, "python": platform.python_version()}
    for name in ("torch", "transformers", "torchmetrics", "bert-score", "lightning", "pytorch-lightning"):
        try:
            env[name] = version(name)
        except PackageNotFoundError:
            env[name] = None
    if suite.device.startswith("cuda"):
        props = torch.cuda.get_device_properties(suite.device)
        env.update(gpu=props.name, gpu_memory_gib=round(props.total_memory / 2**30, 1), cuda=torch.version.cuda)
        if shutil.which("nvidia-smi"):
            query = "clocks.sm,clocks.max.sm,clocks.mem,clocks.max.mem,power.limit,driver_version"
            done = subprocess.run(
                ["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader"], capture_output=True, text=True
            )
            env["clocks (sm, max sm, mem, max mem, power limit, driver)"] = done.stdout.strip()
    env.update(
        cpu_count=os.cpu_count(),
        torch_threads=torch.get_num_threads(),
        float32_matmul_precision=torch.get_float32_matmul_precision(),
        peaks_tflops=suite.peaks,
        flops_per_token=suite.flops_per_token,
    )
    return env


def _rows(results: dict) -> list[tuple[str, dict, str]]:
    """(what, figures, dtype) for each throughput row of the report."""
    rows = [
        (f"bare pass, {kind}", figures, kind.split()[-1])
        for kind, figures in results.get("bare", {}).items()
        if isinstance(figures, dict)
    ]
    for step, what, dtype in (
        ("metric_float32", "metric (update + compute), float32", "float32"),
        ("metric_bfloat16_25k", "metric (update + compute), bfloat16", "bfloat16"),
        ("metric_bfloat16_100k", "metric (update + compute), bfloat16", "bfloat16"),
        ("tokenise_ahead", "metric, bfloat16, update() tokenising in the caller's thread", "bfloat16"),
        ("score_chunks", "metric, bfloat16, compute() scoring once every pair is tokenised", "bfloat16"),
        ("bert_score", "bert-score 0.3.13 `BERTScorer`, float32", "float32"),
        ("lightning", "Lightning validation epoch (`val_metric`), float32", "float32"),
    ):
        if "pairs_per_s" in results.get(step, {}):
            rows.append((what, results[step], dtype))
    for what, figures in results.get("pack_budgets", {}).items():
        if isinstance(figures, dict) and "pairs_per_s" in figures:
            rows.append((f"{'bare pass, ' if what.startswith('packed') else ''}{what}", figures, "bfloat16"))
    for what, figures in results.get("gather_budgets", {}).items():
        if isinstance(figures, dict) and "pairs_per_s" in figures:
            rows.append((what, figures, "bfloat16"))
    for dtype, figures in results.get("metric_one_length", {}).items():
        if isinstance(figures, dict) and "pairs_per_s" in figures:
            rows.append((f"metric, {dtype}, batches of one length (before accelerator batching)", figures, dtype))
    return rows


def targets(results: dict) -> list[tuple[str, str, bool | None]]:
    """The issue's targets: (target, measured, met)."""
    passes = [(k, v) for k, v in results.get("bare", {}).items() if isinstance(v, dict)]
    passes += [(k, v) for k, v in results.get("pack_budgets", {}).items() if k.startswith("packed")]
    best = {
        d: max((v["pairs_per_s"] for k, v in passes if d in k and "pairs_per_s" in v), default=0)
        for d in ("float32", "bfloat16")
    }
    bf16, fp32 = results.get("metric_bfloat16_100k", {}), results.get("metric_float32", {})
    oracle = results.get("oracle", {})
    diff = next((v for k, v in oracle.items() if k.startswith("max_prf_diff") and "cpu" not in k), None)
    out: list[tuple[str, str, bool | None]] = []
    for name, got, want in (
        ("bfloat16 metric at 100,000 pairs >= 10,000 pairs/s", bf16.get("pairs_per_s"), 10_000),
        ("float32 metric >= 2,000 pairs/s", fp32.get("pairs_per_s"), 2_000),
    ):
        out.append((name, str(got), None if got is None else got >= want))
    for dtype, run in (("bfloat16", bf16), ("float32", fp32)):
        ratio = run["pairs_per_s"] / best[dtype] if run.get("pairs_per_s") and best[dtype] else None
        shown = "-" if ratio is None else f"{ratio:.3f}x"
        out.append((f"{dtype} metric >= 0.9x the fastest bare {dtype} pass", shown, ratio and ratio >= 0.9))
    out.append(
        (
            "float32 scores on the device within 1e-6 of the float64 oracle",
            str(diff),
            None if diff is None else diff <= 1e-6,
        )
    )
    ratio = bf16.get("peak_ratio_to_25k")
    out.append(
        ("peak memory at 100,000 pairs <= 1.05x that at 25,000", str(ratio), None if ratio is None else ratio <= 1.05)
    )
    return out


def diagnosis(results: dict) -> list[str]:
    """The "## Diagnosis" section's lines (`gpu_suite_diagnosis.py`'s steps, those that ran): the waits for
    the device and their top sites, the profile's busy share, runtime calls and costliest host ops, and what
    tokenising costs. Empty where none of the steps ran."""
    syncs, prof, tok = (results.get(k, {}) for k in ("syncs", "profile", "tokenise"))
    lines: list[str] = []
    if "syncs" in syncs:
        lines += [
            f"Host waits for the device (sync debug mode) over {syncs.get('pairs')} pairs "
            f"({syncs.get('forward_passes')} forward passes): {syncs['syncs']} "
            f"(by phase {syncs.get('by_phase')}){'; ' + syncs['note'] if 'note' in syncs else ''}.",
            "",
        ]
        if syncs.get("sites"):
            lines += ["| our line | innermost line | waits |", "| --- | --- | ---: |"]
            lines += [f"| `{s['ours']}` | `{s['innermost']}` | {s['count']} |" for s in syncs["sites"]]
            lines.append("")
    if "wall_seconds" in prof:
        busy, device = prof.get("busy_share"), prof.get("device_seconds")
        calls = {**prof.get("runtime_calls", {}), **prof.get("other_runtime_calls", {})}
        calls.update(prof.get("device_copies", {}))
        lines.append(
            f"Profile of update() + compute() over {prof.get('pairs')} pairs: {prof['wall_seconds']} s under the "
            f"profiler (update {prof.get('update_seconds')} s), device busy "
            + ("- (no CUDA)" if busy is None else f"{busy:.1%} of it ({device} s of kernels)")
            + "; runtime calls and device copies: "
            + (", ".join(f"{name} {n}" for name, n in calls.items()) or "-")
            + f"; tables in `{prof.get('table_file')}`."
        )
        ops = ", ".join(f"{o['name']} {o['self_cpu_ms']} ms/{o['calls']}" for o in prof.get("top_cpu_ops", []))
        lines += ["", f"Costliest host ops (self CPU ms/calls): {ops}.", ""]
    if "update" in tok:
        cores = f"{tok.get('cpu_count')} cores, {tok.get('affinity')} usable, torch threads {tok.get('torch_threads')}"
        lines += [
            f"Tokenising {tok.get('texts')} texts ({cores}; tokenizers {tok.get('tokenizers')}, "
            f"TOKENIZERS_PARALLELISM={tok.get('TOKENIZERS_PARALLELISM')}, "
            f"RAYON_NUM_THREADS={tok.get('RAYON_NUM_THREADS')}):",
            "",
            "| what | texts | seconds | texts/s | cores used |",
            "| --- | ---: | ---: | ---: | ---: |",
        ]
        for key, figures in tok.items():
            if isinstance(figures, dict) and "texts_per_s" in figures:
                done = figures["done"] * (2 if key in ("encode_pairs", "update") else 1)
                lines.append(
                    f"| {key} | {done} | {figures['seconds']} | {figures['texts_per_s']} "
                    f"| {figures.get('cores_used')} |"
                )
        lines.append("")
    while lines and not lines[-1]:
        lines.pop()
    return ["", "## Diagnosis", "", *lines] if lines else []


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    return f"{value:.1%}" if isinstance(value, float) and value < 1 else str(value)


def report(suite: Any, env: dict, command: str) -> str:
    lines = [
        "# The device suite (issue 37)",
        "",
        f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} by `{command}`"
        + (" (a dry run: tiny sizes, not figures)" if suite.dry else "")
        + ".",
        "",
    ]
    lines += [f"- {key}: {value}" for key, value in env.items()]
    lines += [
        "- share of peak: tokens/s x 2 x layers x 12 x hidden^2 (the linear layers) over the card's dense "
        "peak (`PEAKS`); pairs/s counts the pairs whose distinct texts ran",
        "",
        "| what | pairs | seconds | pairs/s | share of peak | peak MiB |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for what, figures, _ in _rows(suite.results):
        seconds = figures.get("seconds") or round(
            figures.get("update_seconds", 0) + figures.get("compute_seconds", 0), 3
        )
        lines.append(
            f"| {what} | {figures.get('pairs', figures.get('texts'))} | {seconds} | {figures['pairs_per_s']} "
            f"| {_cell(figures.get('share_of_peak'))} | {_cell(figures.get('peak_mib'))} |"
        )
    lines += ["", "## Targets", "", "| target | measured | met? |", "| --- | --- | --- |"]
    lines += [
        f"| {name} | {got} | {'-' if met is None else 'yes' if met else 'NOT met'} |"
        for name, got, met in targets(suite.results)
    ]
    lines += diagnosis(suite.results)
    shown = {k: {kk: vv for kk, vv in v.items() if kk != "f1"} for k, v in suite.results.items()}
    lines += ["", "## Every step", "", "```json", json.dumps(shown, indent=1, default=str), "```", ""]
    return "\n".join(lines)
