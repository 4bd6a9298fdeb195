"""``bertscore-tm explain``: why a pair scores as it does, token by token (docs/explain.md), as text, JSON or
an HTML page. Every pair is scored once; only those asked for (``--worst K``; default: all) are explained."""

from __future__ import annotations

import argparse
import json
import os
import sys
import warnings
from typing import Any, TextIO

from bertscore_tm.cli import devices, inputs, metrics, options, outputs
from bertscore_tm.cli.errors import UsageError
from bertscore_tm.settings import rules


def add_parser(sub: Any) -> None:
    e = sub.add_parser(
        "explain",
        help="why this score? token-level explanations of pairs",
        description="Explain pairs token by token: each token's best match, similarity, weight and contribution "
        "(they add up to P and R), each reference's scores, and the weak words (possible additions or omissions).",
    )
    e.add_argument("-c", "--cand", required=True, metavar="FILE", help="candidates, one per line")
    help = "references, one per line; several files give several references per candidate"
    options.add_many(e, "-r", "--ref", metavar="FILE", help=help)
    help = "-c and -r are the texts of one pair themselves, not files (several -r texts: several references)"
    e.add_argument("--text", action="store_true", help=help)
    e.add_argument("--worst", type=int, metavar="K", help="explain the K pairs of lowest F1 only")
    context = "; with --text, the context text itself; its tokens shown as such"
    idf = "weigh tokens by IDF over the references of all the files"
    options.add_metric_options(e, idf, beta=True, context=context)
    help = "with --idf --text: count the IDF over these references (one per line) instead of the pair's own"
    e.add_argument("--idf-references", metavar="FILE", help=help)
    help = "a word is weak when its support is below T (default: the layer's rescale baseline, where known)"
    e.add_argument("--threshold", type=float, metavar="T", help=help)
    e.add_argument("--format", choices=("text", "json"), default="text", help="output format (default: text)")
    e.add_argument("--html", metavar="FILE", help="also write one self-contained HTML page there")
    e.add_argument("-o", "--output", metavar="FILE", help="write the text or JSON there")
    help = "show the token tables in the text output (default: yes)"
    e.add_argument("--tokens", action=argparse.BooleanOptionalAction, default=True, help=help)
    help = "colour the weak words (default: on a terminal, unless NO_COLOR is set)"
    e.add_argument("--color", action=argparse.BooleanOptionalAction, help=help)
    options.add_run_options(e)
    # with --text, -c, -r and --context hold texts, not file names (`outputs.read_files`)
    e.set_defaults(run=run, texts=lambda args: ("cand", "ref", "context") if args.text else ())


def run(args: argparse.Namespace, out: TextIO) -> int:
    devices.one_process("explain")
    if args.worst is not None and args.worst < 1:
        raise UsageError(f"--worst must be at least 1 (the number of pairs to explain), got {args.worst}")
    if args.text and args.worst is not None:
        raise UsageError("--worst picks among the lines of files: with --text there is one pair")
    if args.idf_references is not None and not (args.idf and args.text):
        raise UsageError(
            "--idf-references needs --idf and --text (with files, --idf counts over all the files' references)"
        )
    rules.finite_number(optional=True)("threshold", args.threshold)  # explain()'s rule: finite
    if not args.text:
        inputs.check_stdin([args.cand, *args.ref], "-c/-r")
    html = None if args.html is None else outputs.check_output(args.html, "explain.html")
    target = None if args.output is None else outputs.check_output(args.output, "explain.txt")
    idf_references = None if args.idf_references is None else inputs.read_lines(args.idf_references, "IDF reference")
    if args.text:  # checked before the model loads, as the files are
        pairs, context = None, None if args.context is None else [args.context]
        cands = [inputs.text_argument(args.cand, "candidate", "-c")]
        groups = [[inputs.text_argument(r, "reference", "-r") for r in args.ref]]
    else:
        pairs = inputs.pair_lines(args.cand, args.ref)
        context = inputs.context_lines(args.context, len(pairs))
    metric = metrics.scoring_metric(args)
    from bertscore_tm.explanations.explanation import explain_pairs
    from bertscore_tm.explanations.weighting import weighting

    lines: list[int | None]
    if pairs is None:
        lines, weights = [None], weighting(metric.scorer, groups, idf_references)
    else:
        lines, cands, groups = _chosen(args, metric, pairs, context)
        counts = (metric.doc_freq, metric.num_refs) if metric.scorer.counts_idf else None
        weights = weighting(metric.scorer, groups, counts=counts)
        context = None if context is None else [context[n - 1] for n in lines if n is not None]
    whys = explain_pairs(
        metric.scorer, cands, groups, weights, device=metric.device, threshold=args.threshold, context=context
    )
    if args.format == "json":
        pairs = [{"line": line, **why.to_json()} for line, why in zip(lines, whys, strict=True)]
        doc = {"hash": whys[0].hash_code if whys else None, "model_commit": metric.model_commit, "pairs": pairs}
        report = json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
    else:
        from bertscore_tm.reports.explanation_text import render_text

        colour = sys.stdout.isatty() and not os.environ.get("NO_COLOR") if args.color is None else args.color
        report = render_text(whys, lines, color=target is None and bool(colour), tokens=args.tokens)
    outputs.write_output(target, args.output, [report], out)
    if html is not None:
        from bertscore_tm.reports.explanation_html import render_html

        outputs.write_text(html, args.html, [render_html(whys, lines)])
        if args.format == "text":
            out.write(f"Saved the explanation page to {html}\n")
    return 0


def _chosen(
    args: argparse.Namespace, metric: Any, pairs: Any, context: list[str] | None = None
) -> tuple[list[int | None], list[str], list[list[str]]]:
    """Score every pair of the files once, then read back those to explain: the `--worst` K of lowest F1,
    worst first (ties: the earlier line), or every pair in order. Line numbers count from 1."""
    import torch

    done = 0
    for cands, targets in pairs.chunks():
        part = None if context is None else context[done : done + len(cands)]
        metric.update(cands, targets, context=part)
        done += len(cands)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the engine warned about blank or NaN pairs already, once
        f1 = metric.compute_scores().f1.double().cpu()
    if args.worst is None:
        order = list(range(len(f1)))
    else:
        order = torch.argsort(torch.nan_to_num(f1, nan=-float("inf")), stable=True)[: args.worst].tolist()
    wanted = set(order)
    every_pair = (pair for cands, targets in pairs.chunks() for pair in zip(cands, targets, strict=True))
    found = {n: (cand, [t] if isinstance(t, str) else list(t)) for n, (cand, t) in enumerate(every_pair) if n in wanted}
    return [n + 1 for n in order], [found[n][0] for n in order], [found[n][1] for n in order]
