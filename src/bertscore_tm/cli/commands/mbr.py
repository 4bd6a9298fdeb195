"""``bertscore-tm mbr``: minimum-Bayes-risk selection, the hypothesis of each group that agrees most with the others."""

from __future__ import annotations

import argparse
import json
from typing import Any, TextIO

from bertscore_tm.cli import devices, inputs, metrics, options, outputs
from bertscore_tm.cli.errors import UsageError
from bertscore_tm.cli.inputs import n_lines


def add_parser(sub: Any) -> None:
    m = sub.add_parser(
        "mbr",
        help="minimum-Bayes-risk selection: the hypothesis of each group the others agree with most",
        description="For each group of hypotheses, pick the one of highest mean F1 (or --utility) against the "
        "others of its group (ties: the first) and print it, one line per group; JSON adds every mean.",
    )
    m.add_argument("-i", "--input", required=True, metavar="HYPS", help="hypotheses, one per line")
    grouping = m.add_mutually_exclusive_group(required=True)
    grouping.add_argument("--group-size", type=int, metavar="K", help="each group is K consecutive lines")
    help = "one group id per line of HYPS (lines with the same id form a group, in order of first appearance)"
    grouping.add_argument("--groups", metavar="FILE", help=help)
    options.add_metric_options(m, "weigh tokens by inverse document frequency over each group's hypotheses")
    help = "the score averaged over the others (default: f1; f_beta needs --beta; the hypothesis is the candidate)"
    m.add_argument("--utility", choices=("f1", "f_beta", "precision", "recall"), default="f1", help=help)
    options.add_beta_option(m, "with --utility f_beta: F-beta's beta, recall weighing B times precision (--beta 3: F3)")
    m.add_argument("--format", choices=("text", "json"), default="text", help="output format (default: text)")
    options.add_run_options(m)
    m.set_defaults(run=run)


def run(args: argparse.Namespace, out: TextIO) -> int:
    devices.one_process("mbr")
    if args.groups is not None:
        inputs.check_stdin([args.input, args.groups], "-i/--groups")
    if args.utility == "f_beta" and args.beta is None:
        raise UsageError("--utility f_beta needs --beta B (e.g. --beta 3 for F3): without a beta there is no F-beta")
    hyps = inputs.read_lines(args.input, "hypothesis")
    names, lines = _groups(args, hyps)
    metric = metrics.scoring_metric(args)
    groups = [[hyps[i] for i in group] for group in lines]
    chosen, utilities = metric.mbr_select(groups, return_utilities=True, utility=args.utility)
    if args.format == "json":
        doc = {
            **outputs.setting(metric, args),
            "utility": args.utility,
            "groups": [
                {
                    "group": name,
                    "index": index,
                    "line": group[index] + 1,
                    "hypothesis": hyps[group[index]],
                    "lines": [i + 1 for i in group],
                    "utilities": [outputs.json_number(u) for u in utility.tolist()],
                }
                for name, group, index, utility in zip(names, lines, chosen, utilities, strict=True)
            ],
        }
        out.write(json.dumps(doc, indent=2) + "\n")
    else:
        out.writelines(hyps[group[index]] + "\n" for group, index in zip(lines, chosen, strict=True))
    return 0


def _groups(args: argparse.Namespace, hyps: list[str]) -> tuple[list[str], list[list[int]]]:
    """Group names and each group's line indices, in order of first appearance."""
    if args.group_size is not None:
        k = args.group_size
        if k < 1:
            raise UsageError(f"--group-size must be at least 1, got {k}")
        if len(hyps) % k:
            raise UsageError(
                f"hypothesis file {args.input} has {n_lines(len(hyps))}, which --group-size {k} does not divide: "
                f"each group is {k} consecutive lines (the last group would have {len(hyps) % k})"
            )
        return [str(g + 1) for g in range(len(hyps) // k)], [list(range(i, i + k)) for i in range(0, len(hyps), k)]
    ids = inputs.read_lines(args.groups, "group id")
    if len(ids) != len(hyps):
        raise UsageError(
            f"group id file {args.groups} has {n_lines(len(ids))} but hypothesis file {args.input} has "
            f"{n_lines(len(hyps))}: line i of the group id file names the group of hypothesis i"
        )
    members: dict[str, list[int]] = {}
    for i, name in enumerate(ids):
        if not name.strip():
            raise UsageError(f"group id file {args.groups}, line {i + 1}: the group id is blank")
        members.setdefault(name.strip(), []).append(i)
    return list(members), list(members.values())
