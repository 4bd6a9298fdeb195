"""``bertscore-tm tune-layers``: which layer of a model agrees best with human judgements on your data
(`bertscore_tm.tuning.layer_tuning`), with the line to add to a layer table. Guide: docs/tuning.md."""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path
from typing import Any, TextIO

from bertscore_tm.cli import devices, metrics, options, outputs
from bertscore_tm.cli.errors import UsageError
from bertscore_tm.cli.intervals import p_text, percent

#: How the command line says what fixes a judgement file (`bertscore_tm.errors.JUDGEMENT_REMEDIES` says it in Python).
REMEDIES = {
    "skip_bad": "--skip-bad leaves bad lines out",
    "columns": "name the right ones with --candidate-column, --reference-column, --human-column, --group-by "
    "and --system-column",
    "context_column": "name the right one with --context-column",
}
METHODS = ("pearson", "spearman", "kendall")
_SCORE_NAMES = {"precision": "P", "recall": "R", "f1": "F1"}


def add_parser(sub: Any) -> None:
    t = sub.add_parser(
        "tune-layers",
        help="find the layer that correlates best with human judgements",
        description="Correlate each layer's scores of judged pairs with the human scores (Pearson, Spearman, "
        "Kendall's tau-b, with bootstrap intervals); print the best layer, whether it is significantly better than "
        "the default layer, and its line for a layer table (BERTSCORE_TM_LAYERS).",
    )
    help = "the judgements: UTF-8, tab-separated, a header line naming the columns, one judged pair a line"
    t.add_argument("--data", required=True, metavar="FILE", help=help)
    for flag, default, role in (
        ("--candidate-column", "candidate", "the candidates"),
        ("--reference-column", "reference", "the references"),
        ("--human-column", "human", "the human scores (numbers, higher is better)"),
    ):
        t.add_argument(flag, default=default, metavar="NAME", help=f"the column of {role} (default: {default})")
    help = "correlate within the groups of this column and average over them, as WMT does (default: one group)"
    t.add_argument("--group-by", metavar="NAME", help=help)
    help = "the column naming each line's system: adds the system-level Pearson correlation of the mean scores"
    t.add_argument("--system-column", metavar="NAME", help=help)
    help = "the column of each pair's context, as score --context gives it (a blank cell: none)"
    t.add_argument("--context-column", metavar="NAME", help=help)
    help = "leave out (and count) lines with a bad human score or field count (default: such a line is an error)"
    t.add_argument("--skip-bad", action="store_true", help=help)
    options.add_model_options(t, layers=False)
    t.add_argument("--idf", action="store_true", help="weigh tokens by inverse document frequency over the references")
    help = "the correlation that picks the best layer (default: pearson, WMT's segment-level figure)"
    t.add_argument("--criterion", choices=METHODS, default="pearson", help=help)
    help = "the score whose correlation picks it, and that the intervals are drawn for (default: f1)"
    t.add_argument("--score", choices=tuple(_SCORE_NAMES), default="f1", help=help)
    help = "test the best layer against layer K (default: the model's default layer, where a layer table has one)"
    t.add_argument("--default-layer", type=int, metavar="K", help=help)
    t.add_argument("--format", choices=("text", "json"), default="text", help="output format (default: text)")
    t.add_argument("-o", "--output", metavar="FILE", help="write the text or JSON there")
    help = "also draw the correlation per layer and its interval (needs matplotlib; the extension is the format)"
    t.add_argument("--plot", metavar="FILE", help=help)
    help = "write the best layer into this JSON layer table (made where missing); BERTSCORE_TM_LAYERS reads it"
    t.add_argument("--add-to-table", metavar="FILE", help=help)
    options.add_resampling_options(t, "0.95", "the correlations and of the paired test's difference")
    options.add_run_options(t)
    t.set_defaults(run=run)


def run(args: argparse.Namespace, out: TextIO) -> int:
    devices.one_process("tune-layers")
    resampling = options.resampling(args)
    assert resampling is not None  # --confidence has a default
    if args.default_layer is not None and args.default_layer < 0:
        raise UsageError(f"--default-layer must be 0 or more (0 = the embeddings), got {args.default_layer}")
    rows = _judgements(args)
    target = None if args.output is None else outputs.check_output(args.output, "tuning.txt")
    plot = None
    if args.plot is not None:
        outputs.need_matplotlib("--plot")
        plot = outputs.image_target(args.plot)
    table = None if args.add_to_table is None else outputs.check_output(args.add_to_table, "layers.json")
    if table is not None and table.exists():
        from bertscore_tm.models.registry import user_layer_table

        user_layer_table(table)  # a LayerTableError (one line) for a file that is no layer table
    metric = _metric(args)
    from bertscore_tm.tuning.layer_tuning import layer_scores, tune_from_scores

    scores = layer_scores(metric, rows)
    result = tune_from_scores(
        rows,
        scores,
        criterion=args.criterion,
        score=args.score,
        bootstrap=resampling.num_samples,
        seed=resampling.seed,
        default_layer=args.default_layer,
        confidence=resampling.confidence,
        progress=options.progress(args),
    )
    if plot is not None:
        from bertscore_tm.reports.tuning_plot import plot_layers

        with outputs.replacing(plot[0], str(plot[0])) as temp:
            plot_layers(result, temp, format=plot[1])
    if table is not None:
        _add_to_table(table, args.add_to_table, result)
    if args.format == "json":  # the figures, with what the command line adds: the table's line, the files written
        doc = {
            **result.to_dict(),
            "context_column": args.context_column,
            "layer_table_line": result.layer_table_line(),
            "plot": None if plot is None else str(plot[0]),
            "layer_table": None if table is None else str(table),
        }
        text = json.dumps(doc, indent=2, allow_nan=False, ensure_ascii=False) + "\n"
    else:
        text = _text(result, args.group_by is not None, plot, table)
    outputs.write_output(target, args.output, [text], out)
    return 0


