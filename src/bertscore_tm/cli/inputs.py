"""What the commands read: text files (one text per line), standard input (``-``) and texts given as
arguments, each checked before any model loads (exists, UTF-8, not empty, as many lines as its partners)."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from bertscore_tm.cli.errors import UsageError
from bertscore_tm.distributed.launch import launched

#: The file name that means standard input.
STDIN = "-"


def read_lines(path: str, what: str) -> list[str]:
    """The lines of a UTF-8 text file, or of standard input for ``-``, checked to hold at least one."""
    text = _read_stdin(what) if path == STDIN else _read_file(path, what)
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the newline that ends the last line
    if not lines:
        raise UsageError(f"{input_name(path, what)} is empty")
    return lines


def input_name(path: str, what: str) -> str:
    """How messages name an input.

    >>> input_name("-", "corpus")
    'corpus file - (standard input)'
    """
    return f"{what} file {path}" + (" (standard input)" if path == STDIN else "")


def n_lines(n: int) -> str:
    """
    >>> n_lines(1), n_lines(3)
    ('1 line', '3 lines')
    """
    return f"{n} line" if n == 1 else f"{n} lines"


def _read_file(path: str, what: str) -> str:
    file = Path(path).expanduser()
    if not file.is_file():  # missing, a folder, a pipe or a device
        from bertscore_tm.corpus.files import not_a_file

        raise UsageError(f"{what} file {path} {not_a_file(file)}")
    try:
        with file.open(encoding="utf-8") as fh:
            return fh.read()
    except UnicodeDecodeError as err:
        raise UsageError(f"{what} file {path} is not UTF-8 text ({err.reason} at byte {err.start})") from None
    except OSError as err:
        raise UsageError(f"cannot read {what} file {path}: {err.strerror or err}") from None


def _read_stdin(what: str) -> str:
    """Standard input decoded as UTF-8, as the files are (a pipe does not follow the locale), with the same
    universal newlines."""
    if sys.stdin is None:
        raise UsageError(f"{input_name(STDIN, what)}: this process has no standard input")
    stream = getattr(sys.stdin, "buffer", None)
    data = stream.read() if stream is not None else sys.stdin.read().encode("utf-8")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise UsageError(f"{input_name(STDIN, what)} is not UTF-8 text ({err.reason} at byte {err.start})") from None
    return text.replace("\r\n", "\n").replace("\r", "\n")


def check_stdin(paths: Sequence[str], flags: str) -> None:
    """Standard input can be read once (a second ``-`` would silently get nothing), and by one process."""
    if sum(path == STDIN for path in paths) > 1:
        raise UsageError(
            f"standard input (-) can be read only once: give at most one of {flags} as -, the others as files"
        )
    if STDIN in paths and launched()[1] > 1:
        raise UsageError(
            "standard input (-) cannot be shared by the processes torchrun starts: give every input as a file "
            "(at the same path on every node)"
        )


def text_argument(text: str, what: str, flag: str) -> str:
    """A text given on the command line, checked to be UTF-8: bytes that are not arrive as lone
    surrogates (surrogateescape), which no tokenizer accepts.

    >>> text_argument("caf\\udce9", "candidate", "-c")
    Traceback (most recent call last):
    ...
    bertscore_tm.cli.errors.UsageError: the candidate text (-c) is not UTF-8: it holds the byte 0xe9 at character 3
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as err:
        code = ord(text[err.start])
        what_it_is = f"the byte 0x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"a lone surrogate U+{code:04X}"
        raise UsageError(
            f"the {what} text ({flag}) is not UTF-8: it holds {what_it_is} at character {err.start}"
        ) from None
    return text


def references(paths: Sequence[str], lines: int, mismatch: str) -> list[str] | list[list[str]]:
    """The reference files, each checked to have `lines` lines (`mismatch` ends the message otherwise): one
    string per line with one file, else a list per line."""
    groups: list[list[str]] = []
    for path in paths:
        refs = read_lines(path, "reference")
        if len(refs) != lines:
            raise UsageError(f"{input_name(path, 'reference')} has {n_lines(len(refs))} but {mismatch}")
        groups.append(refs)
    return groups[0] if len(groups) == 1 else [list(g) for g in zip(*groups, strict=True)]


def context_lines(path: str | None, lines: int) -> list[str] | None:
    """The --context file's lines, one per candidate line; None without one."""
    if path is None:
        return None
    context = read_lines(path, "context")
    if len(context) != lines:
        raise UsageError(f"the context file {path} has {len(context)} line(s) for {lines} candidate line(s)")
    return context


class LinesInMemory:
    """Lines read whole (standard input cannot be read twice), with the interface of `ParallelFiles`."""

    def __init__(self, cands: list[str], targets: list[str] | list[list[str]]) -> None:
        self.cands, self.targets = cands, targets

    def __len__(self) -> int:
        return len(self.cands)

    def chunks(self, start: int = 0, stop: int | None = None) -> Iterable[tuple[list[str], Any]]:
        stop = len(self.cands) if stop is None else stop
        if start < stop:
            yield self.cands[start:stop], self.targets[start:stop]


def pair_lines(cand: str, refs: Sequence[str]) -> Any:
    """The candidate file and its reference files, checked before any model loads; files are read as a
    stream later, standard input whole."""
    if STDIN not in (cand, *refs):
        from bertscore_tm.corpus.files import ParallelFiles

        return ParallelFiles.open(cand, refs)
    cands = read_lines(cand, "candidate")
    mismatch = (
        f"{input_name(cand, 'candidate')} has {n_lines(len(cands))}: line i of every reference file is a "
        "reference for line i of the candidate file"
    )
    return LinesInMemory(cands, references(refs, len(cands), mismatch))
