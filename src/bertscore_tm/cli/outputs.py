"""Where the commands write: output files and standard output. Every option naming a file a command reads
(`READS`) or writes (`WRITES`) is known here, so that an output that is an input, or two outputs on one path, are
refused before any command runs. Outputs are checked before any model loads and replaced atomically."""

from __future__ import annotations

import argparse
import contextlib
import io
import math
import os
import stat
import sys
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, TextIO

from bertscore_tm.cli.errors import UsageError, one_line
from bertscore_tm.cli.inputs import STDIN
from bertscore_tm.cli.options import checked_name

#: Every option that names a file a command reads, with its flag (the parser's default ``texts``, a function of
#: `args`, names those that hold a text instead).
READS = {
    "cand": "-c",
    "ref": "-r",
    "data": "--data",
    "context": "--context",
    "idf_references": "--idf-references",
    "baseline_path": "--baseline-path",
    "corpus": "--corpus",
    "input": "-i",
    "groups": "--groups",
}
#: Every option that names a file (or folder) a command writes, with its flag; pictures may get an extension.
WRITES = {
    "output": "-o",
    "html": "--html",
    "plot": "--plot",
    "add_to_table": "--add-to-table",
    "file": "-f",
    "checkpoint": "--checkpoint",
}
FOLDERS, IMAGES = frozenset({"checkpoint"}), frozenset({"plot", "file"})


def check_files(args: argparse.Namespace) -> None:
    """Refuse an output that is an input (compared as files: a link counts too), two outputs on one path,
    and a JSON name for another format."""
    read = read_files(args)
    seen: dict[str, str] = {}
    for dest, path in written_files(args):
        target = Path(path).expanduser()
        for flag, source in read:
            if target.exists() and _same_file(target, source):
                if dest in FOLDERS:
                    raise UsageError(
                        f"cannot keep a checkpoint in {path}: it is the input file {source} ({flag}), a file, not a "
                        "folder; give a folder"
                    )
                raise UsageError(
                    f"cannot write {path}: it is the input file {source} ({flag}), which the results would "
                    "overwrite; give another output file"
                )
        real = os.path.realpath(target)
        if real in seen:
            what = "path" if FOLDERS & {dest, seen[real]} else "file"
            raise UsageError(
                f"{WRITES[seen[real]]} and {WRITES[dest]} name the same {what} {path}: give each its own {what}"
            )
        seen[real] = dest
    check_json_name(args)


def check_json_name(args: argparse.Namespace) -> None:
    """A ``.json``/``.jsonl`` output must hold JSON (``score --data`` writes the format its name gives)."""
    fmt, path = getattr(args, "format", None), getattr(args, "output", None)
    if fmt in (None, "json") or path is None or getattr(args, "data", None) is not None:
        return
    suffix = Path(path).suffix.lower()
    if suffix in (".json", ".jsonl"):
        raise UsageError(
            f"-o {path}: a {suffix} file would hold {fmt}, not JSON (--format {fmt}): give --format json where "
            f"the command has it, or another file name"
        )


def read_files(args: argparse.Namespace) -> list[tuple[str, str]]:
    """(flag, path) of each file the command reads, less standard input and the command's ``texts``."""
    texts = getattr(args, "texts", None)
    skip = set(texts(args)) if texts is not None else set()
    read: list[tuple[str, str]] = []
    for dest, flag in READS.items():
        value = getattr(args, dest, None)
        if dest not in skip and value is not None:
            read += [(flag, path) for path in ([value] if isinstance(value, str) else value) if path != STDIN]
    return read


def written_files(args: argparse.Namespace) -> list[tuple[str, str]]:
    """(option name, path) of each output, a picture's format extension added where it has none."""
    written = []
    for dest in WRITES:
        path = getattr(args, dest, None)
        if path is not None:
            if dest in IMAGES:
                with contextlib.suppress(ImportError):
                    path = image_name(path)[0]
            written.append((dest, path))
    return written


def _same_file(target: Path, source: str) -> bool:
    try:
        return os.path.samefile(target, Path(source).expanduser())
    except OSError:  # the input does not exist: its command says so
        return False


def check_output(path: str, example: str) -> Path:
    """The file an output option names, checked before any model loads: not a folder, not read-only, in a
    folder that takes new files (probed with a nameless temporary file: true for root and read-only mounts too)."""
    checked_name(path)
    target = Path(path).expanduser()
    if target.is_dir():
        raise UsageError(f"cannot write {path}: it is a folder; give a file name such as {target / example}")
    folder = target.parent
    if not folder.is_dir():
        reason = f"{folder} is not a folder" if folder.exists() else f"the folder {folder} does not exist"
        raise UsageError(f"cannot write {path}: {reason}")
    if target.exists() and not os.access(target, os.W_OK):
        raise UsageError(f"cannot write {path}: permission denied")
    if target.exists() and not target.is_file():
        return target  # a device or a pipe: written in place
    real_folder = Path(os.path.realpath(target)).parent
    try:
        tempfile.TemporaryFile(dir=real_folder).close()
    except OSError as err:
        why = f" (the results go to a temporary file in {real_folder}, then replace {path})" if target.exists() else ""
        raise UsageError(f"cannot write {path}: {err.strerror or one_line(err)}{why}") from None
    return target