def _judgements(args: argparse.Namespace) -> Any:
    """The judgement file, read and checked before any model loads."""
    from bertscore_tm.tuning.judgements import JudgementFileError, check_variation, read_judgements

    try:
        rows = read_judgements(
            args.data,
            candidate=args.candidate_column,
            reference=args.reference_column,
            human=args.human_column,
            group=args.group_by,
            system=args.system_column,
            skip_bad=args.skip_bad,
            context=args.context_column,
        )
    except JudgementFileError as err:
        remedy = f" ({REMEDIES[err.remedy]})" if err.remedy in REMEDIES else ""
        raise UsageError(f"{err.problem}{remedy}") from None
    check_variation(rows)
    return rows


def _metric(args: argparse.Namespace) -> Any:
    """A metric keeping every layer; --default-layer checked against its depth."""
    name, model_options = metrics.checked_model(args)
    device = devices.process_device(args.device)
    metric = metrics.command_metric(args, name, model_options, all_layers=True, idf=args.idf, device=device)
    if args.default_layer is not None and args.default_layer > metric.model_depth:
        raise UsageError(
            f"--default-layer {args.default_layer} is not a layer of {name}: it has layers 0 (the embeddings) to "
            f"{metric.model_depth}"
        )
    return metric


def _add_to_table(target: Path, name: str, result: Any) -> None:
    """Merge the best layer into a copy of the table, which then replaces it in one step."""
    from bertscore_tm.models.registry import add_to_layer_table

    with outputs.replacing(target, name) as temp:
        if target.exists():
            shutil.copyfile(target, temp)
        else:
            temp.unlink()
        add_to_layer_table(temp, result.model, result.best_layer)


def _text(result: Any, grouped: bool, plot: tuple[Path, str] | None, table: Path | None) -> str:
    best = result.figures(result.best_layer)
    lines = [result.hash_code, _summary(result, grouped), "", *_table(result, grouped), ""]
    lines.append(
        f"best layer: {result.best_layer} ({result.criterion} of {_SCORE_NAMES[result.score]} {_number(best.mean)})"
    )
    test, default = result.test, result.default_layer
    if default is None:
        lines.append(
            f"no default layer is known for {result.model} (neither the layer table BERTSCORE_TM_LAYERS names nor "
            "configs/models.json has it): --default-layer K tests the best layer against layer K"
        )
    elif result.best_layer == default:
        lines.append(f"the best layer is the model's default layer {default}")
    elif test is not None:
        verdict = "significantly better" if test.significant else "not significantly better"
        lines.append(
            f"against the default layer {default}: {test.difference:+.4f} ({percent(result.confidence)} interval "
            f"[{_numbers(test.interval, '+.4f')}]), p = {p_text(test.p_value)}: {verdict} (one-sided paired "
            f"bootstrap, alpha {test.alpha:g})"
        )
    lines.append(f"layer table line (BERTSCORE_TM_LAYERS): {result.layer_table_line()}")
    if plot is not None:
        lines.append(f"Saved the plot to {plot[0]}")
    if table is not None:
        lines.append(f"Added {result.layer_table_line()} to the layer table {table}")
    return "".join(line + "\n" for line in lines)


def _summary(result: Any, grouped: bool) -> str:
    text = f"{result.segments - sum(result.left_out.values())} judgements"
    if grouped:
        text += f" in {len(result.groups)} group(s) ({', '.join(f'{k} {v}' for k, v in result.groups.items())})"
    left = [f"{name} ({size})" for name, size in result.left_out.items()]
    text += f"; left out: groups of fewer than 3 lines, {', '.join(left)}" if left else ""
    text += f"; {result.skipped} bad line(s) skipped" if result.skipped else ""
    text += f"; {result.dropped} pair(s) with an undefined score left out" if result.dropped else ""
    how = "within each group, averaged over groups" if grouped else "over all judgements"
    return (
        f"{text}. Correlation of {_SCORE_NAMES[result.score]} with the human scores {how}; "
        f"{percent(result.confidence)} intervals from {result.bootstrap} bootstrap resamples (seed {result.seed})"
    )


def _table(result: Any, grouped: bool) -> list[str]:
    groups = list(result.groups) if grouped else []
    with_systems = result.layers[0].system is not None
    header = ["layer", *(f"{m} [{percent(result.confidence)}]" for m in METHODS), *groups]
    header += ["system r"] * with_systems + [""]
    rows = []
    for layer in result.layers:
        cells = [str(layer.layer)]
        for method in METHODS:
            figures = result.figures(layer.layer, method)
            cells.append(_number(figures.mean) + ("" if figures.ci is None else f" [{_numbers(figures.ci)}]"))
        crit = result.figures(layer.layer)
        cells += [_number(crit.groups[name]) for name in groups]
        cells += [_number(layer.system[result.score].mean)] if with_systems else []
        notes = ["best"] * (layer.layer == result.best_layer) + ["default"] * (layer.layer == result.default_layer)
        rows.append([*cells, " ".join(f"<- {note}" for note in notes)])
    legend = [f"{', '.join(result.groups)}: {result.criterion} within the group"] if grouped else []
    if with_systems:
        averaged = ", averaged over groups" if grouped else ""
        legend.append(f"system r: Pearson's r of the systems' mean scores{averaged}")
    return outputs.aligned([header, *rows]) + ([f"({'; '.join(legend)})"] if legend else [])


def _number(value: float, spec: str = ".4f") -> str:
    return "nan" if value != value else format(value, spec)


def _numbers(values: tuple[float, float], spec: str = ".4f") -> str:
    return ", ".join(_number(v, spec) for v in values)
