"""The one renderer: the JSON rows of each suite's or study's last run (`results/*.json`) to their sections of
RESULTS.md, between its `<!-- rendered: begin -->` and `<!-- rendered: end -->` lines (the record below them is
left as it is), and the device suite's results to its own page. Each section names its machine, commit and command.

    python benchmarks/render.py                 # RESULTS.md again from benchmarks/results/*.json
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
BEGIN, END = "<!-- rendered: begin -->", "<!-- rendered: end -->"
#: sections in this order, then the studies' by name
ORDER = ("throughput", "references", "scale")
NOTHING = "No suite has run on the harness yet: every figure so far is in the record below."


def fmt(value: Any) -> str:
    """A cell: '-' for nothing, 4 significant digits for a float, thousands for a large int, a list joined."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "NO"
    if isinstance(value, float):
        return f"{value:,.0f}" if abs(value) >= 1e4 else f"{value:.4g}"
    if isinstance(value, int):
        return f"{value:,}" if abs(value) >= 1e4 else str(value)
    if isinstance(value, list | tuple):
        return ", ".join(fmt(v) for v in value)
    if isinstance(value, dict):
        return "; ".join(f"{k} {fmt(v)}" for k, v in value.items())
    return str(value).replace("|", "\\|")


def _per_s(row: dict) -> float | None:
    return row["items"] / row["median_s"] if row.get("items") and row.get("median_s") else None


def _varying(rows: Sequence[dict]) -> set[str]:
    """The params that differ between rows (the others are said once above the table)."""
    keys = {k for r in rows for k in r.get("params", {})}
    return {k for k in keys if len({json.dumps(r.get("params", {}).get(k)) for r in rows}) > 1}


COLUMNS: tuple[tuple[str, Callable[[dict, set[str]], Any]], ...] = (
    ("configuration", lambda r, v: r["name"]),
    ("params", lambda r, v: {k: r["params"][k] for k in sorted(v) if k in r.get("params", {})} or None),
    ("items", lambda r, v: r.get("items")),
    ("median s", lambda r, v: r.get("median_s")),
    ("items/s", lambda r, v: _per_s(r)),
    ("time ratio (to)", lambda r, v: None if r.get("ratio") is None else f"{r['ratio']:.3f}x ({r.get('base')})"),
    ("rounds", lambda r, v: r.get("ratio_rounds") if len(r.get("seconds", [])) > 1 else None),
    ("CPU ratio", lambda r, v: None if r.get("cpu_ratio") is None else f"{r['cpu_ratio']:.3f}x"),
    ("peak tensors MiB", lambda r, v: r.get("memory", {}).get("tensor_mib")),
    ("peak RSS MiB", lambda r, v: r.get("memory", {}).get("rss_mib")),
    ("checksum", lambda r, v: r.get("checksum")),
    ("figures", lambda r, v: r.get("figures") or None),
)


def table(rows: Sequence[dict]) -> list[str]:
    """A markdown table of rows, without the columns no row has a value in."""
    varying = _varying(rows)
    cells = [[fmt(get(r, varying)) for _, get in COLUMNS] for r in rows]
    keep = [i for i in range(len(COLUMNS)) if i == 0 or any(c[i] != "-" for c in cells)]
    align = ["---" if COLUMNS[i][0] in ("configuration", "params", "rounds", "figures") else "---:" for i in keep]
    return [
        "| " + " | ".join(COLUMNS[i][0] for i in keep) + " |",
        "| " + " | ".join(align) + " |",
        *("| " + " | ".join(c[i] for i in keep) + " |" for c in cells),
    ]


def checks(items: Sequence[dict]) -> list[str]:
    met = {True: "met", False: "NOT met", None: "not measured"}
    lines = ["| target | measured | bound | |", "| --- | ---: | ---: | --- |"]
    return lines + [f"| {c['what']} | {fmt(c['value'])} | {fmt(c['bound'])} | {met[c['met']]} |" for c in items]


def head(env: dict, command: str) -> str:
    """Where and how a run measured: date, commit, command, machine, load and versions."""
    versions = ", ".join(
        f"{k} {env[k]}" for k in ("python", "torch", "transformers", "torchmetrics", "bert-score") if env.get(k)
    )
    gpu = f"; {env['gpu']} ({env.get('gpu_memory_gib')} GiB, CUDA {env.get('cuda')})" if env.get("gpu") else ""
    return (
        f"Measured {env.get('date')} at commit {env.get('commit') or 'unknown'} by `{command}`: {env.get('machine')}, "
        f"{env.get('cores')} cores ({env.get('usable_cores')} usable), torch threads {env.get('torch_threads')}{gpu}; "
        f"load average {env.get('load_start')} at the start, {env.get('load_end')} at the end; {versions}."
    )


