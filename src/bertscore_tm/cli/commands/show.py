"""``bertscore-tm show``: the token similarity matrix of one pair as a heatmap (needs matplotlib)."""

from __future__ import annotations

import argparse
from typing import Any, TextIO

from bertscore_tm.cli import devices, inputs, metrics, options, outputs
from bertscore_tm.cli.errors import UsageError


def add_parser(sub: Any) -> None:
    v = sub.add_parser(
        "show",
        help="plot the token similarity matrix of one pair",
        description="Draw the cosine similarity of every candidate token with every reference token as a heatmap, "
        "P/R/F1 in the title, each candidate token's best match outlined, tokens of weight 0 (the special ones) "
        "labelled in grey; rescaled with rescaling, weights in the labels with --idf.",
    )
    v.add_argument("-c", "--cand", required=True, metavar="TEXT", help="candidate text")
    v.add_argument("-r", "--ref", required=True, metavar="TEXT", help="reference text")
    help = "where to write the picture (default: visualize.png); its extension is the format (none: .png added)"
    v.add_argument("-f", "--file", default="visualize.png", metavar="OUT.png", help=help)
    options.add_model_options(v)
    help = "weigh tokens by IDF over the reference (or over --idf-references), as score of this pair does"
    v.add_argument("--idf", action="store_true", help=help)
    help = "with --idf: count the IDF over these references, one per line (e.g. the corpus's reference file)"
    v.add_argument("--idf-references", metavar="FILE", help=help)
    options.add_rescale_options(v)
    options.add_run_options(v, batch=False)
    v.set_defaults(run=run, texts=lambda args: ("cand", "ref"))  # texts, not files (`outputs.read_files`)


def run(args: argparse.Namespace, out: TextIO) -> int:
    outputs.need_matplotlib("show")
    if not args.cand.strip() or not args.ref.strip():
        raise UsageError("show needs a non-blank candidate (-c) and reference (-r) text")
    if args.idf_references is not None and not args.idf:
        raise UsageError("--idf-references counts the IDF: it needs --idf")
    devices.one_process("show")
    cand = inputs.text_argument(args.cand, "candidate", "-c")
    ref = inputs.text_argument(args.ref, "reference", "-r")
    target, fmt = outputs.image_target(args.file)
    idf_references = None if args.idf_references is None else inputs.read_lines(args.idf_references, "IDF reference")
    metric = metrics.scoring_metric(args)
    from bertscore_tm.reports.similarity_plot import plot_similarity

    with outputs.replacing(target, str(target)) as temp:
        scores = plot_similarity(metric, cand, ref, temp, format=fmt, idf_references=idf_references)
    out.write(f"{scores.hash_code} P: {scores.precision:.6f} R: {scores.recall:.6f} F1: {scores.f1:.6f}\n")
    out.write(f"Saved the similarity matrix to {target}\n")
    return 0
