"""The option groups several commands share, each declared once, and read back checked, in the command
line's terms, before anything loads. Choices and defaults are the library's own (`bertscore_tm.settings`)."""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
from pathlib import Path
from typing import Any, NamedTuple

from bertscore_tm.cli.errors import UsageError
from bertscore_tm.errors import ArgumentValueError
from bertscore_tm.models.registry import PACKAGED_MINILM
from bertscore_tm.settings import rules
from bertscore_tm.settings.arguments import LONG_TEXTS, MAX_RESAMPLES, MODEL_DTYPES, SETTINGS, SHARD_SIZE, default

#: Resamples (and shuffles) drawn without --bootstrap.
DEFAULT_RESAMPLES = 1000
#: Where `Once` keeps the options given so far, in the namespace being parsed.
_GIVEN = "_given_once"


class Once(argparse.Action):
    """An option of one value given twice is refused: keeping the last would silently drop the other.
    What was given is kept beside the values, since a default is not given."""

    def __call__(self, parser: Any, namespace: argparse.Namespace, values: Any, option_string: Any = None) -> None:
        given = vars(namespace).setdefault(_GIVEN, {})
        if self.dest in given:
            raise argparse.ArgumentError(
                self, f"given twice ({given[self.dest]} and {values}): it takes one, give it once"
            )
        given[self.dest] = values
        setattr(namespace, self.dest, values)


class CommandParser(argparse.ArgumentParser):
    """A command's parser: an option declared without an action (or with ``store``) is `Once`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.register("action", None, Once)
        self.register("action", "store", Once)


def add_many(p: argparse.ArgumentParser, *flags: str, metavar: str, help: str, required: bool = True) -> None:
    """An option of one or more values that collects every occurrence: ``-r a -r b`` is ``-r a b``."""
    p.add_argument(*flags, required=required, nargs="+", action="extend", metavar=metavar, help=help)


def _help(setting: str) -> str:
    """A setting's help text from the table, without Markdown backquotes."""
    return SETTINGS[setting].help.replace("`", "")


def add_model_options(p: argparse.ArgumentParser, layers: bool = True) -> None:
    help = f"model name or local directory (default: the language's default model; {PACKAGED_MINILM} is packaged)"
    p.add_argument("-m", "--model", metavar="MODEL", help=help)
    if layers:
        help = "use the output of layer N (0 = embeddings; default: the model's tuned layer)"
        p.add_argument("-l", "--num-layers", type=int, metavar="N", help=help)
    lang = default("lang")
    help = f"language code: picks the default model and the packaged baseline (default: {lang})"
    p.add_argument("--lang", default=lang, help=help)
    p.add_argument("--revision", metavar="REV", help=_help("revision"))
    p.add_argument("--offline", action="store_true", help=_help("local_files_only"))
    p.add_argument("--trust-remote-code", action="store_true", help=_help("trust_remote_code"))
    p.add_argument("--no-prefix-space", action="store_true", help=_help("prefix_space"))


def add_metric_options(p: argparse.ArgumentParser, idf: str, *, beta: bool = False, context: str | None = None) -> None:
    """What the metric scores with: the model's options, ``--idf`` (`idf` its help), rescaling, ``--beta`` with
    `beta`, ``--ignore``, the prompts, and ``--context`` where `context` is given (what it adds to the help)."""
    add_model_options(p)
    p.add_argument("--idf", action="store_true", help=idf)
    add_rescale_options(p)
    if beta:
        add_beta_option(p)
    help = "leave tokens out of the matching and weights (still encoded): 'punctuation' or a regex of a whole piece"
    p.add_argument("--ignore", metavar="RULE", help=help)
    for side in ("candidate", "reference"):
        help = f"a fixed prompt before every {side} (e.g. 'query: '), encoded with it and left out of the matching"
        p.add_argument(f"--{side}-prompt", metavar="TEXT", help=help)
    if context is not None:
        help = "a context per candidate line, encoded with the pair, out of the matching (CodeBERTScore's sources)"
        p.add_argument("--context", metavar="FILE", help=help + context)


def add_rescale_options(p: argparse.ArgumentParser) -> None:
    help = "rescale with the packaged baseline of (--lang, model): (x - b) / (1 - b)"
    p.add_argument("--rescale-with-baseline", action="store_true", help=help)
    help = "with --rescale-with-baseline: rescale with this LAYER,P,R,F baseline file instead"
    p.add_argument("--baseline-path", metavar="FILE", help=help)


def add_beta_option(p: argparse.ArgumentParser, what: str | None = None) -> None:
    """``--beta`` (checked by the library); `what`: the help's own words where a command differs."""
    help = what or "also report F-beta, recall weighing B times precision (3: F3), which then picks the best reference"
    p.add_argument("--beta", type=float, metavar="B", help=help)


def add_run_options(p: argparse.ArgumentParser, batch: bool = True) -> None:
    """--long-texts, --window-stride and --device; with `batch` (every command but show) also --batch-size,
    --dtype, --compile and --progress."""
    help = "texts past the model's window: truncate (default, as bert-score), window or sled (docs/long-texts.md)"
    p.add_argument("--long-texts", choices=LONG_TEXTS, default=default("long_texts"), help=help)
    help = "with --long-texts window: tokens between window starts (default: half the window)"
    p.add_argument("--window-stride", type=int, metavar="N", help=help)
    if batch:
        help = "at most N texts per forward pass (default: as many as the token budget allows)"
        p.add_argument("-b", "--batch-size", type=int, metavar="N", help=help)
    p.add_argument("--device", help="torch device, e.g. cpu, cuda, cuda:1 (default: cuda if available, else cpu)")
    if not batch:
        return
    help = "compute dtype of the model: float32 is exact; bfloat16/float16 are faster on GPUs (about 1e-3 error)"
    p.add_argument("--dtype", choices=MODEL_DTYPES, default=default("model_dtype"), help=help)
    help = "run the model through torch.compile: a compilation first, then faster passes (rounding differs slightly)"
    p.add_argument("--compile", action="store_true", help=help)
    help = "show a progress bar on stderr (default: when stderr is a terminal)"
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, help=help)


