"""The `bertscore-tm` command line (also `python -m bertscore_tm`).

Subcommands:

* ``score``: candidates and references from files, one text per line; corpus means, per-pair scores.
* ``show``: the token-by-token similarity matrix of one pair as a heatmap (PNG, needs matplotlib).
* ``baseline``: a rescale baseline (``LAYER,P,R,F``) from random pairs of a monolingual corpus.

User errors (a missing or empty file, files of different lengths, a model or baseline that is not on this
machine, a bad setting) print one line, ``bertscore-tm: error: ...``, on stderr and exit with code 2.
Input files, the model's presence and the baseline are checked before any model is loaded.

``score`` and ``baseline`` also run on torch's launcher (``torchrun --nproc-per-node N -m bertscore_tm ...``):
each process scores a shard of the lines and rank 0 writes the output (`bertscore_tm.launch`); ``score``
reads its files as a stream, in chunks (`bertscore_tm.corpus`).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

PROG = "bertscore-tm"
_DTYPES = ("float32", "bfloat16", "float16")


class UsageError(Exception):
    """A problem with what the user asked for: reported in one line, exit code 2."""


# -- input files ---------------------------------------------------------------------------------------------


def read_lines(path: str, what: str) -> list[str]:
    """The lines of a UTF-8 text file (\\n, \\r\\n or \\r endings), checked to exist and hold at least one."""
    file = Path(path).expanduser()
    if not file.exists():
        raise UsageError(f"{what} file {path} does not exist")
    if not file.is_file():
        raise UsageError(f"{what} file {path} is not a file")
    try:
        with file.open(encoding="utf-8") as fh:  # universal newlines, like iterating over the file
            text = fh.read()
    except UnicodeDecodeError as err:
        raise UsageError(f"{what} file {path} is not UTF-8 text ({err.reason} at byte {err.start})") from None
    except OSError as err:
        raise UsageError(f"cannot read {what} file {path}: {err.strerror or err}") from None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the newline that ends the last line
    if not lines:
        raise UsageError(f"{what} file {path} is empty")
    return lines


def _dtype(name: str) -> Any:
    import torch

    return {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[name]


def _device(name: str | None) -> str:
    """The device to run on: as asked (checked to exist), else cuda if available, else cpu."""
    import torch

    if name is None:
        return "cuda" if torch.cuda.is_available() else "cpu"
    try:
        device = torch.device(name)
    except (RuntimeError, ValueError) as err:
        raise UsageError(f"--device {name} is not a torch device ({_one_line(err)})") from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise UsageError(f"--device {name}: CUDA is not available on this machine (torch {torch.__version__})")
    if device.type == "cuda" and device.index is not None and device.index >= torch.cuda.device_count():
        raise UsageError(f"--device {name}: this machine has {torch.cuda.device_count()} CUDA device(s)")
    return name


def _make_metric(**kwargs: Any) -> Any:
    """A BERTScore metric; a bad setting (layer out of range, unreadable model or baseline) is a user error."""
    from bertscore_tm.errors import BaselineNotFoundError, ModelNotFoundError
    from bertscore_tm.metric import BERTScore

    if kwargs.get("batch_size") is not None and kwargs["batch_size"] < 1:
        raise UsageError(f"--batch-size must be at least 1, got {kwargs['batch_size']}")
    try:
        return BERTScore(**kwargs)
    except (ModelNotFoundError, BaselineNotFoundError):
        raise
    except (ValueError, TypeError, OSError) as err:
        message = _one_line(err).replace("pass num_layers=<int>", "pass -l N")
        raise UsageError(f"cannot set up {kwargs.get('model_name_or_path')}: {message}") from None


def _model_name(args: argparse.Namespace) -> str:
    """The model asked for (or the language's default), checked to be on this machine before anything loads."""
    from bertscore_tm.loading import resolve_model_path
    from bertscore_tm.registry import default_model

    name = args.model if args.model is not None else default_model(args.lang)
    resolve_model_path(name)  # ModelNotFoundError first, before any other complaint about the model
    return name


def _check_baseline(args: argparse.Namespace, model_name: str) -> None:
    """Fail before loading any model when rescaling is asked for and the baseline is not there."""
    if args.baseline_path is not None:
        args.rescale_with_baseline = True  # a baseline file means: rescale with it
    if args.rescale_with_baseline:
        from bertscore_tm.baselines import find_baseline

        find_baseline(args.lang, model_name, args.baseline_path)


def _rescalable_metric(args: argparse.Namespace, device: str | None = None, **extra: Any) -> Any:
    """The metric `score` and `show` use: model, layer, language, rescaling and device from the command line
    (`device`, where given, is the device already chosen for this process)."""
    model_name = _model_name(args)
    _check_baseline(args, model_name)
    return _make_metric(
        model_name_or_path=model_name,
        num_layers=args.num_layers,
        lang=args.lang,
        rescale_with_baseline=args.rescale_with_baseline,
        baseline_path=args.baseline_path,
        device=_device(args.device) if device is None else device,
        **extra,
    )


def _progress(args: argparse.Namespace) -> bool:
    """Show progress bars: as asked, else when stderr is a terminal."""
    if args.progress is not None:
        return bool(args.progress)
    return sys.stderr.isatty()


# -- score ---------------------------------------------------------------------------------------------------


def _score(args: argparse.Namespace, out: TextIO) -> int:
    from bertscore_tm.corpus import ParallelFiles
    from bertscore_tm.launch import processes

    files = ParallelFiles.open(args.cand, args.ref)  # checked and counted, not read into memory
    with processes(_device(args.device)) as run:
        metric = _rescalable_metric(
            args,
            device=run.device,
            idf=args.idf,
            batch_size=args.batch_size,
            model_dtype=_dtype(args.dtype),
            verbose=_progress(args) and run.writes_output,
        )
        for cands, targets in files.chunks(*run.shard(len(files))):
            metric.update(cands, targets)
        with warnings.catch_warnings():  # a process without lines (fewer lines than processes) is fine
            warnings.filterwarnings("ignore", message=r".*was called before the ``update`` method")
            result = metric.compute()
    if not run.writes_output:
        return 0
    assert isinstance(result, dict)
    p, r, f = (result[k].double().cpu().tolist() for k in ("precision", "recall", "f1"))
    means = [math.fsum(x) / len(x) for x in (p, r, f)]
    code = metric.hash_code

    if args.format == "text":
        out.write(f"{code} P: {means[0]:.6f} R: {means[1]:.6f} F1: {means[2]:.6f}\n")
        if args.seg_level:
            for row in zip(p, r, f):
                out.write("\t".join(f"{x:.6f}" for x in row) + "\n")
    elif args.format == "json":
        doc: dict[str, Any] = {
            "hash": code,
            "model": metric.model_name,
            "num_layers": metric.num_layers,
            "idf": args.idf,
            "rescaled": args.rescale_with_baseline,
            "pairs": len(files),
            "references_per_candidate": len(args.ref),
            "precision": _num(means[0]),
            "recall": _num(means[1]),
            "f1": _num(means[2]),
        }
        if args.seg_level:
            doc["segments"] = [{"precision": _num(a), "recall": _num(b), "f1": _num(c)} for a, b, c in zip(p, r, f)]
        out.write(json.dumps(doc, indent=2) + "\n")
    else:  # tsv
        if args.seg_level:
            out.write("line\tP\tR\tF1\n")
            for n, row in enumerate(zip(p, r, f), start=1):
                out.write(f"{n}\t" + "\t".join(repr(x) for x in row) + "\n")
        else:
            out.write("hash\tP\tR\tF1\n")
            out.write(f"{code}\t" + "\t".join(repr(x) for x in means) + "\n")
    return 0


def _num(x: float) -> float | None:
    """A score for JSON: NaN (possible with --idf, as in the reference) becomes null."""
    return x if math.isfinite(x) else None


# -- show ----------------------------------------------------------------------------------------------------


def _show(args: argparse.Namespace, out: TextIO) -> int:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise UsageError("show needs matplotlib: pip install 'bertscore-tm[plot]' (or pip install matplotlib)") from None
    if not args.cand.strip() or not args.ref.strip():
        raise UsageError("show needs a non-blank candidate (-c) and reference (-r) text")
    target = Path(args.file).expanduser()
    if target.parent and not target.parent.is_dir():
        raise UsageError(f"cannot write {args.file}: the folder {target.parent} does not exist")
    metric = _rescalable_metric(args)
    from bertscore_tm.plotting import plot_similarity

    try:
        scores = plot_similarity(metric, args.cand, args.ref, target)
    except OSError as err:
        raise UsageError(f"cannot write {args.file}: {err.strerror or _one_line(err)}") from None
    out.write(f"{scores.hash_code} P: {scores.precision:.6f} R: {scores.recall:.6f} F1: {scores.f1:.6f}\n")
    out.write(f"Saved the similarity matrix to {target}\n")
    return 0


# -- baseline ------------------------------------------------------------------------------------------------


def _baseline(args: argparse.Namespace, out: TextIO) -> int:
    lines = read_lines(args.corpus, "corpus")
    if args.pairs < 1:
        raise UsageError(f"--pairs must be at least 1, got {args.pairs}")
    from bertscore_tm.baseline_building import distinct_lines

    distinct = len(distinct_lines(lines))
    if distinct < 2 * args.pairs:
        raise UsageError(
            f"corpus file {args.corpus} has {distinct} distinct non-blank lines, but --pairs {args.pairs} needs "
            f"{2 * args.pairs} (each line is used at most once): use a larger corpus or fewer pairs"
        )
    target = Path(args.output).expanduser()
    if target.is_dir():
        raise UsageError(f"cannot write {args.output}: it is a folder; give a file name such as {target / 'baseline.tsv'}")
    model_name = _model_name(args)

    from bertscore_tm.baseline_building import layer_means, sample_pairs, write_baseline

    from bertscore_tm.launch import processes

    cands, refs = sample_pairs(lines, args.pairs, args.seed)
    with processes(_device(args.device)) as run:
        metric = _make_metric(
            model_name_or_path=model_name,
            all_layers=True,  # every layer is scored, so a model without a tabled default layer is fine
            lang=args.lang,
            batch_size=args.batch_size,
            device=run.device,
            model_dtype=_dtype(args.dtype),
            verbose=_progress(args) and run.writes_output,
        )
        start, stop = run.shard(len(cands))
        with warnings.catch_warnings():  # a process without pairs (fewer pairs than processes) is fine
            warnings.filterwarnings("ignore", message=r".*was called before the ``update`` method")
            table = layer_means(metric, cands[start:stop], refs[start:stop])
    if not run.writes_output:
        return 0
    try:
        write_baseline(target, table)
    except OSError as err:
        raise UsageError(f"cannot write {args.output}: {err.strerror or err}") from None
    out.write(
        f"Wrote the baseline of {model_name} ({table.shape[0]} layers, {args.pairs} pairs of {distinct} distinct "
        f"lines, seed {args.seed}) to {target}\n"
    )
    return 0


# -- the parser ----------------------------------------------------------------------------------------------


def _add_model_options(p: argparse.ArgumentParser, layers: bool = True) -> None:
    p.add_argument(
        "-m", "--model", default=None, metavar="MODEL",
        help="model name or local directory (default: the language's default model; "
        "'sentence-transformers/all-MiniLM-L6-v2' is the packaged one, always available)",
    )
    if layers:
        p.add_argument("-l", "--num-layers", type=int, default=None, metavar="N",
                       help="use the output of layer N (0 = embeddings; default: the model's tuned layer)")
    p.add_argument("--lang", default="en", help="language code: picks the default model and the packaged baseline (default: en)")


def _add_rescale_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--rescale-with-baseline", action="store_true",
                   help="rescale with the packaged baseline of (--lang, model): (x - b) / (1 - b)")
    p.add_argument("--baseline-path", default=None, metavar="FILE",
                   help="rescale with this LAYER,P,R,F baseline file instead (implies --rescale-with-baseline)")


