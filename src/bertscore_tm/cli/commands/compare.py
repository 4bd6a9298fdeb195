"""``bertscore-tm compare``: several systems against the same references in one run, with F1 intervals and,
for each system after the first (the baseline), a paired test of its F1 difference."""

from __future__ import annotations

import argparse
import json
import math
from typing import Any, TextIO

from bertscore_tm.cli import inputs, metrics, options, outputs
from bertscore_tm.cli.errors import PROG, UsageError
from bertscore_tm.cli.inputs import n_lines
from bertscore_tm.cli.intervals import check_finite, p_text, percent
from bertscore_tm.cli.options import Resampling
from bertscore_tm.cli.outputs import json_number
from bertscore_tm.distributed.launch import Processes, processes

#: How many segments per system the --html page explains: those where it differs most from the baseline.
HTML_SEGMENTS = 5


def add_parser(sub: Any) -> None:
    c = sub.add_parser(
        "compare",
        help="is B better than A? F1 intervals and paired significance tests",
        description="Score several systems against the same references in one run and print per system the P, R, "
        "F1 means, a bootstrap interval of F1 and, after the first (the baseline), the F1 difference to it and the "
        "p-value of a paired test (bootstrap: Koehn 2004; randomization: Riezler and Maxwell 2005).",
    )
    help = "references, one per line; several files give several references per line"
    options.add_many(c, "-r", "--ref", metavar="FILE", help=help)
    help = "two or more system files, one candidate per line; the first is the baseline"
    options.add_many(c, "-c", "--cand", metavar="SYS", help=help)
    help = "weigh tokens by inverse document frequency over the references (counted once for all systems)"
    options.add_metric_options(c, help)
    options.add_resampling_options(c, "0.95", "each system's F1 mean and each F1 difference", shuffles=True)
    help = "paired bootstrap resampling or approximate randomization (default: bootstrap)"
    c.add_argument("--method", choices=("bootstrap", "randomization"), default="bootstrap", help=help)
    c.add_argument("--format", choices=("text", "json"), default="text", help="output format (default: text)")
    help = f"also write an HTML page: the table, a plot, the {HTML_SEGMENTS} segments per system differing most"
    c.add_argument("--html", metavar="FILE", help=help)
    options.add_run_options(c)
    options.add_checkpoint_options(c, "lines (per system)")
    c.set_defaults(run=run)


def run(args: argparse.Namespace, out: TextIO) -> int:
    names: list[str] = args.cand
    if len(names) < 2:
        raise UsageError(
            f"compare needs at least two systems after -c (the first is the baseline), got {len(names)}: "
            f"to score one system use: {PROG} score -c {names[0]} -r ..."
        )
    settings = options.resampling(args)
    assert settings is not None  # compare's --confidence has a default
    systems, targets = _read(names, args.ref)
    html = None if args.html is None else outputs.check_output(args.html, "compare.html")
    shard_size = options.shard_size(args)

    metric = metrics.scoring_metric(args)
    scores = _score(metric, systems, targets, args.checkpoint, shard_size)
    if scores is None:  # a torchrun process other than rank 0
        return 0
    rows = _rows(names, scores, args.method, settings)
    if args.format == "json":
        doc = {
            "hash": metric.hash_code,
            "model_commit": metric.model_commit,
            "method": args.method,
            "bootstrap": settings.num_samples,
            "seed": settings.seed,
            "confidence": settings.confidence,
            "systems": rows,
        }
        out.write(json.dumps(doc, indent=2) + "\n")
    else:
        out.write(_table(metric.hash_code, args.method, settings, rows))
    if html is not None:
        page = _page(metric, (systems, targets), scores["f1"], rows, _how(args.method, settings))
        outputs.write_text(html, args.html, [page])
    return 0


def _read(names: list[str], refs: list[str]) -> tuple[list[list[str]], list[str] | list[list[str]]]:
    """The system files and the references, checked to have as many lines each (and at least 2)."""
    inputs.check_stdin([*names, *refs], "-c/-r")
    systems = [inputs.read_lines(path, "system") for path in names]
    lines = len(systems[0])
    for path, system in zip(names[1:], systems[1:], strict=True):
        if len(system) != lines:
            raise UsageError(
                f"system file {path} has {n_lines(len(system))} but the baseline {names[0]} has {n_lines(lines)}: "
                "every system must answer the same inputs, line for line"
            )
    mismatch = (
        f"the system files have {n_lines(lines)}: line i of every reference file is a reference for line i of "
        "every system file"
    )
    targets = inputs.references(refs, lines, mismatch)
    if lines < 2:
        raise UsageError(
            f"the system files have {n_lines(lines)}: a paired test needs at least 2 lines (on one line "
            "every resample is that line, so any difference would look significant); score more lines, or use "
            f"{PROG} score on each system"
        )
    return systems, targets


