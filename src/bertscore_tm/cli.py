"""The `bertscore-tm` command line (also `python -m bertscore_tm`).

Subcommands:

* ``score``: candidates and references from files, one text per line; corpus means, per-pair scores.
* ``show``: the token-by-token similarity matrix of one pair as a heatmap (PNG, needs matplotlib).
* ``baseline``: a rescale baseline (``LAYER,P,R,F``) from random pairs of a monolingual corpus.
* ``compare``: several systems against the same references: F1 intervals and paired significance tests.
* ``pairwise``: every candidate line against every reference line, an N x M matrix (TSV or JSON).
* ``mbr``: minimum-Bayes-risk selection, the hypothesis of each group that agrees most with the others.

User errors (a missing or empty file, files of different lengths, a model or baseline that is not on this
machine, a bad setting, an unusable device, an output that cannot be written, standard output included, any of
the library's `bertscore_tm.errors.BERTScoreError`) print one line, ``bertscore-tm: error: ...``, on stderr and
exit with code 2. Input files, output paths (never one of the inputs), the device, the model's presence and
weights files and the baseline are checked before any model is loaded. A file argument of ``-`` is standard
input (one of them at most). Options that take several files (``-r``, compare's ``-c``) collect every
occurrence (``-r a -r b`` is ``-r a b``); an option that takes one is refused when given twice.

``score``, ``compare``, ``pairwise`` and ``baseline`` also run on torch's launcher (``torchrun
--nproc-per-node N -m bertscore_tm ...``, `bertscore_tm.launch`): each process scores a contiguous shard of the
lines (``pairwise``: of the candidate rows) and rank 0 writes the output, the same as one process's. ``show``
and ``mbr`` refuse to run on several processes. ``score`` reads its files as a stream, in chunks
(`bertscore_tm.corpus`), so a file of millions of lines is never held as millions of strings.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import os
import sys
import tempfile
import warnings
import zipfile
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple, TextIO

from bertscore_tm.errors import BERTScoreError
from bertscore_tm.launch import Processes, launched, local_device, processes

PROG = "bertscore-tm"
STDIN = "-"
_DTYPES = ("float32", "bfloat16", "float16")
_LONG_TEXTS = ("truncate", "window")  # bertscore_tm.arguments.LONG_TEXTS


class UsageError(Exception):
    """A problem with what the user asked for, in the command line's terms: reported in one line, exit code 2."""


# -- input files ---------------------------------------------------------------------------------------------


def read_lines(path: str, what: str) -> list[str]:
    """The lines of a UTF-8 text file, or of standard input for ``-`` (\\n, \\r\\n or \\r endings), checked to
    hold at least one."""
    text = _read_stdin(what) if path == STDIN else _read_file(path, what)
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the newline that ends the last line
    if not lines:
        raise UsageError(f"{_input_name(path, what)} is empty")
    return lines


def _input_name(path: str, what: str) -> str:
    """How messages name an input: ``candidate file x.txt``, or ``candidate file - (standard input)``."""
    return f"{what} file {path}" + (" (standard input)" if path == STDIN else "")


def _read_file(path: str, what: str) -> str:
    """A file's text, checked to exist and to be UTF-8; universal newlines, like iterating over the file."""
    file = Path(path).expanduser()
    if not file.exists():
        raise UsageError(f"{what} file {path} does not exist")
    if not file.is_file():
        from bertscore_tm.corpus import not_a_file

        raise UsageError(f"{what} file {path} {not_a_file(file)}")
    try:
        with file.open(encoding="utf-8") as fh:
            return fh.read()
    except UnicodeDecodeError as err:
        raise UsageError(f"{what} file {path} is not UTF-8 text ({err.reason} at byte {err.start})") from None
    except OSError as err:
        raise UsageError(f"cannot read {what} file {path}: {err.strerror or err}") from None


def _read_stdin(what: str) -> str:
    """Standard input read as bytes and decoded as UTF-8, as the files are (not in the locale's encoding,
    which a pipe does not follow), with the same universal newlines."""
    if sys.stdin is None:
        raise UsageError(f"{_input_name(STDIN, what)}: this process has no standard input")
    stream = getattr(sys.stdin, "buffer", None)
    data = stream.read() if stream is not None else sys.stdin.read().encode("utf-8")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise UsageError(f"{_input_name(STDIN, what)} is not UTF-8 text ({err.reason} at byte {err.start})") from None
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _check_stdin(paths: Sequence[str], flags: str) -> None:
    """Standard input can be read once (a second ``-`` would silently get nothing), and by one process: under
    torchrun the lines must come from files every process reads."""
    if sum(path == STDIN for path in paths) > 1:
        raise UsageError(
            f"standard input (-) can be read only once: give at most one of {flags} as -, the others as files"
        )
    if STDIN in paths and launched()[1] > 1:
        raise UsageError(
            "standard input (-) cannot be shared by the processes torchrun starts: give every input as a file "
            "(at the same path on every node)"
        )