def section(results: dict) -> str:
    """One run's section: its head, notes, a table per part and its targets."""
    key = results.get("key", results["suite"])
    lines = [f"<!-- rendered: {key} -->", f"## {results.get('title', key)}", ""]
    lines += [head(results.get("environment", {}), results.get("command", "?")), ""]
    lines += [f"- {note}" for note in results.get("notes", [])]
    lines += [""] if results.get("notes") else []
    rows = results.get("rows", [])
    parts = list(dict.fromkeys(r["part"] for r in rows))
    for part in parts:
        chosen = [r for r in rows if r["part"] == part]
        if len(parts) > 1:
            lines += [f"### {part}", ""]
        common = {k: v for k, v in chosen[0].get("params", {}).items() if k not in _varying(chosen)}
        lines += [f"Params: {fmt(common)}.", ""] if common else []
        lines += [*table(chosen), ""]
    if results.get("checks"):
        lines += [*checks(results["checks"]), ""]
    return "\n".join([*lines, f"<!-- rendered: {key} end -->"])


def _sort_key(results: dict) -> tuple[int, str]:
    suite = results["suite"]
    return (ORDER.index(suite) if suite in ORDER else len(ORDER), results.get("key", suite))


def render(out: Path = HERE) -> None:
    """RESULTS.md's rendered block again, from every results/*.json in `out`."""
    runs = [json.loads(p.read_text(encoding="utf-8")) for p in sorted((out / "results").glob("*.json"))]
    body = "\n\n".join(section(r) for r in sorted(runs, key=_sort_key)) or NOTHING
    path = out / "RESULTS.md"
    old = path.read_text(encoding="utf-8") if path.exists() else f"# Benchmark results\n\n{BEGIN}\n{END}\n"
    if BEGIN not in old or END not in old:
        old = old.rstrip("\n") + f"\n\n{BEGIN}\n{END}\n"
    start, stop = old.index(BEGIN) + len(BEGIN), old.index(END)
    path.write_text(old[:start] + "\n" + body + "\n" + old[stop:], encoding="utf-8")


def publish(results: dict, out: Path = HERE) -> str:
    """Write a run's JSON into `out`/results/ and render `out`/RESULTS.md; the run's section."""
    key = results.get("key", results["suite"])
    (out / "results").mkdir(parents=True, exist_ok=True)
    (out / "results" / f"{key}.json").write_text(json.dumps(results, indent=1, default=str) + "\n", encoding="utf-8")
    render(out)
    return section(results)


# ----------------------------------------------------------------------------------------- the device suite
def _gpu_rows(results: dict) -> list[tuple[str, dict]]:
    """(what, figures) for each throughput row of the device suite's page."""
    rows = [(f"bare pass, {k}", v) for k, v in results.get("bare", {}).items() if isinstance(v, dict)]
    for step, what in (
        ("metric_float32", "metric (update + compute), float32"),
        ("metric_bfloat16_25k", "metric (update + compute), bfloat16"),
        ("metric_bfloat16_100k", "metric (update + compute), bfloat16"),
        ("tokenize_workers", "metric, bfloat16, batches tokenised by two DataLoader workers"),
        ("bert_score", "bert-score 0.3.13 `BERTScorer`, float32"),
        ("lightning", "Lightning validation epoch (`val_metric`), float32"),
    ):
        if "pairs_per_s" in results.get(step, {}):
            rows.append((what, results[step]))
    for step in ("pack_budgets", "gather_budgets"):
        for what, v in results.get(step, {}).items():
            if isinstance(v, dict) and "pairs_per_s" in v:
                rows.append((f"{'bare pass, ' if what.startswith('packed') else ''}{what}", v))
    for dtype, v in results.get("metric_one_length", {}).items():
        if isinstance(v, dict) and "pairs_per_s" in v:
            rows.append((f"metric, {dtype}, batches of one length (before accelerator batching)", v))
    return rows


