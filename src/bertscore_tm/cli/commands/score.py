"""``bertscore-tm score``: candidates and references from line files, or the columns of a table with
``--data``; corpus means, per-pair scores, bootstrap intervals, as text, JSON or TSV."""

from __future__ import annotations

import argparse
import json
import math
from typing import Any, TextIO

from bertscore_tm.cli import inputs, metrics, options, outputs
from bertscore_tm.cli.errors import UsageError
from bertscore_tm.cli.intervals import f1_interval, percent
from bertscore_tm.cli.options import Resampling
from bertscore_tm.distributed.launch import processes


def add_parser(sub: Any) -> None:
    s = sub.add_parser(
        "score",
        help="score candidate lines against reference lines",
        description="Score candidate lines against the same lines of one or more reference files (several: the "
        "best counts), or the columns of a table (--data). Prints '<hash> P: .. R: .. F1: ..' (corpus means) and, "
        "with -s, one 'P<TAB>R<TAB>F1' line per candidate. A FILE of '-' is standard input.",
    )
    s.add_argument("-c", "--cand", metavar="FILE", help="candidates, one per line ('-': standard input)")
    help = "references, one per line; several files give several references per candidate ('-': standard input)"
    options.add_many(s, "-r", "--ref", metavar="FILE", help=help, required=False)
    help = "score the rows of a Parquet, JSON Lines, CSV or TSV file; -o FILE gets them with bertscore_* columns"
    s.add_argument("--data", metavar="FILE", help=help)
    s.add_argument("--candidate-column", metavar="C", help="with --data: the candidates' column (default: candidate)")
    help = "with --data: each row's context (as --context gives it to line files; an empty cell: none)"
    s.add_argument("--context-column", metavar="X", help=help)
    help = "with --data: the references' column (default: reference), a column of lists, or several columns"
    options.add_many(s, "--reference-column", metavar="R", help=help, required=False)
    idf = "weigh tokens by inverse document frequency over the references"
    options.add_metric_options(s, idf, beta=True, context="")
    s.add_argument("-s", "--seg-level", action="store_true", help="also print the scores of every pair, in input order")
    help = "output format (default: text); tsv with -s: '# hash' and '# mean' comment lines, then a table"
    s.add_argument("--format", choices=("text", "json", "tsv"), default="text", help=help)
    s.add_argument("-o", "--output", metavar="FILE", help="write the results to FILE (default: standard output)")
    options.add_resampling_options(s, confidence=None)
    options.add_run_options(s)
    options.add_checkpoint_options(s, "pairs")
    s.set_defaults(run=run)


def run(args: argparse.Namespace, out: TextIO) -> int:
    if args.data is not None:
        return _run_data(args, out)
    if args.cand is None or not args.ref:
        raise UsageError("give the candidates and references: -c FILE -r FILE [FILE ...], or --data FILE")
    if any(getattr(args, column) is not None for column in ("reference_column", "candidate_column", "context_column")):
        raise UsageError("--reference-column, --candidate-column and --context-column go with --data FILE")
    inputs.check_stdin([args.cand, *args.ref], "-c/-r")
    pairs = inputs.pair_lines(args.cand, args.ref)
    target = None if args.output is None else outputs.check_output(args.output, "scores.txt")
    resampling = options.resampling(args)
    shard_size = options.shard_size(args)
    context = inputs.context_lines(args.context, len(pairs))
    metric = metrics.scoring_metric(args)
    scores = _score(args, metric, pairs, shard_size, context)
    if scores is None:  # a torchrun process other than rank 0
        return 0
    report = _report(args, metric, scores, resampling, args.cand, len(args.ref), best=True)
    outputs.write_output(target, args.output, [report], out)
    return 0


def _score(args: argparse.Namespace, metric: Any, pairs: Any, shard_size: int, context: list[str] | None) -> Any:
    """The scores of every pair, each torchrun process scoring its share; None on processes other than rank 0."""
    with processes(str(metric.device)) as job:
        if not job.writes_output:
            metric.verbose = False
        if args.checkpoint is not None:  # every process reads all the lines: score_resumable splits and gathers
            from bertscore_tm.corpus.resumable import score_resumable

            chunks = list(pairs.chunks())  # all in memory: a resumable run digests each shard's texts
            cands = [cand for chunk, _ in chunks for cand in chunk]
            targets = [target for _, chunk in chunks for target in chunk]
            scores = score_resumable(metric, cands, targets, args.checkpoint, shard_size, context)
        else:
            start, stop = job.shard(len(pairs))
            for cands, targets in pairs.chunks(start, stop):
                metric.update(cands, targets, context=None if context is None else context[start : start + len(cands)])
                start += len(cands)
            scores = metric.compute_scores()
    return scores if job.writes_output else None