def _text_argument(text: str, what: str, flag: str) -> str:
    """A text given on the command line, checked to be UTF-8: bytes that are not arrive as lone surrogates
    (Python's surrogateescape), which no tokenizer accepts."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as err:
        code = ord(text[err.start])
        what_it_is = f"the byte 0x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"a lone surrogate U+{code:04X}"
        raise UsageError(
            f"the {what} text ({flag}) is not UTF-8: it holds {what_it_is} at character {err.start}"
        ) from None
    return text


# -- outputs -------------------------------------------------------------------------------------------------


def _check_output(path: str, example: str, inputs: Sequence[str] = ()) -> Path:
    """The file an output option names, checked before any model loads: not a folder, not one of the `inputs`,
    in a folder that exists, and writable (probed with a nameless temporary file, so nothing is left behind, and
    so that it holds for root and read-only file systems too). Nothing is written to it until the results are
    there."""
    target = Path(path).expanduser()
    if target.is_dir():
        raise UsageError(f"cannot write {path}: it is a folder; give a file name such as {target / example}")
    _not_an_input(target, path, inputs)
    folder = target.parent
    if not folder.is_dir():
        reason = f"{folder} is not a folder" if folder.exists() else f"the folder {folder} does not exist"
        raise UsageError(f"cannot write {path}: {reason}")
    if target.exists():
        if not os.access(target, os.W_OK):
            raise UsageError(f"cannot write {path}: permission denied")
        return target
    try:
        tempfile.TemporaryFile(dir=folder).close()
    except OSError as err:
        raise UsageError(f"cannot write {path}: {err.strerror or _one_line(err)}") from None
    return target


def _not_an_input(target: Path, name: str, inputs: Sequence[str]) -> None:
    """Refuse an output that is one of the input files: writing the results would overwrite it (compared as
    files, so another spelling of the same path, or a link to it, counts too)."""
    for path in inputs:
        if path == STDIN:
            continue
        try:
            same = target.exists() and os.path.samefile(target, Path(path).expanduser())
        except OSError:
            same = False
        if same:
            raise UsageError(
                f"cannot write {name}: it is the input file {path}, which the results would overwrite; "
                "give another output file"
            )


def _image_target(path: str) -> tuple[Path, str]:
    """The file `show -f` really writes and its format, checked before any model loads. As matplotlib's
    savefig: the format is the extension, else ``savefig.format`` (png), whose extension is then added."""
    import matplotlib

    if Path(path).expanduser().is_dir():
        _check_output(path, "similarity.png")  # says it is a folder
    name = path
    fmt = os.path.splitext(path)[1][1:]
    if not fmt:
        fmt = str(matplotlib.rcParams["savefig.format"])
        name = path.rstrip(".") + "." + fmt
    _check_image_format(name, fmt.lower())
    return _check_output(name, "similarity.png"), fmt.lower()


def _check_image_format(name: str, fmt: str) -> None:
    """Fail early on a format matplotlib cannot write here: unknown to it, or needing what this machine lacks
    (pgf needs a TeX installation; some formats need a Pillow built with their codec). A tiny figure with a
    text is drawn in that format, in memory, which is what the real picture needs."""
    from matplotlib.backend_bases import FigureCanvasBase
    from matplotlib.figure import Figure

    known = sorted(FigureCanvasBase.get_supported_filetypes())
    advice = "use .png (or one of " + ", ".join(known) + ")"
    if fmt not in known:
        raise UsageError(f"cannot write {name}: matplotlib writes no '{fmt}' images; {advice}")
    probe = Figure(figsize=(1, 1))
    probe.text(0.5, 0.5, "x")
    try:
        probe.savefig(io.BytesIO(), format=fmt)
    except Exception as err:
        raise UsageError(
            f"cannot write {name}: matplotlib cannot write {fmt} on this machine ({_one_line(err)}); {advice}"
        ) from None


def _dtype(name: str) -> Any:
    import torch

    return {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[name]


def _device(name: str | None) -> str:
    """The device to run on: as asked, checked to hold tensors here (before any model loads), else cuda if
    available, else cpu."""
    import torch

    if name is None:
        return "cuda" if torch.cuda.is_available() else "cpu"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch warns that some names ('mkldnn') are going away
        try:
            device = torch.device(name)
        except (RuntimeError, ValueError) as err:
            raise UsageError(f"--device {name} is not a torch device ({_one_line(err)})") from None
    if device.type == "meta":
        raise UsageError(
            f"--device {name}: meta tensors have shapes but no values, so nothing can be scored there; "
            f"use {_usable_devices()}"
        )
    if device.type == "cuda" and not torch.cuda.is_available():
        raise UsageError(f"--device {name}: CUDA is not available on this machine (torch {torch.__version__})")
    if device.type == "cuda" and device.index is not None and device.index >= torch.cuda.device_count():
        raise UsageError(f"--device {name}: this machine has {torch.cuda.device_count()} CUDA device(s)")
    if device.type != "cpu":
        try:
            torch.empty(1, device=device)
        except Exception:
            raise UsageError(
                f"--device {name} is not available on this machine (torch {torch.__version__} cannot put a tensor "
                f"there); use {_usable_devices()}"
            ) from None
    return name


def _process_device(name: str | None) -> str:
    """`_device`, and under torchrun (WORLD_SIZE > 1) a bare ``cuda`` becomes this process's GPU (LOCAL_RANK),
    checked there (so no process touches another's GPU); a GPU named by its index is refused there, since every
    process would take that one GPU."""
    _, world, local_rank = launched()
    if world <= 1:
        return _device(name)
    if name is not None and _cuda_index(name) is not None:
        raise UsageError(
            f"--device {name}: torchrun started {world} processes, and each uses the GPU of its LOCAL_RANK; "
            "pass --device cuda (or choose the GPUs with CUDA_VISIBLE_DEVICES)"
        )
    if name is None:
        import torch

        name = "cuda" if torch.cuda.is_available() else "cpu"
    return _device(local_device(name, local_rank))


def _cuda_index(name: str) -> int | None:
    """The index of a CUDA device name ("cuda:1" -> 1); None for anything else (an unparsable name included:
    `_device` says what is wrong with it)."""
    import torch

    try:
        device = torch.device(name)
    except (RuntimeError, ValueError):
        return None
    return device.index if device.type == "cuda" else None


def _one_process(command: str) -> None:
    """Refuse a subcommand that does not split its work across processes when torchrun started several."""
    world = launched()[1]
    if world > 1:
        raise UsageError(
            f"{command} runs in one process; torchrun started {world} (WORLD_SIZE={world}): run it without torchrun "
            "(score, compare, pairwise and baseline run on several processes)"
        )


def _usable_devices() -> str:
    import torch

    return "cpu or cuda" if torch.cuda.is_available() else "cpu (this machine has no CUDA device)"


def _make_metric(**kwargs: Any) -> Any:
    """A BERTScore metric; a bad setting (layer out of range, unreadable model or baseline) is a user error."""
    from bertscore_tm.metric import BERTScore

    try:
        return BERTScore(**kwargs)
    except BERTScoreError:
        raise  # reported with a hint from its fields
    except (ValueError, TypeError, OSError) as err:
        raise UsageError(f"cannot set up {kwargs.get('model_name_or_path')}: {_one_line(err)}") from None
    except Exception as err:
        if not isinstance(err, _weights_read_errors()):
            raise
        folder = _model_folder(str(kwargs["model_name_or_path"]))
        raise UsageError(
            f"cannot read the weights of the model in {folder} ({', '.join(str(f) for f in _weights_files(folder))}): "
            f"{_one_line(err)}; the files are damaged: download the model again"
        ) from None


def _check_run_options(args: argparse.Namespace) -> None:
    """The numeric options, in their own terms, before anything is loaded."""
    if getattr(args, "batch_size", None) is not None and args.batch_size < 1:
        raise UsageError(f"--batch-size must be at least 1, got {args.batch_size}")
    if getattr(args, "num_layers", None) is not None and args.num_layers < 0:
        raise UsageError(f"-l/--num-layers must be 0 or more (0 = the embeddings), got {args.num_layers}")


def _model_name(args: argparse.Namespace) -> str:
    """The model asked for (or the language's default), checked to be on this machine, with weights files
    that are whole, before anything loads."""
    from bertscore_tm.registry import default_model

    name = args.model if args.model is not None else default_model(args.lang)
    _check_weights(_model_folder(name))  # ModelNotFoundError first, before any other complaint about the model
    return name


def _model_folder(name: str) -> Path:
    """The model's folder on this machine; ModelNotFoundError (from bertscore_tm.errors) otherwise."""
    from bertscore_tm.loading import resolve_model_path

    return resolve_model_path(name)


def _check_baseline(args: argparse.Namespace, model_name: str) -> None:
    """Fail before loading any model when rescaling is asked for and the baseline is not there."""
    if args.baseline_path is not None:
        args.rescale_with_baseline = True  # a baseline file means: rescale with it
    if not args.rescale_with_baseline:
        return
    from bertscore_tm.baselines import find_baseline, read_baseline

    read_baseline(find_baseline(args.lang, model_name, args.baseline_path))  # a malformed file, before the model


def _check_layer(args: argparse.Namespace, model_name: str) -> None:
    """A model without a tuned default layer needs -l: said in the command line's terms, before loading it."""
    from bertscore_tm.registry import is_known_model

    if args.num_layers is None and not is_known_model(model_name):
        raise UsageError(
            f"no default layer is known for {model_name}: pass -l N (0 = the embeddings, up to the model's depth; "
            "configs/models.json lists the models with a tuned default layer)"
        )


def _long_texts(args: argparse.Namespace) -> dict[str, Any]:
    """The metric's long-text arguments from --long-texts and --window-stride, checked before anything loads
    (a stride past the model's window is reported by the metric, which knows the window)."""
    if args.window_stride is not None and args.long_texts != "window":
        raise UsageError(f"--window-stride {args.window_stride} needs --long-texts window")
    if args.window_stride is not None and args.window_stride < 1:
        raise UsageError(f"--window-stride must be at least 1 (and below the window's size), got {args.window_stride}")
    return {"long_texts": args.long_texts, "window_stride": args.window_stride}


def _rescalable_metric(args: argparse.Namespace, **extra: Any) -> Any:
    """The metric `score` and `show` use: model, layer, language, rescaling and device from the command line,
    each checked before the model loads (under torchrun a bare ``cuda`` is the process's own GPU)."""
    _check_run_options(args)
    long_texts = _long_texts(args)
    model_name = _model_name(args)
    _check_layer(args, model_name)
    _check_baseline(args, model_name)
    device = _process_device(args.device)
    return _make_metric(
        model_name_or_path=model_name,
        num_layers=args.num_layers,
        lang=args.lang,
        rescale_with_baseline=args.rescale_with_baseline,
        baseline_path=args.baseline_path,
        device=device,
        compile_model=getattr(args, "compile", False),
        **long_texts,
        **extra,
    )


# -- weights files: whole, before the model loads --------------------------------------------------------------

#: What transformers reads from a model folder, in its order of preference: one file, or an index of shards.
_WEIGHTS = (
    ("model.safetensors", "model.safetensors.index.json"),
    ("pytorch_model.bin", "pytorch_model.bin.index.json"),
)


def _weights_files(folder: Path) -> list[Path]:
    """The weights files transformers will read from `folder` (none: transformers then says what is missing)."""
    for single, index in _WEIGHTS:
        if (folder / single).is_file():
            return [folder / single]
        if (folder / index).is_file():
            try:
                shards = json.loads((folder / index).read_text(encoding="utf-8"))["weight_map"].values()
                return [folder / str(shard) for shard in sorted(set(shards))]
            except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
                raise UsageError(
                    f"the weights index {folder / index} is damaged ({_one_line(err)}): download the model again"
                ) from None
    return []


def _check_weights(folder: Path) -> None:
    """A cut-short or empty weights file is found from its structure (headers, sizes), without loading it, and
    reported naming the file instead of the loader's traceback."""
    for file in _weights_files(folder):
        problem = _weights_problem(file)
        if problem is not None:
            raise UsageError(
                f"the weights file {file} {problem}: the model folder is damaged or incomplete; "
                "download the model again"
            )


def _weights_problem(file: Path) -> str | None:
    if not file.is_file():
        return "is missing"
    size = file.stat().st_size
    if size == 0:
        return "is empty"
    if file.name.endswith(".safetensors"):
        return _safetensors_problem(file, size)
    return _torch_zip_problem(file)


def _safetensors_problem(file: Path, size: int) -> str | None:
    """A safetensors file is an 8-byte header length, a JSON header, then the tensors at the offsets it gives."""
    with file.open("rb") as fh:
        head = fh.read(8)
        header_size = int.from_bytes(head, "little") if len(head) == 8 else -1
        if not 0 < header_size <= size - 8:
            return f"is cut short or not a safetensors file (its header does not fit in its {size} bytes)"
        try:
            header = json.loads(fh.read(header_size))
            end = max((int(t["data_offsets"][1]) for k, t in header.items() if k != "__metadata__"), default=0)
        except (ValueError, KeyError, TypeError, IndexError, AttributeError):
            return "has a damaged header"
    if 8 + header_size + end > size:
        return f"is cut short: it has {size} bytes, its header describes {8 + header_size + end}"
    return None


def _torch_zip_problem(file: Path) -> str | None:
    """torch.save's format is a zip archive, whose directory is at its end: a cut-short file has none. (The
    pre-1.6 pickle format has nothing this cheap to check.)"""
    with file.open("rb") as fh:
        magic = fh.read(4)
    if magic == b"PK\x03\x04" and not zipfile.is_zipfile(file):
        return "is cut short (its zip directory is missing)"
    return None


def _weights_read_errors() -> tuple[type[BaseException], ...]:
    """What the weights readers raise for a damaged file that passed the structural check."""
    import pickle

    errors: list[type[BaseException]] = [pickle.UnpicklingError, EOFError, zipfile.BadZipFile]
    try:
        from safetensors import SafetensorError
    except ImportError:
        pass
    else:
        errors.append(SafetensorError)
    return tuple(errors)


def _progress(args: argparse.Namespace) -> bool:
    """Show progress bars: as asked, else when stderr is a terminal."""
    if args.progress is not None:
        return bool(args.progress)
    return sys.stderr.isatty()


# -- score ---------------------------------------------------------------------------------------------------


def _score(args: argparse.Namespace, out: TextIO) -> int:
    _check_stdin([args.cand, *args.ref], "-c/-r")
    pairs = _pair_lines(args.cand, args.ref)
    target = _check_output(args.output, "scores.txt", [args.cand, *args.ref]) if args.output is not None else None
    resampling = _resampling(args)

    metric = _rescalable_metric(
        args,
        idf=args.idf,
        batch_size=args.batch_size,
        model_dtype=_dtype(args.dtype),
        verbose=_progress(args),
    )
    with processes(str(metric.device)) as run:
        if not run.writes_output:
            metric.verbose = False
        for cands, targets in pairs.chunks(*run.shard(len(pairs))):
            metric.update(cands, targets)
        with warnings.catch_warnings():  # a process without lines (fewer lines than processes) is fine
            warnings.filterwarnings("ignore", message=r".*was called before the ``update`` method")
            scores = metric.compute_scores()
    if not run.writes_output:
        return 0
    p, r, f = (x.double().cpu().tolist() for x in scores.as_tuple())
    report = _report(args, metric, p, r, f, len(args.ref), resampling)
    if target is None:
        out.write(report)
    else:
        _write(target, args.output, report)
    return 0


class _LinesInMemory:
    """Candidates and references read whole (standard input cannot be read twice), with the interface of
    `bertscore_tm.corpus.ParallelFiles`."""

    def __init__(self, cands: list[str], targets: list[str] | list[list[str]]) -> None:
        self.cands, self.targets = cands, targets

    def __len__(self) -> int:
        return len(self.cands)

    def chunks(self, start: int = 0, stop: int | None = None) -> Iterable[tuple[list[str], Any]]:
        stop = len(self.cands) if stop is None else stop
        if start < stop:
            yield self.cands[start:stop], self.targets[start:stop]


def _pair_lines(cand: str, refs: Sequence[str]) -> Any:
    """The candidate file and its reference files, checked (exist, UTF-8, not empty, as many lines each) before
    any model loads: files are counted now and read as a stream later (`bertscore_tm.corpus`); standard input
    is read whole."""
    if STDIN not in (cand, *refs):
        from bertscore_tm.corpus import ParallelFiles

        return ParallelFiles.open(cand, refs)
    cands = read_lines(cand, "candidate")
    groups: list[list[str]] = []
    for path in refs:
        lines = read_lines(path, "reference")
        if len(lines) != len(cands):
            raise UsageError(
                f"{_input_name(path, 'reference')} has {_lines(len(lines))} but {_input_name(cand, 'candidate')} "
                f"has {_lines(len(cands))}: line i of every reference file is a reference for line i of the "
                "candidate file"
            )
        groups.append(lines)
    targets: list[str] | list[list[str]] = (
        groups[0] if len(groups) == 1 else [list(g) for g in zip(*groups, strict=True)]
    )
    return _LinesInMemory(cands, targets)


def _report(
    args: argparse.Namespace,
    metric: Any,
    p: list[float],
    r: list[float],
    f: list[float],
    refs_per_cand: int,
    resampling: Any = None,
) -> str:
    """What `score` prints, in the --format asked for."""
    means = [math.fsum(x) / len(x) for x in (p, r, f)]
    code = metric.hash_code
    ci = None if resampling is None else _f1_interval(resampling, f, args.cand)
    lines: list[str] = []
    if args.format == "text":
        summary = f"{code} P: {means[0]:.6f} R: {means[1]:.6f} F1: {means[2]:.6f}"
        if ci is not None and resampling is not None:
            summary += f" F1 {_percent(resampling.confidence)} CI: [{ci[0]:.6f}, {ci[1]:.6f}]"
        lines.append(summary)
        if args.seg_level:
            lines.extend("\t".join(f"{x:.6f}" for x in row) for row in zip(p, r, f, strict=True))
    elif args.format == "json":
        doc: dict[str, Any] = {
            "hash": code,
            "model": metric.model_name,
            "num_layers": metric.num_layers,
            "idf": args.idf,
            "rescaled": args.rescale_with_baseline,
            "pairs": len(p),
            "references_per_candidate": refs_per_cand,
            "precision": _num(means[0]),
            "recall": _num(means[1]),
            "f1": _num(means[2]),
        }
        if ci is not None and resampling is not None:
            doc.update(
                f1_ci=list(ci), confidence=resampling.confidence, bootstrap=resampling.num_samples, seed=resampling.seed
            )
        if args.seg_level:
            doc["segments"] = [
                {"precision": _num(a), "recall": _num(b), "f1": _num(c)} for a, b, c in zip(p, r, f, strict=True)
            ]
        lines.append(json.dumps(doc, indent=2))
    elif args.seg_level:  # tsv, one row per pair: the hash and the means stay, as comment lines before the table
        lines.append(f"# hash\t{code}")
        lines.append("# mean\t" + "\t".join(repr(x) for x in means))
        if ci is not None:
            lines.append("# f1_ci\t" + "\t".join(repr(x) for x in ci))
        lines.append("line\tP\tR\tF1")
        lines.extend(
            f"{n}\t" + "\t".join(repr(x) for x in row) for n, row in enumerate(zip(p, r, f, strict=True), start=1)
        )
    else:
        extra = ([], []) if ci is None else (["F1_low", "F1_high"], list(ci))
        lines.append("\t".join(["hash", "P", "R", "F1", *extra[0]]))
        lines.append(f"{code}\t" + "\t".join(repr(x) for x in [*means, *extra[1]]))
    return "".join(line + "\n" for line in lines)


def _write(target: Path, name: str, text: str) -> None:
    """Write a result file (checked to be writable before the scoring; this catches what changed since)."""
    try:
        target.write_text(text, encoding="utf-8")
    except OSError as err:
        raise UsageError(f"cannot write {name}: {err.strerror or _one_line(err)}") from None


def _lines(n: int) -> str:
    return f"{n} line" if n == 1 else f"{n} lines"


def _num(x: float) -> float | None:
    """A score for JSON: NaN (possible with --idf, as in the reference) becomes null."""
    return x if math.isfinite(x) else None


# -- intervals and compare -----------------------------------------------------------------------------------


class _Resampling(NamedTuple):
    confidence: float
    num_samples: int
    seed: int


def _whole(value: str, flag: str, what: str, minimum: int, maximum: int | None = None) -> int:
    try:
        number = int(value)
    except ValueError:
        raise UsageError(f"{flag} must be a whole number ({what}), got {value}") from None
    if number < minimum or (maximum is not None and number > maximum):
        upper = "" if maximum is None else f" and at most {maximum:,}"
        raise UsageError(f"{flag} must be at least {minimum}{upper} ({what}), got {value}")
    return number


def _resampling(args: argparse.Namespace) -> _Resampling | None:
    """--confidence, --bootstrap and --seed, checked before any model is loaded; None without --confidence."""
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
    from bertscore_tm.arguments import MAX_RESAMPLES

    num_samples = _whole(
        "1000" if args.bootstrap is None else args.bootstrap, "--bootstrap", "resamples", 1, MAX_RESAMPLES
    )
    seed = _whole("0" if args.seed is None else args.seed, "--seed", "the resampling's random seed", 0, 2**64 - 1)
    return _Resampling(confidence, num_samples, seed)


def _check_finite(f1: Any, names: Sequence[str]) -> None:
    """Intervals and tests need a finite F1 on every line (NaN is possible with --idf, as in the reference)."""
    import torch

    bad = ~torch.isfinite(f1)
    if bool(bad.any()):
        system, line = (int(x) for x in torch.nonzero(bad)[0])
        raise UsageError(
            f"{names[system]} line {line + 1} has an F1 of NaN ({int(bad.sum())} line(s) in all): with --idf, a "
            "line whose tokens all occur in every reference scores NaN, as in bert-score; intervals and tests "
            "need a score on every line: leave such lines out of every file, or drop --idf"
        )


def _f1_interval(settings: _Resampling, f1: list[float], cand: str) -> tuple[float, float]:
    import torch

    from bertscore_tm.significance import bootstrap_interval

    values = torch.tensor(f1, dtype=torch.float64)
    _check_finite(values[None], [cand])
    interval = bootstrap_interval(values, settings.confidence, settings.num_samples, settings.seed)
    return float(interval.low), float(interval.high)


def _percent(confidence: float) -> str:
    return f"{confidence * 100:g}%"


def _p_text(p: float) -> str:
    return f"{p:.4f}" if p >= 1e-4 else f"{p:.1e}"


def _compare(args: argparse.Namespace, out: TextIO) -> int:
    names: list[str] = args.cand
    if len(names) < 2:
        raise UsageError(
            f"compare needs at least two systems after -c (the first is the baseline), got {len(names)}: "
            f"to score one system use: {PROG} score -c {names[0]} -r ..."
        )
    settings = _resampling(args)
    assert settings is not None  # compare's --confidence has a default
    _check_stdin([*names, *args.ref], "-c/-r")
    systems = [read_lines(path, "system") for path in names]
    for path, lines in zip(names[1:], systems[1:], strict=True):
        if len(lines) != len(systems[0]):
            raise UsageError(
                f"system file {path} has {_lines(len(lines))} but the baseline {names[0]} has "
                f"{_lines(len(systems[0]))}: every system must answer the same inputs, line for line"
            )
    groups: list[list[str]] = []
    for path in args.ref:
        refs = read_lines(path, "reference")
        if len(refs) != len(systems[0]):
            raise UsageError(
                f"reference file {path} has {_lines(len(refs))} but the system files have {_lines(len(systems[0]))}: "
                "line i of every reference file is a reference for line i of every system file"
            )
        groups.append(refs)
    if len(systems[0]) < 2:
        raise UsageError(
            f"the system files have {_lines(len(systems[0]))}: a paired test needs at least 2 lines (on one line "
            "every resample is that line, so any difference would look significant); score more lines, or use "
            f"{PROG} score on each system"
        )
    targets: list[str] | list[list[str]] = (
        groups[0] if len(groups) == 1 else [list(g) for g in zip(*groups, strict=True)]
    )

    metric = _rescalable_metric(
        args, idf=args.idf, batch_size=args.batch_size, model_dtype=_dtype(args.dtype), verbose=_progress(args)
    )
    from bertscore_tm.significance import bootstrap_interval, paired_test
    from bertscore_tm.systems import score_systems

    with processes(str(metric.device)) as run:  # under torchrun each process a contiguous shard of the lines
        if not run.writes_output:
            metric.verbose = False
        start, stop = run.shard(len(targets))
        shards = [Processes(rank, run.world_size).shard(len(targets)) for rank in range(run.world_size)]
        with warnings.catch_warnings():  # a process without lines (fewer lines than processes) is fine
            warnings.filterwarnings("ignore", message=r".*was called before the ``update`` method")
            # one compute: references and shared lines embedded once
            scores = score_systems(
                metric, [s[start:stop] for s in systems], targets[start:stop], shard_sizes=[b - a for a, b in shards]
            )
    if not run.writes_output:
        return 0
    f1 = scores["f1"].double().cpu()
    _check_finite(f1, names)
    intervals = bootstrap_interval(f1, settings.confidence, settings.num_samples, settings.seed)
    test = paired_test(f1[0], f1[1:], args.method, settings.num_samples, settings.seed, settings.confidence)
    rows = []
    for i, name in enumerate(names):
        per_pair = (scores[k][i].double().cpu().tolist() for k in ("precision", "recall", "f1"))
        means = [math.fsum(x) / len(x) for x in per_pair]  # as score computes them
        delta = None if i == 0 else float(test.delta[i - 1])
        p_value = None if i == 0 else float(test.p_value[i - 1])
        ci = [float(intervals.low[i]), float(intervals.high[i])]
        rows.append(
            {
                "name": name,
                "precision": _num(means[0]),
                "recall": _num(means[1]),
                "f1": _num(means[2]),
                "f1_ci": ci,
                "p_value": p_value,
                "delta_f1": delta,
            }
        )
    if args.format == "json":
        doc = {
            "hash": metric.hash_code,
            "method": args.method,
            "bootstrap": settings.num_samples,
            "seed": settings.seed,
            "confidence": settings.confidence,
            "systems": rows,
        }
        out.write(json.dumps(doc, indent=2) + "\n")
    else:
        out.write(_compare_table(metric.hash_code, args.method, settings, rows))
    return 0


def _compare_table(code: str, method: str, settings: _Resampling, rows: list[dict[str, Any]]) -> str:
    """The text output of compare: the hash code, what was done, one row per system."""
    if method == "bootstrap":
        how = f"paired bootstrap resampling (Koehn 2004), {settings.num_samples} resamples"
    else:
        how = (
            f"approximate randomization (Riezler and Maxwell 2005), {settings.num_samples} shuffles; "
            f"intervals from {settings.num_samples} bootstrap resamples"
        )
    ci_head = f"F1 {_percent(settings.confidence)} CI"
    table = [["system", "P", "R", "F1", ci_head, "delta F1", "p-value"]]
    for row in rows:
        cells = [row["name"]] + [_cell(row[k]) for k in ("precision", "recall", "f1")]
        cells.append(f"[{row['f1_ci'][0]:.6f}, {row['f1_ci'][1]:.6f}]")
        if row["p_value"] is None:
            cells += ["baseline", ""]
        else:
            cells += [f"{row['delta_f1']:+.6f}", _p_text(row["p_value"]) + (" *" if row["p_value"] < 0.05 else "")]
        table.append(cells)
    widths = [max(len(r[j]) for r in table) for j in range(len(table[0]))]
    lines = [code, f"{how}, seed {settings.seed}; * p < 0.05 (difference to the baseline, two-sided)"]
    lines += ["  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in table]
    return "\n".join(lines) + "\n"


def _cell(x: float | None) -> str:
    return "nan" if x is None else f"{x:.6f}"


# -- show ----------------------------------------------------------------------------------------------------


def _show(args: argparse.Namespace, out: TextIO) -> int:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise UsageError(
            "show needs matplotlib: pip install 'bertscore-tm[plot]' (or pip install matplotlib)"
        ) from None
    if not args.cand.strip() or not args.ref.strip():
        raise UsageError("show needs a non-blank candidate (-c) and reference (-r) text")
    _one_process("show")
    cand = _text_argument(args.cand, "candidate", "-c")
    ref = _text_argument(args.ref, "reference", "-r")
    target, fmt = _image_target(args.file)
    metric = _rescalable_metric(args)
    from bertscore_tm.plotting import plot_similarity

    try:
        scores = plot_similarity(metric, cand, ref, target, format=fmt)
    except OSError as err:
        raise UsageError(f"cannot write {target}: {err.strerror or _one_line(err)}") from None
    out.write(f"{scores.hash_code} P: {scores.precision:.6f} R: {scores.recall:.6f} F1: {scores.f1:.6f}\n")
    out.write(f"Saved the similarity matrix to {target}\n")
    return 0


# -- baseline ------------------------------------------------------------------------------------------------


def _baseline(args: argparse.Namespace, out: TextIO) -> int:
    lines = read_lines(args.corpus, "corpus")
    if args.pairs < 1:
        raise UsageError(f"--pairs must be at least 1, got {args.pairs}")
    _check_run_options(args)
    from bertscore_tm.baseline_building import distinct_lines

    distinct = len(distinct_lines(lines))
    if distinct < 2 * args.pairs:
        raise UsageError(
            f"{_input_name(args.corpus, 'corpus')} has {distinct} distinct non-blank lines, but --pairs {args.pairs} "
            f"needs {2 * args.pairs} (each line is used at most once): use a larger corpus or fewer pairs"
        )
    target = _check_output(args.output, "baseline.tsv", [args.corpus])
    long_texts = _long_texts(args)
    model_name = _model_name(args)
    device = _device(args.device)

    from bertscore_tm.baseline_building import layer_means, sample_pairs, write_baseline
    from bertscore_tm.launch import processes

    cands, refs = sample_pairs(lines, args.pairs, args.seed)
    with processes(device) as run:
        metric = _make_metric(
            model_name_or_path=model_name,
            all_layers=True,  # every layer is scored, so a model without a tabled default layer is fine
            lang=args.lang,
            batch_size=args.batch_size,
            device=run.device,
            model_dtype=_dtype(args.dtype),
            compile_model=args.compile,
            verbose=_progress(args) and run.writes_output,
            **long_texts,
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


# -- pairwise ------------------------------------------------------------------------------------------------


def _write_output(target: Path | None, lines: Iterable[str], out: TextIO) -> None:
    """Write `lines` to `target`, or to `out` when there is none."""
    if target is None:
        out.writelines(lines)
        return
    try:
        with target.open("w", encoding="utf-8") as fh:
            fh.writelines(lines)
    except OSError as err:
        raise UsageError(f"cannot write {target}: {err.strerror or err}") from None


def _setting(metric: Any, args: argparse.Namespace) -> dict[str, Any]:
    return {
        "hash": metric.hash_code,
        "model": metric.model_name,
        "num_layers": metric.num_layers,
        "idf": args.idf,
        "rescaled": args.rescale_with_baseline,
    }


def _pairwise(args: argparse.Namespace, out: TextIO) -> int:
    import torch

    _check_stdin([args.cand, args.ref], "-c/-r")
    cands = read_lines(args.cand, "candidate")
    refs = read_lines(args.ref, "reference")
    target = _check_output(args.output, "matrix.tsv", [args.cand, args.ref]) if args.output is not None else None
    metric = _rescalable_metric(
        args, idf=args.idf, batch_size=args.batch_size, model_dtype=_dtype(args.dtype), verbose=_progress(args)
    )
    names = ("precision", "recall", "f1") if args.format == "json" else ("f1",)
    with processes(str(metric.device)) as run:  # under torchrun each process a contiguous block of rows
        start, stop = run.shard(len(cands))
        if not run.writes_output:
            metric.verbose = False
        if start < stop:
            result = metric.pairwise(cands[start:stop], refs)
            assert isinstance(result, dict)
            rows = {k: result[k] for k in names}
        else:  # fewer candidates than processes: this one has no rows
            rows = {k: torch.zeros((0, len(refs)), device=metric.device) for k in names}
        if run.world_size > 1:
            from bertscore_tm.distributed import gather

            rows = {k: torch.cat([x.cpu() for x in gather(m.float(), None)]) for k, m in rows.items()}
    if not run.writes_output:
        return 0
    matrices = {k: m.double().cpu() for k, m in rows.items()}
    if args.format == "json":
        doc = {
            **_setting(metric, args),
            "candidates": len(cands),
            "references": len(refs),
            **{k: [[_num(x) for x in row] for row in m.tolist()] for k, m in matrices.items()},
        }
        lines: Iterable[str] = [json.dumps(doc) + "\n"]
    else:  # tsv: the F1 matrix, line i = candidate i, column j = reference j; written row by row
        lines = ("\t".join(repr(x) for x in row.tolist()) + "\n" for row in matrices["f1"])
    _write_output(target, lines, out)
    if target is not None:
        what = "F1 matrix" if args.format == "tsv" else "P, R and F1 matrices"
        out.write(f"Wrote the {len(cands)} x {len(refs)} {what} ({metric.hash_code}) to {target}\n")
    return 0


# -- mbr -----------------------------------------------------------------------------------------------------


def _mbr_groups(args: argparse.Namespace, hyps: list[str]) -> tuple[list[str], list[list[int]]]:
    """Group names and each group's line indices, in order of first appearance."""
    if args.group_size is not None:
        k = args.group_size
        if k < 1:
            raise UsageError(f"--group-size must be at least 1, got {k}")
        if len(hyps) % k:
            raise UsageError(
                f"hypothesis file {args.input} has {_lines(len(hyps))}, which --group-size {k} does not divide: "
                f"each group is {k} consecutive lines (the last group would have {len(hyps) % k})"
            )
        return [str(g + 1) for g in range(len(hyps) // k)], [list(range(i, i + k)) for i in range(0, len(hyps), k)]
    ids = read_lines(args.groups, "group id")
    if len(ids) != len(hyps):
        raise UsageError(
            f"group id file {args.groups} has {_lines(len(ids))} but hypothesis file {args.input} has "
            f"{_lines(len(hyps))}: line i of the group id file names the group of hypothesis i"
        )
    members: dict[str, list[int]] = {}
    for i, name in enumerate(ids):
        if not name.strip():
            raise UsageError(f"group id file {args.groups}, line {i + 1}: the group id is blank")
        members.setdefault(name.strip(), []).append(i)
    return list(members), list(members.values())


def _mbr(args: argparse.Namespace, out: TextIO) -> int:
    _one_process("mbr")
    if args.groups is not None:
        _check_stdin([args.input, args.groups], "-i/--groups")
    hyps = read_lines(args.input, "hypothesis")
    names, lines = _mbr_groups(args, hyps)
    metric = _rescalable_metric(
        args, idf=args.idf, batch_size=args.batch_size, model_dtype=_dtype(args.dtype), verbose=_progress(args)
    )
    chosen, utilities = metric.mbr_select([[hyps[i] for i in group] for group in lines], return_utilities=True)
    if args.format == "json":
        doc = {
            **_setting(metric, args),
            "groups": [
                {
                    "group": name,
                    "index": index,
                    "line": group[index] + 1,
                    "hypothesis": hyps[group[index]],
                    "lines": [i + 1 for i in group],
                    "utilities": [_num(u) for u in utility.tolist()],
                }
                for name, group, index, utility in zip(names, lines, chosen, utilities, strict=True)
            ],
        }
        out.write(json.dumps(doc, indent=2) + "\n")
    else:
        out.writelines(hyps[group[index]] + "\n" for group, index in zip(lines, chosen, strict=True))
    return 0


# -- the parser ----------------------------------------------------------------------------------------------


def _add_model_options(p: argparse.ArgumentParser, layers: bool = True) -> None:
    p.add_argument(
        "-m",
        "--model",
        default=None,
        metavar="MODEL",
        help="model name or local directory (default: the language's default model; "
        "'sentence-transformers/all-MiniLM-L6-v2' is the packaged one, always available)",
    )
    if layers:
        p.add_argument(
            "-l",
            "--num-layers",
            type=int,
            default=None,
            metavar="N",
            help="use the output of layer N (0 = embeddings; default: the model's tuned layer)",
        )
    p.add_argument(
        "--lang", default="en", help="language code: picks the default model and the packaged baseline (default: en)"
    )


def _add_rescale_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--rescale-with-baseline",
        action="store_true",
        help="rescale with the packaged baseline of (--lang, model): (x - b) / (1 - b)",
    )
    p.add_argument(
        "--baseline-path",
        default=None,
        metavar="FILE",
        help="rescale with this LAYER,P,R,F baseline file instead (implies --rescale-with-baseline)",
    )


def _add_long_text_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--long-texts",
        choices=_LONG_TEXTS,
        default="truncate",
        help="texts longer than the model's window: truncate them (default, as the reference does) or "
        "embed them in overlapping windows and score every token (see the README: Long texts)",
    )
    p.add_argument(
        "--window-stride",
        type=int,
        default=None,
        metavar="N",
        help="with --long-texts window: tokens between window starts (default: half the window)",
    )


def _add_run_options(p: argparse.ArgumentParser, batch: bool = True) -> None:
    if batch:
        p.add_argument(
            "-b",
            "--batch-size",
            type=int,
            default=None,
            metavar="N",
            help="at most N texts per forward pass (default: as many as the token budget allows)",
        )
    p.add_argument(
        "--device", default=None, help="torch device, e.g. cpu, cuda, cuda:1 (default: cuda if available, else cpu)"
    )
    if batch:
        p.add_argument(
            "--dtype",
            choices=_DTYPES,
            default="float32",
            help="compute dtype of the model: float32 is exact; bfloat16/float16 are faster on GPUs (about 1e-3 error)",
        )
        p.add_argument(
            "--compile",
            action="store_true",
            help="run the model through torch.compile: a wait for the compilation first (tens of seconds), then "
            "faster forward passes; rounds differently (about 1e-6 in F1 in float32)",
        )
        p.add_argument(
            "--progress",
            action=argparse.BooleanOptionalAction,
            default=None,
            help="show a progress bar on stderr (default: when stderr is a terminal)",
        )


def _add_resampling_options(p: argparse.ArgumentParser, confidence: str | None) -> None:
    # read as text and checked by _resampling, so that a bad value is a one-line error like any other
    default = "none: no interval" if confidence is None else confidence
    p.add_argument(
        "--confidence",
        default=confidence,
        metavar="C",
        help=f"add the F1 mean's bootstrap confidence interval at level C, e.g. 0.95 (default: {default})",
    )
    p.add_argument(
        "--bootstrap",
        default=None,
        metavar="N",
        help="resamples (and, with --method randomization, shuffles) to draw (default: 1000; at most 1,000,000)",
    )
    p.add_argument(
        "--seed", default=None, metavar="S", help="seed of the resampling: same seed, same numbers (default: 0)"
    )


class _Once(argparse.Action):
    """An option that takes one file (or text), refused when given twice: keeping the last would silently
    ignore the other (options that take several files, such as -r, collect every occurrence instead)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        earlier = getattr(namespace, self.dest, None)
        if earlier is not None:
            raise argparse.ArgumentError(self, f"given twice ({earlier} and {values}): it takes one, give it once")
        setattr(namespace, self.dest, values)


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
        "score",
        help="score candidate lines against reference lines",
        description="Score a file of candidates against one or more files of references, one text per line "
        "(line i of every reference file is a reference for candidate i; with several, the best counts). "
        "Prints '<hash> P: .. R: .. F1: ..' (corpus means) and, with -s, one 'P<TAB>R<TAB>F1' line per candidate. "
        "A FILE of '-' is standard input (for one of -c/-r at most).",
    )
    s.add_argument(
        "-c",
        "--cand",
        required=True,
        action=_Once,
        metavar="FILE",
        help="candidates, one per line ('-': standard input)",
    )
    s.add_argument(
        "-r",
        "--ref",
        required=True,
        nargs="+",
        action="extend",  # -r a.txt -r b.txt is -r a.txt b.txt, not b.txt alone
        metavar="FILE",
        help="references, one per line; several files give several references per candidate ('-': standard input)",
    )
    _add_model_options(s)
    s.add_argument("--idf", action="store_true", help="weigh tokens by inverse document frequency over the references")
    _add_rescale_options(s)
    s.add_argument("-s", "--seg-level", action="store_true", help="also print the scores of every pair, in input order")
    s.add_argument(
        "--format",
        choices=("text", "json", "tsv"),
        default="text",
        help="output format (default: text); tsv with -s starts with '# hash<TAB>CODE' and "
        "'# mean<TAB>P<TAB>R<TAB>F1' comment lines, then a 'line<TAB>P<TAB>R<TAB>F1' table",
    )
    s.add_argument(
        "-o",
        "--output",
        default=None,
        metavar="FILE",
        help="write the results to FILE, once they are computed (default: standard output)",
    )
    _add_long_text_options(s)
    _add_resampling_options(s, confidence=None)
    _add_run_options(s)
    s.set_defaults(run=_score)

    c = sub.add_parser(
        "compare",
        help="is B better than A? F1 intervals and paired significance tests",
        description="Score several systems (files of candidates, one per line) against the same references in "
        "one run (the references are embedded once) and print per system the P, R, F1 means and a bootstrap "
        "interval of F1, and for each system after the first (the baseline) the F1 difference to the "
        "baseline and the p-value of a paired test: paired bootstrap resampling (Koehn 2004) or approximate "
        "randomization (Riezler and Maxwell 2005). Same seed, same numbers.",
    )
    c.add_argument(
        "-r",
        "--ref",
        required=True,
        nargs="+",
        action="extend",  # -r a.txt -r b.txt is -r a.txt b.txt, not b.txt alone
        metavar="FILE",
        help="references, one per line; several files give several references per line",
    )
    c.add_argument(
        "-c",
        "--cand",
        required=True,
        nargs="+",
        action="extend",  # -c a.txt -c b.txt is -c a.txt b.txt, not b.txt alone
        metavar="SYS",
        help="two or more system files, one candidate per line; the first is the baseline",
    )
    _add_model_options(c)
    c.add_argument(
        "--idf",
        action="store_true",
        help="weigh tokens by inverse document frequency over the references (counted once for all systems)",
    )
    _add_rescale_options(c)
    _add_resampling_options(c, confidence="0.95")
    c.add_argument(
        "--method",
        choices=("bootstrap", "randomization"),
        default="bootstrap",
        help="paired bootstrap resampling or approximate randomization (default: bootstrap)",
    )
    c.add_argument("--format", choices=("text", "json"), default="text", help="output format (default: text)")
    _add_long_text_options(c)
    _add_run_options(c)
    c.set_defaults(run=_compare)

    v = sub.add_parser(
        "show",
        help="plot the token similarity matrix of one pair",
        description="Draw the cosine similarity of every candidate token with every reference token as a "
        "heatmap, values in the cells, P/R/F1 in the title (special tokens are hidden, as in bert-score's "
        "plot_example). Past 40 tokens a side the cells carry no values and every k-th token is labelled, "
        "in a picture of at most about 2400 pixels a side. With rescaling, cells and scores are rescaled "
        "(cells with the F baseline).",
    )
    v.add_argument("-c", "--cand", required=True, action=_Once, metavar="TEXT", help="candidate text")
    v.add_argument("-r", "--ref", required=True, action=_Once, metavar="TEXT", help="reference text")
    v.add_argument(
        "-f",
        "--file",
        required=True,
        metavar="OUT.png",
        help="where to write the picture; the format is the extension (png, svg, pdf, jpg, ...; "
        "none: png, with .png added)",
    )
    _add_model_options(v)
    _add_rescale_options(v)
    _add_long_text_options(v)
    _add_run_options(v, batch=False)
    v.set_defaults(run=_show)

    b = sub.add_parser(
        "baseline",
        help="compute a rescale baseline from a monolingual corpus",
        description="Draw --pairs random candidate/reference pairs of distinct corpus lines (no line used "
        "twice; seeded, so reproducible), score them at every layer (no idf, no rescaling) and write the mean "
        "P, R, F per layer as a LAYER,P,R,F file, usable with --baseline-path or, placed at "
        "baselines/LANG/MODEL.tsv, with --lang.",
    )
    b.add_argument(
        "--corpus",
        required=True,
        action=_Once,
        metavar="FILE",
        help="monolingual corpus, one sentence per line ('-': standard input)",
    )
    _add_model_options(b, layers=False)
    b.add_argument(
        "--pairs",
        type=int,
        default=1000,
        metavar="N",
        help="number of random pairs (default: 1000; needs 2N distinct lines)",
    )
    b.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    b.add_argument("-o", "--output", required=True, metavar="OUT.tsv", help="where to write the baseline")
    _add_long_text_options(b)
    _add_run_options(b)
    b.set_defaults(run=_baseline)

    a = sub.add_parser(
        "pairwise",
        help="score every candidate line against every reference line (an N x M matrix)",
        description="Score each of the N candidate lines against each of the M reference lines; each distinct "
        "text is embedded once. TSV (default) writes the F1 matrix, one line per candidate, one column per "
        "reference, full precision; JSON writes the P, R and F1 matrices with the setting's hash code. With "
        "--idf the IDF is over the M references.",
    )
    a.add_argument(
        "-c", "--cand", required=True, action=_Once, metavar="FILE", help="candidates, one per line (the matrix's rows)"
    )
    a.add_argument(
        "-r",
        "--ref",
        required=True,
        action=_Once,
        metavar="FILE",
        help="references, one per line (the matrix's columns)",
    )
    a.add_argument(
        "-o", "--output", default=None, metavar="FILE", help="write the matrix to FILE (default: standard output)"
    )
    _add_model_options(a)
    a.add_argument("--idf", action="store_true", help="weigh tokens by inverse document frequency over the references")
    _add_rescale_options(a)
    a.add_argument("--format", choices=("tsv", "json"), default="tsv", help="output format (default: tsv)")
    _add_long_text_options(a)
    _add_run_options(a)
    a.set_defaults(run=_pairwise)

    m = sub.add_parser(
        "mbr",
        help="minimum-Bayes-risk selection: the hypothesis of each group the others agree with most",
        description="For each group of hypotheses (several samples for one source), pick the one with the "
        "highest mean BERTScore F1 against the other hypotheses of its group (ties: the first). Prints the "
        "chosen hypothesis of each group, one per line, in group order; JSON gives each group's chosen index, "
        "its line number and every hypothesis's mean F1.",
    )
    m.add_argument("-i", "--input", required=True, action=_Once, metavar="HYPS", help="hypotheses, one per line")
    grouping = m.add_mutually_exclusive_group(required=True)
    grouping.add_argument("--group-size", type=int, default=None, metavar="K", help="each group is K consecutive lines")
    grouping.add_argument(
        "--groups",
        default=None,
        action=_Once,
        metavar="FILE",
        help="one group id per line of HYPS (lines with the same id form a group, in order of first appearance)",
    )
    _add_model_options(m)
    m.add_argument(
        "--idf", action="store_true", help="weigh tokens by inverse document frequency over each group's hypotheses"
    )
    _add_rescale_options(m)
    m.add_argument("--format", choices=("text", "json"), default="text", help="output format (default: text)")
    _add_long_text_options(m)
    _add_run_options(m)
    m.set_defaults(run=_mbr)
    return parser


# -- entry point ---------------------------------------------------------------------------------------------


def _show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
) -> None:
    print(f"{PROG}: warning: {message}", file=sys.stderr if file is None else file)


class _StandardOutput:
    """Standard output as the subcommands write it: a write or flush that fails (a full disk, ``> /dev/full``,
    a closed ``>&-``) is a one-line `UsageError`, the same as an output file's. A reader that went away
    (`BrokenPipeError`) stays as it is, to be stopped quietly."""

    def __init__(self, stream: TextIO | None) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        with self._reported():
            return self._open().write(text)

    def writelines(self, lines: Iterable[str]) -> None:
        with self._reported():
            self._open().writelines(lines)

    def flush(self) -> None:
        with self._reported():
            if self.stream is not None:
                self.stream.flush()

    def _open(self) -> TextIO:
        if self.stream is None:
            raise UsageError("cannot write standard output: this process has none (it was closed)")
        return self.stream

    @contextlib.contextmanager
    def _reported(self) -> Iterator[None]:
        try:
            yield
        except BrokenPipeError:
            raise
        except (OSError, ValueError) as err:  # ValueError: "I/O operation on closed file"
            _silence_stdout()  # what is left in the buffer must not fail again when Python exits
            raise UsageError(
                f"cannot write standard output: {getattr(err, 'strerror', None) or _one_line(err)}"
            ) from None


def _silence_stdout() -> None:
    """Point standard output's file descriptor at the null device, so that flushing it at exit cannot fail."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (0, or 2 for a user error)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    previous = warnings.showwarning
    warnings.showwarning = _show_warning
    out = _StandardOutput(sys.stdout)
    try:
        code = int(args.run(args, out))
        out.flush()  # a full disk shows here, not when Python exits
        return code
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (`... | head`): stop quietly, as other tools do
        _silence_stdout()
        return 1
    except (UsageError, BERTScoreError) as err:  # the user's to fix: one line; anything else is a bug
        from bertscore_tm.launch import reports_errors

        if reports_errors():  # under torchrun every process finds the mistake; rank 0 says it once
            print(f"{PROG}: error: {_one_line(err)}{_hint(err)}", file=sys.stderr)
        return 2
    finally:
        warnings.showwarning = previous


#: The command line's name for each Python argument that the library's errors can name in their `argument`.
_FLAGS = {
    "preds": "-c/--cand",
    "target": "-r/--ref",
    "model_name_or_path": "-m/--model",
    "num_layers": "-l/--num-layers",
    "lang": "--lang",
    "idf": "--idf",
    "rescale_with_baseline": "--rescale-with-baseline",
    "baseline_path": "--baseline-path",
    "batch_size": "-b/--batch-size",
    "device": "--device",
    "model_dtype": "--dtype",
    "compile_model": "--compile",
    "verbose": "--progress",
    "long_texts": "--long-texts",
    "window_stride": "--window-stride",
}
#: What to do on the command line where the library's message ends with what to pass in Python.
_ADVICE = {
    "model_name_or_path": "-m /path/to/local/model (with -l N where the model has no tuned default layer)",
    "rescale_with_baseline": "--baseline-path baseline.tsv, or leave out --rescale-with-baseline",
}


def _hint(err: BaseException) -> str:
    """The command-line spelling of the Python argument a library error names in its `argument` field: its
    messages speak Python (``num_layers``, ``baseline_path=...``). Built from the field, never from the text."""
    argument = getattr(err, "argument", None) if isinstance(err, BERTScoreError) else None
    if argument in _ADVICE:
        hint = f"On the command line: {_ADVICE[argument]}."
    elif argument in _FLAGS:
        hint = f"On the command line, {argument} is {_FLAGS[argument]}."
    else:
        return ""
    return ("" if _one_line(err).endswith((".", "!", "?")) else ".") + " " + hint


def _one_line(err: BaseException) -> str:
    return " ".join((str(err) or type(err).__name__).split())


if __name__ == "__main__":
    sys.exit(main())
