"""``bertscore-tm`` without a command: bert-score's own command line, its flags spelled as it spells them and
its output line for line, so that a script written for bert-score runs unchanged (docs/migrating.md)."""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence

from bertscore_tm.cli import inputs
from bertscore_tm.cli.errors import PROG, UsageError, one_line
from bertscore_tm.cli.options import CommandParser
from bertscore_tm.cli.outputs import StandardOutput
from bertscore_tm.errors import BERTScoreError


def build_parser() -> argparse.ArgumentParser:
    p = CommandParser(
        prog=PROG,
        description="bert-score's command line: every flag as bert-score 0.3.13 spells it, the output as it "
        "prints it, the scores equal to bert-score run unpadded. The other commands: bertscore-tm --help.",
    )
    p.add_argument("--lang", help="language code (picks the default model and the baseline)")
    p.add_argument("-m", "--model", help="model name or local directory")
    p.add_argument("-l", "--num_layers", type=int, help="use the output of layer N")
    p.add_argument("-b", "--batch_size", type=int, default=64, help="texts per forward pass at most (default: 64)")
    p.add_argument("--nthreads", type=int, help="CPU threads torch uses while scoring")
    p.add_argument("--idf", action="store_true", help="weigh tokens by IDF over the references")
    p.add_argument("--rescale_with_baseline", action="store_true", help="rescale with the model's baseline")
    p.add_argument("--baseline_path", help="with --rescale_with_baseline: a baseline file of yours")
    p.add_argument(
        "--use_fast_tokenizer",
        action="store_false",
        help="as bert-score: the flag turns the fast tokenizer's mark off in the hash code",
    )
    p.add_argument("-s", "--seg_level", action="store_true", help="also print the scores of every pair")
    p.add_argument("-v", "--verbose", action="store_true", help="a progress bar while embedding")
    p.add_argument("-r", "--ref", nargs="+", required=True, help="reference file(s), or reference texts")
    p.add_argument("-c", "--cand", required=True, help="candidate file, or a candidate text")
    return p


def main(argv: Sequence[str], out: StandardOutput) -> int:
    args = build_parser().parse_args(argv)
    cands, refs = _pairs(args.cand, args.ref, args.idf)
    from bertscore_tm.engines.functional import score

    try:
        (p, r, f), hash_code = score(
            cands,
            refs,
            model_type=args.model,
            num_layers=args.num_layers,
            verbose=args.verbose,
            idf=args.idf,
            batch_size=args.batch_size,
            nthreads=args.nthreads,
            lang=args.lang,
            return_hash=True,
            rescale_with_baseline=args.rescale_with_baseline,
            baseline_path=args.baseline_path,
            use_fast_tokenizer=args.use_fast_tokenizer,
        )
    except BERTScoreError as err:  # said without the hint, which spells the commands' flags, not bert-score's
        raise UsageError(one_line(err)) from None
    means = [s.mean(dim=0).item() for s in (p, r, f)]  # as bert-score averages them
    out.write(f"{hash_code} P: {means[0]:.6f} R: {means[1]:.6f} F1: {means[2]:.6f}\n")
    if args.seg_level:
        for row in zip(p.tolist(), r.tolist(), f.tolist(), strict=True):
            out.write("{:.6f}\t{:.6f}\t{:.6f}\n".format(*row))
    return 0


def _pairs(cand: str, refs: list[str], idf: bool) -> tuple[list[str], list[str] | list[list[str]]]:
    """bert-score's reading of -c and -r: a candidate file and reference files of as many lines, or one
    candidate text and its reference texts."""
    if os.path.isfile(cand):
        cands = inputs.read_lines(cand, "candidate")
        mismatch = f"{inputs.input_name(cand, 'candidate')} has {inputs.n_lines(len(cands))}"
        return cands, inputs.references(refs, len(cands), mismatch)
    if os.path.isfile(refs[0]):
        raise UsageError(f"-r names a reference file but candidate file {cand} does not exist")
    if idf:
        raise UsageError("--idf counts document frequencies over a corpus: give -c and -r as files, not one pair")
    cand = inputs.text_argument(cand, "candidate", "-c")
    return [cand], [[inputs.text_argument(r, "reference", "-r") for r in refs]]
