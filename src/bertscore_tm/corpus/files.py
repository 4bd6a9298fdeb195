"""Line-aligned text files read as a stream, a chunk of lines at a time, so that a corpus of millions of lines
is never held in memory; the files are checked before any model loads. Lines split as Python's universal
newlines split them."""

from __future__ import annotations

import codecs
from collections.abc import Iterator, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

from bertscore_tm.errors import InputFileError

#: Bytes read at a time when counting lines.
BLOCK_BYTES = 1 << 20
#: Lines per chunk when reading: a chunk's strings are all the text a reader holds at once.
CHUNK_LINES = 10_000


def _lines(n: int) -> str:
    return f"{n} line" if n == 1 else f"{n} lines"


def not_a_file(file: Path) -> str:
    """Why a path is no input file: missing, a folder, or a pipe or device, whose lines could be read only once.

    >>> not_a_file(Path("/"))
    'is a folder, not a file'
    """
    if not file.exists():
        return "does not exist"
    if file.is_dir():
        return "is a folder, not a file"
    return (
        "is not a regular file (a pipe or a device, which can be read only once): save it to a file, or pass it "
        "as '-' (standard input)"
    )


def count_lines(path: str, what: str, block_bytes: int = BLOCK_BYTES) -> int:
    """The number of lines of a UTF-8 text file, read in blocks; an `InputFileError` where it is missing or empty."""
    file = Path(path).expanduser()
    if not file.is_file():
        raise InputFileError(f"{what} file {path} {not_a_file(file)}", path=path, what=what)
    decoder = codecs.getincrementaldecoder("utf-8")()
    ends, consumed, last, after_cr = 0, 0, "", False
    try:
        with file.open("rb") as fh:
            while True:
                block = fh.read(block_bytes)
                held = len(decoder.getstate()[0])  # bytes of a character cut by the previous block
                try:
                    text = decoder.decode(block, final=not block)
                except UnicodeDecodeError as err:
                    at = consumed - held + err.start
                    raise InputFileError(
                        f"{what} file {path} is not UTF-8 text ({err.reason} at byte {at})", path=path, what=what
                    ) from None
                consumed += len(block)
                if text:
                    crlf = text.count("\r\n") + (after_cr and text[0] == "\n")
                    ends += text.count("\n") + text.count("\r") - crlf
                    after_cr, last = text[-1] == "\r", text[-1]
                if not block:
                    break
    except OSError as err:
        raise InputFileError(f"cannot read {what} file {path}: {err.strerror or err}", path=path, what=what) from None
    lines = ends + (last not in ("", "\n", "\r"))
    if lines == 0:
        raise InputFileError(f"{what} file {path} is empty", path=path, what=what)
    return lines


@dataclass(frozen=True)
class ParallelFiles:
    """A candidate file and its reference files, line i of each reference file a reference for candidate i.

    >>> import tempfile, os
    >>> folder = tempfile.mkdtemp()
    >>> for name, text in (("c.txt", "a cat\\r\\nthe dog\\n"), ("r.txt", "one cat\\ntwo dogs")):
    ...     _ = open(os.path.join(folder, name), "w", newline="").write(text)
    >>> files = ParallelFiles.open(os.path.join(folder, "c.txt"), [os.path.join(folder, "r.txt")])
    >>> len(files), list(files.chunks(size=1))
    (2, [(['a cat'], ['one cat']), (['the dog'], ['two dogs'])])
    """

    cand: str
    refs: tuple[str, ...]
    lines: int

    @classmethod
    def open(cls, cand: str, refs: Sequence[str]) -> ParallelFiles:
        """Check the files and count their lines before any model loads."""
        lines = count_lines(cand, "candidate")
        for path in refs:
            n = count_lines(path, "reference")
            if n != lines:
                raise InputFileError(
                    f"reference file {path} has {_lines(n)} but candidate file {cand} has {_lines(lines)}: "
                    "line i of every reference file is a reference for line i of the candidate file",
                    path=path,
                    what="reference",
                )
        return cls(cand, tuple(refs), lines)

    def __len__(self) -> int:
        return self.lines

    def chunks(
        self, start: int = 0, stop: int | None = None, size: int = CHUNK_LINES
    ) -> Iterator[tuple[list[str], list[str] | list[list[str]]]]:
        """Lines `start` to `stop` (a torchrun process's part) in chunks of (candidates, references): a string per
        candidate, or a list with several reference files."""
        stop = self.lines if stop is None else min(stop, self.lines)
        with ExitStack() as stack:
            files = [stack.enter_context(open(Path(p).expanduser(), encoding="utf-8")) for p in (self.cand, *self.refs)]
            readers = [islice(fh, start, stop) for fh in files]
            while True:
                columns = [[line.removesuffix("\n") for line in islice(reader, size)] for reader in readers]
                if not columns[0]:
                    return
                if len(columns) == 2:
                    yield columns[0], columns[1]
                else:
                    yield columns[0], [list(group) for group in zip(*columns[1:], strict=True)]
