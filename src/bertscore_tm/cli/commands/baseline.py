"""``bertscore-tm baseline``: a rescale baseline (``LAYER,P,R,F``) from random pairs of a monolingual corpus."""

from __future__ import annotations

import argparse
from typing import Any, TextIO

from bertscore_tm.cli import devices, inputs, metrics, options, outputs
from bertscore_tm.cli.errors import UsageError
from bertscore_tm.distributed.launch import processes


def add_parser(sub: Any) -> None:
    b = sub.add_parser(
        "baseline",
        help="compute a rescale baseline from a monolingual corpus",
        description="Score --pairs seeded random pairs of distinct corpus lines at every layer and write the mean "
        "P, R, F per layer as a LAYER,P,R,F file, for --baseline-path (or, as baselines/LANG/MODEL.tsv, --lang).",
    )
    help = "monolingual corpus, one sentence per line ('-': standard input)"
    b.add_argument("--corpus", required=True, metavar="FILE", help=help)
    options.add_model_options(b, layers=False)
    help = "number of random pairs (default: 1000; needs 2N distinct lines)"
    b.add_argument("--pairs", type=int, default=1000, metavar="N", help=help)
    b.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    b.add_argument("-o", "--output", required=True, metavar="OUT.tsv", help="where to write the baseline")
    options.add_run_options(b)
    b.set_defaults(run=run)


def run(args: argparse.Namespace, out: TextIO) -> int:
    lines = inputs.read_lines(args.corpus, "corpus")
    if args.pairs < 1:
        raise UsageError(f"--pairs must be at least 1, got {args.pairs}")
    from bertscore_tm.tuning.baseline_building import distinct_lines

    distinct = len(distinct_lines(lines))
    if distinct < 2 * args.pairs:
        raise UsageError(
            f"{inputs.input_name(args.corpus, 'corpus')} has {distinct} distinct non-blank lines, but --pairs "
            f"{args.pairs} needs {2 * args.pairs} (each line is used at most once): use a larger corpus or fewer pairs"
        )
    target = outputs.check_output(args.output, "baseline.tsv")
    model_name, model_options = metrics.checked_model(args)
    device = devices.process_device(args.device)  # under torchrun, this process's own GPU

    from bertscore_tm.tuning.baseline_building import layer_means, sample_pairs, write_baseline

    cands, refs = sample_pairs(lines, args.pairs, args.seed)
    with processes(device) as job:
        verbose = options.progress(args) and job.writes_output
        metric = metrics.command_metric(
            args, model_name, model_options, all_layers=True, device=job.device, verbose=verbose
        )
        start, stop = job.shard(len(cands))
        table = layer_means(metric, cands[start:stop], refs[start:stop])
    if not job.writes_output:
        return 0
    with outputs.replacing(target, args.output) as temp:
        write_baseline(temp, table)
    out.write(
        f"Wrote the baseline of {model_name} ({table.shape[0]} layers, {args.pairs} pairs of {distinct} distinct "
        f"lines, seed {args.seed}) to {target}\n"
    )
    return 0