def diagnosis(results: dict) -> list[str]:
    """The "## Diagnosis" section (the diagnosis steps that ran): the host's waits for the device and their sites,
    the profile's busy share, runtime calls and costliest host ops, and what tokenising costs."""
    syncs, prof, tok = (results.get(k, {}) for k in ("syncs", "profile", "tokenise"))
    lines: list[str] = []
    if "syncs" in syncs:
        note = f"; {syncs['note']}" if "note" in syncs else ""
        lines += [
            f"Host waits for the device (sync debug mode) over {syncs.get('pairs')} pairs "
            f"({syncs.get('forward_passes')} forward passes): {syncs['syncs']} "
            f"(by phase {syncs.get('by_phase')}){note}.",
            "",
        ]
        if syncs.get("sites"):
            lines += ["| our line | innermost line | waits |", "| --- | --- | ---: |"]
            lines += [f"| `{s['ours']}` | `{s['innermost']}` | {s['count']} |" for s in syncs["sites"]] + [""]
    if "wall_seconds" in prof:
        busy, calls = prof.get("busy_share"), {**prof.get("runtime_calls", {}), **prof.get("other_runtime_calls", {})}
        calls.update(prof.get("device_copies", {}))
        ops = ", ".join(f"{o['name']} {o['self_cpu_ms']} ms/{o['calls']}" for o in prof.get("top_cpu_ops", []))
        lines += [
            f"Profile of update() + compute() over {prof.get('pairs')} pairs: {prof['wall_seconds']} s under the "
            f"profiler (update {prof.get('update_seconds')} s), device busy "
            + ("- (no CUDA)" if busy is None else f"{busy:.1%} of it ({prof.get('device_seconds')} s of kernels)")
            + "; runtime calls and device copies: "
            + (", ".join(f"{name} {n}" for name, n in calls.items()) or "-")
            + f"; tables in `{prof.get('table_file')}`.",
            "",
            f"Costliest host ops (self CPU ms/calls): {ops}.",
            "",
        ]
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
        for key, v in tok.items():
            if isinstance(v, dict) and "texts_per_s" in v:
                done = v["done"] * (2 if key in ("encode_pairs", "update") else 1)
                lines.append(f"| {key} | {done} | {v['seconds']} | {v['texts_per_s']} | {v.get('cores_used')} |")
        lines.append("")
    while lines and not lines[-1]:
        lines.pop()
    return ["", "## Diagnosis", "", *lines] if lines else []


def _cell(value: Any) -> str:
    return "-" if value is None else f"{value:.1%}" if isinstance(value, float) and value < 1 else str(value)


def gpu_page(results: dict, env: dict, command: str, targets: Sequence[tuple[str, str, bool | None]], dry: bool) -> str:
    """The device suite's page: the environment, a row per throughput figure, the targets, the diagnosis and every
    step's figures as JSON."""
    lines = [
        "# The device suite",
        "",
        f"Measured {env.get('date')} at commit {env.get('commit') or 'unknown'} by `{command}`"
        + (" (a dry run: tiny sizes, not figures)" if dry else "")
        + ".",
        "",
        *(f"- {key}: {value}" for key, value in env.items() if key not in ("date", "commit")),
        "- share of peak: tokens/s x 2 x layers x 12 x hidden^2 (the linear layers) over the card's dense "
        "peak (`gpu_suite.PEAKS`); pairs/s counts the pairs whose distinct texts ran",
        "",
        "| what | pairs | seconds | pairs/s | share of peak | peak MiB |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for what, v in _gpu_rows(results):
        seconds = v.get("seconds") or round(v.get("update_seconds", 0) + v.get("compute_seconds", 0), 3)
        lines.append(
            f"| {what} | {v.get('pairs', v.get('texts'))} | {seconds} | {v['pairs_per_s']} "
            f"| {_cell(v.get('share_of_peak'))} | {_cell(v.get('peak_mib'))} |"
        )
    lines += ["", "## Targets", "", "| target | measured | met? |", "| --- | --- | --- |"]
    lines += [
        f"| {name} | {got} | {'-' if met is None else 'yes' if met else 'NOT met'} |" for name, got, met in targets
    ]
    lines += diagnosis(results)
    shown = {k: {kk: vv for kk, vv in v.items() if kk != "f1"} for k, v in results.items()}
    return "\n".join([*lines, "", "## Every step", "", "```json", json.dumps(shown, indent=1, default=str), "```", ""])


if __name__ == "__main__":
    render(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE)
