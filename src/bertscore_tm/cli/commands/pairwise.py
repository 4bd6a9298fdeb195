"""``bertscore-tm pairwise``: every candidate line against every reference line, an N x M matrix (TSV or JSON)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterable
from typing import Any, TextIO

from bertscore_tm.cli import inputs, metrics, options, outputs
from bertscore_tm.distributed.launch import processes
from bertscore_tm.settings.arguments import ROW_SHARD_SIZE


def add_parser(sub: Any) -> None:
    a = sub.add_parser(
        "pairwise",
        help="score every candidate line against every reference line (an N x M matrix)",
        description="Score each of N candidate lines against each of M reference lines (each text embedded once): "
        "TSV writes the F1 matrix, a line per candidate; JSON the P, R and F1 matrices with the hash code.",
    )
    a.add_argument("-c", "--cand", required=True, metavar="FILE", help="candidates, one per line (the matrix's rows)")
    a.add_argument("-r", "--ref", required=True, metavar="FILE", help="references, one per line (the matrix's columns)")
    a.add_argument("-o", "--output", metavar="FILE", help="write the matrix to FILE (default: standard output)")
    options.add_metric_options(a, "weigh tokens by inverse document frequency over the references")
    a.add_argument("--format", choices=("tsv", "json"), default="tsv", help="output format (default: tsv)")
    options.add_run_options(a)
    options.add_checkpoint_options(a, "candidate rows", ROW_SHARD_SIZE)
    a.set_defaults(run=run)


def run(args: argparse.Namespace, out: TextIO) -> int:
    inputs.check_stdin([args.cand, args.ref], "-c/-r")
    cands = inputs.read_lines(args.cand, "candidate")
    refs = inputs.read_lines(args.ref, "reference")
    target = None if args.output is None else outputs.check_output(args.output, "matrix.tsv")
    shard_size = options.shard_size(args)
    metric = metrics.scoring_metric(args)
    names = ("precision", "recall", "f1") if args.format == "json" else ("f1",)
    matrices = _matrices(metric, cands, refs, names, args.checkpoint, shard_size)
    if matrices is None:  # a torchrun process other than rank 0
        return 0
    if args.format == "json":
        doc = {
            **outputs.setting(metric, args),
            "candidates": len(cands),
            "references": len(refs),
            **{k: [[outputs.json_number(x) for x in row] for row in m.tolist()] for k, m in matrices.items()},
        }
        lines: Iterable[str] = [json.dumps(doc) + "\n"]
    else:  # tsv: the F1 matrix, line i = candidate i, column j = reference j; written row by row
        lines = ("\t".join(repr(x) for x in row.tolist()) + "\n" for row in matrices["f1"])
    outputs.write_output(target, str(target), lines, out)
    if target is not None:
        what = "F1 matrix" if args.format == "tsv" else "P, R and F1 matrices"
        out.write(f"Wrote the {len(cands)} x {len(refs)} {what} ({metric.hash_code}) to {target}\n")
    return 0


def _matrices(
    metric: Any, cands: list[str], refs: list[str], names: tuple[str, ...], checkpoint: str | None, shard_size: int
) -> dict[str, Any] | None:
    """The matrices `names` (float64, on the CPU); under torchrun each process scores a block of rows
    and rank 0 gathers them (None elsewhere); with a `checkpoint`, in resumable shards."""
    import torch

    with processes(str(metric.device)) as job:
        start, stop = job.shard(len(cands))
        if not job.writes_output:
            metric.verbose = False
        if checkpoint is not None:
            from bertscore_tm.corpus.resumable import pairwise_resumable

            stacked = pairwise_resumable(metric, cands, refs, checkpoint, shard_size)
            rows = {k: stacked[("precision", "recall", "f1").index(k)] for k in names}
        elif start < stop:
            result = metric.pairwise(cands[start:stop], refs)
            assert isinstance(result, dict)
            rows = {k: result[k] for k in names}
        else:  # fewer candidates than processes: this one has no rows
            rows = {k: torch.zeros((0, len(refs)), device=metric.device) for k in names}
        if job.world_size > 1 and checkpoint is None:  # (pairwise_resumable gathers its rows itself)
            from bertscore_tm.distributed.ranks import gather

            rows = {k: torch.cat([x.cpu() for x in gather(m.float(), None)]) for k, m in rows.items()}
    if not job.writes_output:
        return None
    return {k: m.double().cpu() for k, m in rows.items()}