def add_resampling_options(
    p: argparse.ArgumentParser, confidence: str | None, intervals: str = "the F1 mean", shuffles: bool = False
) -> None:
    """--confidence C (`confidence` its default; None: no interval), --bootstrap N and --seed S, read as
    text and checked by `resampling`, so that a bad value is a one-line error."""
    if confidence is None:
        help = f"add a bootstrap confidence interval of {intervals} at level C, e.g. 0.95 (default: none)"
    else:
        help = f"level of the bootstrap confidence intervals of {intervals}, e.g. 0.95 (default: {confidence})"
    p.add_argument("--confidence", default=confidence, metavar="C", help=help)
    what = " (and, with --method randomization, shuffles)" if shuffles else ""
    help = f"resamples{what} to draw (default: {DEFAULT_RESAMPLES}; at most {MAX_RESAMPLES:,})"
    p.add_argument("--bootstrap", metavar="N", help=help)
    p.add_argument("--seed", metavar="S", help="seed of the resampling: same seed, same numbers (default: 0)")


def add_checkpoint_options(p: argparse.ArgumentParser, items: str, default: int = SHARD_SIZE) -> None:
    """--checkpoint DIR and --shard-size N (`default` shard size) over `items`."""
    p.set_defaults(shard_default=default)
    help = f"keep each finished shard of {items} in DIR: run again to score only the rest (docs/corpus-scale.md)"
    p.add_argument("--checkpoint", metavar="DIR", help=help)
    help = f"{items} per checkpoint shard (default: {default:,}): an interruption loses at most one shard's work"
    p.add_argument("--shard-size", metavar="N", help=help)


def shard_size(args: argparse.Namespace) -> int:
    """--shard-size, checked, and the --checkpoint folder made where missing and probed to take new
    files (with a nameless temporary file)."""
    if args.shard_size is not None and args.checkpoint is None:
        raise UsageError("--shard-size only matters with --checkpoint DIR")
    if args.checkpoint is not None:
        checked_name(args.checkpoint)
        folder = Path(args.checkpoint).expanduser()
        cannot = f"cannot keep a checkpoint in {args.checkpoint}"
        if folder.is_file():  # mkdir would only say "File exists"
            raise UsageError(f"{cannot}: it is a file, not a folder; give a folder (made where missing)")
        try:
            folder.mkdir(parents=True, exist_ok=True)
            tempfile.TemporaryFile(dir=folder).close()
        except OSError as err:
            raise UsageError(f"{cannot}: {err.strerror or err}") from None
    given = str(args.shard_default) if args.shard_size is None else args.shard_size
    return _whole(given, "--shard-size", "inputs per checkpoint shard", 1)


def checked_name(path: str) -> None:
    """A file or folder name the settings' path rule takes (not blank, one the file system can encode)."""
    try:
        rules.path()("the name", path)
    except ArgumentValueError as err:
        raise UsageError(f"cannot write {path!r}: {err}") from None


def progress(args: argparse.Namespace) -> bool:
    return sys.stderr.isatty() if args.progress is None else bool(args.progress)


class Resampling(NamedTuple):
    confidence: float
    num_samples: int
    seed: int


def resampling(args: argparse.Namespace) -> Resampling | None:
    """--confidence, --bootstrap and --seed, checked; None without --confidence."""
    if args.confidence is None:
        given = [flag for flag, value in (("--bootstrap", args.bootstrap), ("--seed", args.seed)) if value is not None]
        if given:
            verb = "matters" if len(given) == 1 else "matter"
            raise UsageError(f"{' and '.join(given)} only {verb} with --confidence: add e.g. --confidence 0.95")
        return None
    try:
        confidence = float(args.confidence)
    except ValueError:
        raise UsageError(f"--confidence must be a number between 0 and 1, e.g. 0.95; got {args.confidence}") from None
    if not (math.isfinite(confidence) and 0 < confidence < 1):
        hint = f" (a fraction: {confidence / 100:g}, not {args.confidence})" if 1 < confidence < 100 else ""
        raise UsageError(f"--confidence must be between 0 and 1 (exclusive), e.g. 0.95; got {args.confidence}{hint}")
    resamples = str(DEFAULT_RESAMPLES) if args.bootstrap is None else args.bootstrap
    num_samples = _whole(resamples, "--bootstrap", "resamples", 1, MAX_RESAMPLES)
    seed = _whole("0" if args.seed is None else args.seed, "--seed", "the resampling's random seed", 0, 2**64 - 1)
    return Resampling(confidence, num_samples, seed)


def _whole(value: str, flag: str, what: str, minimum: int, maximum: int | None = None) -> int:
    """
    >>> _whole("1.5", "--seed", "a seed", 0)
    Traceback (most recent call last):
    ...
    bertscore_tm.cli.errors.UsageError: --seed must be a whole number (a seed), got 1.5
    """
    try:
        number = int(value)
    except ValueError:
        raise UsageError(f"{flag} must be a whole number ({what}), got {value}") from None
    if number < minimum or (maximum is not None and number > maximum):
        upper = "" if maximum is None else f" and at most {maximum:,}"
        raise UsageError(f"{flag} must be at least {minimum}{upper} ({what}), got {value}")
    return number