def _score(
    metric: Any, systems: list[list[str]], targets: list[str] | list[list[str]], checkpoint: str | None, shard_size: int
) -> dict[str, Any] | None:
    """Every system's per-line scores (None on a torchrun process other than rank 0), in one compute (shared texts
    embedded once), or with a `checkpoint` in a resumable run per system (references embedded again for each)."""
    import torch

    from bertscore_tm.comparison.systems import score_systems
    from bertscore_tm.corpus.resumable import score_resumable

    with processes(str(metric.device)) as job:
        if not job.writes_output:
            metric.verbose = False
        if checkpoint is not None:
            per = [
                score_resumable(metric, system, targets, f"{checkpoint}/system{i}", shard_size)
                for i, system in enumerate(systems)
            ]
            scores = {k: torch.stack([getattr(s, k) for s in per]) for k in ("precision", "recall", "f1")}
        else:
            start, stop = job.shard(len(targets))
            shards = [Processes(rank, job.world_size).shard(len(targets)) for rank in range(job.world_size)]
            scores = score_systems(
                metric, [s[start:stop] for s in systems], targets[start:stop], shard_sizes=[b - a for a, b in shards]
            )
    return scores if job.writes_output else None


def _rows(names: list[str], scores: dict[str, Any], method: str, settings: Resampling) -> list[dict[str, Any]]:
    """One row per system: means, the F1 interval, and (after the baseline) the F1 difference and p-value."""
    from bertscore_tm.comparison.significance import bootstrap_interval, paired_test

    f1 = scores["f1"].double().cpu()
    check_finite(f1, names)
    intervals = bootstrap_interval(f1, settings.confidence, settings.num_samples, settings.seed)
    test = paired_test(f1[0], f1[1:], method, settings.num_samples, settings.seed, settings.confidence)
    per_line = {k: scores[k].double().cpu().tolist() for k in ("precision", "recall", "f1")}  # [system][line]
    means = {k: [math.fsum(x) / len(x) for x in systems] for k, systems in per_line.items()}  # as score computes them
    return [
        {
            "name": name,
            **{k: json_number(system_means[i]) for k, system_means in means.items()},
            "f1_ci": [float(intervals.low[i]), float(intervals.high[i])],
            "p_value": None if i == 0 else float(test.p_value[i - 1]),
            "delta_f1": None if i == 0 else float(test.delta[i - 1]),
        }
        for i, name in enumerate(names)
    ]


def _how(method: str, settings: Resampling) -> str:
    if method == "bootstrap":
        how = f"paired bootstrap resampling (Koehn 2004), {settings.num_samples} resamples"
    else:
        how = (
            f"approximate randomization (Riezler and Maxwell 2005), {settings.num_samples} shuffles; "
            f"intervals from {settings.num_samples} bootstrap resamples"
        )
    return f"{how}, seed {settings.seed}"


def _page(metric: Any, texts: tuple[list[list[str]], Any], f1: Any, rows: list[dict[str, Any]], how: str) -> str:
    """The --html page: for each system after the baseline, its `HTML_SEGMENTS` lines of largest F1 difference,
    both sides explained with the IDF the scores count."""
    import torch

    from bertscore_tm.explanations.explanation import explain_pairs
    from bertscore_tm.explanations.weighting import weighting
    from bertscore_tm.reports.compare_html import Segment, compare_page

    systems, targets = texts
    f1 = f1.double().cpu()
    groups = [[t] if isinstance(t, str) else list(t) for t in targets]
    weights = weighting(metric.scorer, groups, idf_references=[r for g in groups for r in g])
    chosen = []
    for s in range(1, len(systems)):
        gap = (f1[s] - f1[0]).abs().nan_to_num(nan=-1.0)
        chosen += [(s, int(i)) for i in torch.argsort(gap, descending=True, stable=True)[:HTML_SEGMENTS]]
    cands = [systems[0][i] for _, i in chosen] + [systems[s][i] for s, i in chosen]
    whys = explain_pairs(metric.scorer, cands, [groups[i] for _, i in chosen] * 2, weights, device=metric.device)
    n = len(chosen)
    segments = [Segment(s, i + 1, whys[k], whys[n + k]) for k, (s, i) in enumerate(chosen)]
    return compare_page(metric.hash_code, how, rows, f1.tolist(), segments)


def _table(code: str, method: str, settings: Resampling, rows: list[dict[str, Any]]) -> str:
    table = [["system", "P", "R", "F1", f"F1 {percent(settings.confidence)} CI", "delta F1", "p-value"]]
    for row in rows:
        cells = [row["name"]] + ["nan" if row[k] is None else f"{row[k]:.6f}" for k in ("precision", "recall", "f1")]
        cells.append(f"[{row['f1_ci'][0]:.6f}, {row['f1_ci'][1]:.6f}]")
        if row["p_value"] is None:
            cells += ["baseline", ""]
        else:
            cells += [f"{row['delta_f1']:+.6f}", p_text(row["p_value"]) + (" *" if row["p_value"] < 0.05 else "")]
        table.append(cells)
    lines = [code, f"{_how(method, settings)}; * p < 0.05 (difference to the baseline, two-sided)"]
    lines += outputs.aligned(table)
    return "\n".join(lines) + "\n"