def _add_run_options(p: argparse.ArgumentParser, batch: bool = True) -> None:
    if batch:
        p.add_argument("-b", "--batch-size", type=int, default=None, metavar="N",
                       help="at most N texts per forward pass (default: as many as the token budget allows)")
    p.add_argument("--device", default=None, help="torch device, e.g. cpu, cuda, cuda:1 (default: cuda if available, else cpu)")
    if batch:
        p.add_argument("--dtype", choices=_DTYPES, default="float32",
                       help="compute dtype of the model: float32 is exact; bfloat16/float16 are faster on GPUs (about 1e-3 error)")
        p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                       help="show a progress bar on stderr (default: when stderr is a terminal)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="BERTScore from the command line: exact scores (equal to bert-score 0.3.13), similarity "
        "plots and rescale baselines. Models are never downloaded: use a local directory, a model in the "
        "Hugging Face cache, or the packaged sentence-transformers/all-MiniLM-L6-v2.",
    )
    from bertscore_tm import __version__

    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    s = sub.add_parser(
        "score", help="score candidate lines against reference lines",
        description="Score a file of candidates against one or more files of references, one text per line "
        "(line i of every reference file is a reference for candidate i; with several, the best counts). "
        "Prints '<hash> P: .. R: .. F1: ..' (corpus means) and, with -s, one 'P<TAB>R<TAB>F1' line per candidate.",
    )
    s.add_argument("-c", "--cand", required=True, metavar="FILE", help="candidates, one per line")
    s.add_argument("-r", "--ref", required=True, nargs="+", metavar="FILE", help="references, one per line; several files give several references per candidate")
    _add_model_options(s)
    s.add_argument("--idf", action="store_true", help="weigh tokens by inverse document frequency over the references")
    _add_rescale_options(s)
    s.add_argument("-s", "--seg-level", action="store_true", help="also print the scores of every pair, in input order")
    s.add_argument("--format", choices=("text", "json", "tsv"), default="text", help="output format (default: text)")
    _add_run_options(s)
    s.set_defaults(run=_score)

    v = sub.add_parser(
        "show", help="plot the token similarity matrix of one pair",
        description="Draw the cosine similarity of every candidate token with every reference token as a "
        "heatmap, values in the cells, P/R/F1 in the title (special tokens are hidden, as in bert-score's "
        "plot_example). With rescaling, cells and scores are rescaled (cells with the F baseline).",
    )
    v.add_argument("-c", "--cand", required=True, metavar="TEXT", help="candidate text")
    v.add_argument("-r", "--ref", required=True, metavar="TEXT", help="reference text")
    v.add_argument("-f", "--file", required=True, metavar="OUT.png", help="where to write the picture (format from the extension)")
    _add_model_options(v)
    _add_rescale_options(v)
    _add_run_options(v, batch=False)
    v.set_defaults(run=_show)

    b = sub.add_parser(
        "baseline", help="compute a rescale baseline from a monolingual corpus",
        description="Draw --pairs random candidate/reference pairs of distinct corpus lines (no line used "
        "twice; seeded, so reproducible), score them at every layer (no idf, no rescaling) and write the mean "
        "P, R, F per layer as a LAYER,P,R,F file, usable with --baseline-path or, placed at "
        "baselines/LANG/MODEL.tsv, with --lang.",
    )
    b.add_argument("--corpus", required=True, metavar="FILE", help="monolingual corpus, one sentence per line")
    _add_model_options(b, layers=False)
    b.add_argument("--pairs", type=int, default=1000, metavar="N", help="number of random pairs (default: 1000; needs 2N distinct lines)")
    b.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    b.add_argument("-o", "--output", required=True, metavar="OUT.tsv", help="where to write the baseline")
    _add_run_options(b)
    b.set_defaults(run=_baseline)
    return parser