def need_matplotlib(what: str) -> None:
    """Refuse `what` (a command or an option that draws) before anything else where matplotlib is missing."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise UsageError(
            f"{what} needs matplotlib: pip install 'bertscore-tm[plot]' (or pip install matplotlib)"
        ) from None


def image_target(path: str) -> tuple[Path, str]:
    """The file a picture option really writes and its format, checked before any model loads."""
    checked_name(path)
    if Path(path).expanduser().is_dir():
        check_output(path, "similarity.png")  # says it is a folder
    name, fmt = image_name(path)
    _check_image_format(name, fmt)
    return check_output(name, "similarity.png"), fmt


def image_name(path: str) -> tuple[str, str]:
    """The file a picture option writes and its format, as matplotlib's savefig decides them.

    >>> image_name("plots/sim.SVG")
    ('plots/sim.SVG', 'svg')
    """
    fmt = os.path.splitext(path)[1][1:]
    if fmt:
        return path, fmt.lower()
    import matplotlib

    fmt = str(matplotlib.rcParams["savefig.format"])
    return path.rstrip(".") + "." + fmt, fmt.lower()


def _check_image_format(name: str, fmt: str) -> None:
    """Fail early on a format matplotlib cannot write here (unknown, or needing TeX or a codec this machine
    lacks), by drawing a tiny figure in it, in memory."""
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
            f"cannot write {name}: matplotlib cannot write {fmt} on this machine ({one_line(err)}); {advice}"
        ) from None


@contextlib.contextmanager
def replacing(target: Path, name: str) -> Iterator[Path]:
    """A temporary path beside `target` (a link's target), synced and moved onto it when the block ends;
    whatever fails, `target` stays as it was and an OSError is a one-line `UsageError` naming `name`. A target
    that is no regular file (a device, a pipe) is written in place."""
    real = Path(os.path.realpath(target))
    try:
        if real.exists() and not real.is_file():
            yield real
            return
        handle, temp_name = tempfile.mkstemp(dir=real.parent, prefix=f".{real.name}.", suffix=".tmp")
        os.close(handle)
        temp = Path(temp_name)
        try:
            yield temp
            _move_onto(temp, real)
        except BaseException:
            with contextlib.suppress(OSError):
                temp.unlink()
            raise
    except OSError as err:
        raise UsageError(f"cannot write {name}: {err.strerror or one_line(err)}") from None


def write_text(target: Path, name: str, lines: Iterable[str]) -> None:
    with replacing(target, name) as temp, temp.open("w", encoding="utf-8") as fh:
        fh.writelines(lines)


def write_output(target: Path | None, name: str, lines: Iterable[str], out: TextIO) -> None:
    """`lines` to the file `target`, or to `out` where there is none."""
    if target is None:
        out.writelines(lines)
    else:
        write_text(target, name, lines)


def _move_onto(temp: Path, real: Path) -> None:
    """Sync `temp`, give it `real`'s mode (and owner, where allowed), then move it onto `real`."""
    handle = os.open(temp, os.O_RDWR)
    try:
        os.fsync(handle)
    finally:
        os.close(handle)
    try:
        old = real.stat()
    except FileNotFoundError:
        os.umask(umask := os.umask(0))
        os.chmod(temp, 0o666 & ~umask)  # as a new file gets it
    else:
        os.chmod(temp, stat.S_IMODE(old.st_mode))
        with contextlib.suppress(OSError):
            os.chown(temp, old.st_uid, old.st_gid)
    os.replace(temp, real)
    with contextlib.suppress(OSError):  # the move itself on disk (where a folder can be synced)
        folder = os.open(real.parent, os.O_RDONLY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)


def aligned(rows: list[list[str]]) -> list[str]:
    """Rows of cells as text columns, each as wide as its widest cell."""
    widths = [max(len(row[j]) for row in rows) for j in range(len(rows[0]))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]


def json_number(x: float) -> float | None:
    """A score for JSON: NaN (possible with --idf) becomes null.

    >>> json_number(0.5), json_number(float("nan"))
    (0.5, None)
    """
    return x if math.isfinite(x) else None


def setting(metric: Any, args: argparse.Namespace) -> dict[str, Any]:
    """The setting a JSON output starts with."""
    return {
        "hash": metric.hash_code,
        "model": metric.model_name,
        "model_commit": metric.model_commit,
        "num_layers": metric.num_layers,
        "idf": args.idf,
        "rescaled": args.rescale_with_baseline,
    }


class StandardOutput:
    """Standard output where a failed write or flush is a one-line `UsageError`, as for an output file; a
    reader that went away (`BrokenPipeError`) is left to be stopped quietly."""

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
            silence_stdout()  # what is left in the buffer must not fail again when Python exits
            raise UsageError(
                f"cannot write standard output: {getattr(err, 'strerror', None) or one_line(err)}"
            ) from None


def silence_stdout() -> None:
    """Point standard output at the null device, so that flushing it at exit cannot fail."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