def _run_data(args: argparse.Namespace, out: TextIO) -> int:
    """``--data FILE -o OUT``: every row of FILE written to OUT with its score columns; the summary to stdout."""
    from bertscore_tm.corpus.tables import WRITES, ColumnFile, file_format, write_scored

    if args.cand is not None or args.ref:
        raise UsageError("--data FILE takes the place of -c/-r: give one or the other")
    if args.seg_level:
        raise UsageError("with --data the per-pair scores are the columns of -o FILE: leave out -s")
    if args.context is not None:
        raise UsageError("--context FILE pairs its lines with -c FILE's: with --data, name a column (--context-column)")
    if args.output is None:
        raise UsageError("--data FILE needs -o FILE (.parquet, .jsonl or .csv): every row, with its scores")
    refs = args.reference_column or ["reference"]
    cand = "candidate" if args.candidate_column is None else args.candidate_column
    data = ColumnFile.open(args.data, cand, refs, args.context_column)
    fmt = file_format(args.output, WRITES, "output")  # an InputFileError: one line, as a UsageError would be
    data.check_writable(fmt)  # a column the output cannot hold: said now, not after the whole corpus is scored
    target = outputs.check_output(args.output, "scores.parquet")
    resampling, shard_size = options.resampling(args), options.shard_size(args)
    cands, groups, several = data.pairs()
    context = data.contexts()
    if not cands:
        raise UsageError(f"data file {args.data} has no rows: nothing to score")
    metric = metrics.scoring_metric(args)
    scores = _score(args, metric, inputs.LinesInMemory(cands, groups), shard_size, context)
    if scores is None:
        return 0
    stacked = scores.stacked()  # P, R, F (and F-beta)
    names = ("precision", "recall", "f1", "f_beta")[: len(stacked)]
    columns = {f"bertscore_{k}": v.cpu().numpy() for k, v in zip(names, stacked.unbind(0), strict=True)}
    if several and scores.best_reference is not None:
        columns["bertscore_best_reference"] = scores.best_reference.cpu().numpy().astype("int64")
    with outputs.replacing(target, args.output) as temp:
        write_scored(data, temp, fmt, columns)
    counts = {len(group) for group in groups}  # references per candidate: None where rows differ
    out.write(_report(args, metric, scores, resampling, args.data, counts.pop() if len(counts) == 1 else None))
    return 0


def _report(
    args: argparse.Namespace,
    metric: Any,
    scores: Any,
    resampling: Resampling | None,
    source: str,
    references: int | None,
    best: bool = False,
) -> str:
    """What `score` prints, in the --format asked for: `source` names the input (for a NaN F1), `references` is
    the references per candidate (None where it varies), `best` adds each pair's best reference to JSON."""
    code, num = scores.hash_code, outputs.json_number
    per = [x.double().cpu().tolist() for x in scores.stacked().unbind(0)]  # P, R, F (and F-beta)
    means = [math.fsum(x) / len(x) for x in per]
    ci = None if resampling is None else f1_interval(resampling, per[2], source)
    names = ["P", "R", "F1"] + ([] if args.beta is None else [f"F{args.beta:g}"])
    if args.format == "tsv":
        lines = _tsv(code, names, means, per, ci, args.seg_level)
    elif args.format == "text":
        lines = [code + "".join(f" {name}: {mean:.6f}" for name, mean in zip(names, means, strict=True))]
        if ci is not None and resampling is not None:
            lines[0] += f" F1 {percent(resampling.confidence)} CI: [{ci[0]:.6f}, {ci[1]:.6f}]"
        lines += ["\t".join(f"{x:.6f}" for x in row) for row in zip(*per, strict=True)] if args.seg_level else []
    else:
        doc: dict[str, Any] = {
            **outputs.setting(metric, args),
            "hash": code,  # the scores' own: it names a context where the pairs had one
            "pairs": len(per[0]),
            "references_per_candidate": references,
            **{key: num(mean) for key, mean in zip(("precision", "recall", "f1"), means[:3], strict=True)},
        }
        if args.beta is not None:
            doc.update(beta=args.beta, f_beta=num(means[3]))
        if ci is not None and resampling is not None:
            doc.update(f1_ci=list(ci), confidence=resampling.confidence, bootstrap=resampling.num_samples)
            doc.update(seed=resampling.seed)
        if args.seg_level:
            keys = ("precision", "recall", "f1", "f_beta")
            doc["segments"] = [{k: num(x) for k, x in zip(keys, row, strict=False)} for row in zip(*per, strict=True)]
            if best and scores.best_reference is not None:  # the index of the reference of highest F1 (F-beta)
                for segment, index in zip(doc["segments"], scores.best_reference.cpu().tolist(), strict=True):
                    segment["best_reference"] = index
        lines = [json.dumps(doc, indent=2)]
    return "".join(line + "\n" for line in lines)


def _tsv(
    code: str, names: list[str], means: list[float], per: list[list[float]], ci: tuple[float, float] | None, seg: bool
) -> list[str]:
    if not seg:
        extra = ([], []) if ci is None else (["F1_low", "F1_high"], list(ci))
        return ["\t".join(["hash", *names, *extra[0]]), f"{code}\t" + "\t".join(repr(x) for x in [*means, *extra[1]])]
    # one row per pair: the hash and the means stay, as comment lines before the table
    lines = [f"# hash\t{code}", "# mean\t" + "\t".join(repr(x) for x in means)]
    if ci is not None:
        lines.append("# f1_ci\t" + "\t".join(repr(x) for x in ci))
    lines.append("\t".join(["line", *names]))
    lines.extend(f"{n}\t" + "\t".join(repr(x) for x in row) for n, row in enumerate(zip(*per, strict=True), start=1))
    return lines