# -- entry point ---------------------------------------------------------------------------------------------


def _show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                  file: TextIO | None = None, line: str | None = None) -> None:
    print(f"{PROG}: warning: {message}", file=sys.stderr if file is None else file)


def _user_errors() -> tuple[type[BaseException], ...]:
    """UsageError, and the package's not-found and input-file errors (bertscore_tm.errors imports nothing heavy)."""
    from bertscore_tm.errors import BaselineNotFoundError, InputFileError, ModelNotFoundError

    return (UsageError, ModelNotFoundError, BaselineNotFoundError, InputFileError)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (0, or 2 for a user error)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    previous = warnings.showwarning
    warnings.showwarning = _show_warning
    try:
        return int(args.run(args, sys.stdout))
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (`... | head`): stop quietly, as other tools do
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return 1
    except Exception as err:  # noqa: BLE001 - user errors are reported in one line, anything else is a bug
        if isinstance(err, _user_errors()):
            from bertscore_tm.launch import reports_errors

            if reports_errors():  # under torchrun every process finds the mistake; rank 0 says it once
                print(f"{PROG}: error: {_one_line(err)}{_hint(err)}", file=sys.stderr)
            return 2
        raise
    finally:
        warnings.showwarning = previous


def _hint(err: BaseException) -> str:
    """The command-line spelling of what the library's not-found messages say in Python terms."""
    name = type(err).__name__
    if name == "ModelNotFoundError":
        return " On the command line: -m /path/to/local/model (with -l N where the model has no tuned default layer)."
    if name == "BaselineNotFoundError" and "baseline_path=" in str(err):
        return " On the command line: --baseline-path baseline.tsv, or leave out --rescale-with-baseline."
    return ""


def _one_line(err: BaseException) -> str:
    return " ".join((str(err) or type(err).__name__).split())


if __name__ == "__main__":
    sys.exit(main())
