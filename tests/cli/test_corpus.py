"""Input files read as a stream (`bertscore_tm.corpus.files`): the same lines as reading the whole file, never the
whole file in memory, any contiguous shard of it, and the same one-line errors as before."""

from __future__ import annotations

import itertools
import os
import tracemalloc
from pathlib import Path

import pytest

from bertscore_tm.cli import read_lines
from bertscore_tm.corpus.files import ParallelFiles, count_lines
from bertscore_tm.errors import InputFileError

#: Every way a line can end, blank lines, non-ASCII text (characters of 2 to 4 bytes) and no final newline.
MIXED = "first\r\nsecond\rthird\n\nfünfte Zeile\r\n\r\n日本語の文\r\r😀 emoji\nlast without newline"


def _write(path: Path, text: str) -> Path:
    path.write_bytes(text.encode("utf-8"))
    return path


def _all_lines(files: ParallelFiles, **kwargs) -> list[str]:
    return [line for cands, _ in files.chunks(**kwargs) for line in cands]


@pytest.mark.parametrize("block_bytes", [1, 2, 3, 7, 1 << 20])
def test_lines_are_counted_as_reading_the_whole_file_splits_them(tmp_path, block_bytes):
    """Blocks of a few bytes cut \\r\\n pairs and multi-byte characters in two; the count does not change."""
    for text in (MIXED, MIXED + "\n", MIXED + "\r", "one line", "\n", "\r\n\r\n", "a\rb\r\nc"):
        file = _write(tmp_path / "f.txt", text)
        assert count_lines(str(file), "candidate", block_bytes=block_bytes) == len(
            read_lines(str(file), "candidate")
        ), text


def test_chunks_hold_the_same_lines_as_reading_the_whole_file(tmp_path):
    cand = _write(tmp_path / "c.txt", MIXED)
    ref = _write(tmp_path / "r.txt", MIXED.upper())
    files = ParallelFiles.open(str(cand), [str(ref)])
    expected = read_lines(str(cand), "candidate")
    assert len(files) == len(expected)
    assert _all_lines(files, size=3) == expected
    refs = [line for _, targets in files.chunks(size=4) for line in targets]
    assert refs == read_lines(str(ref), "reference")


def test_several_reference_files_give_a_list_per_candidate(tmp_path):
    cand = _write(tmp_path / "c.txt", "a\nb\nc\n")
    r1 = _write(tmp_path / "r1.txt", "a1\nb1\nc1\n")
    r2 = _write(tmp_path / "r2.txt", "a2\r\nb2\r\nc2")
    files = ParallelFiles.open(str(cand), [str(r1), str(r2)])
    assert list(files.chunks(size=2)) == [(["a", "b"], [["a1", "a2"], ["b1", "b2"]]), (["c"], [["c1", "c2"]])]


def test_a_large_file_is_read_a_chunk_at_a_time_and_its_shards_cover_it_in_order(tmp_path):
    lines = 200_000
    with (tmp_path / "big.txt").open("w", encoding="utf-8") as fh:
        for i in range(lines):
            fh.write(f"line {i}: the quick brown fox jumps over the lazy dog\n")
    path = str(tmp_path / "big.txt")
    files = ParallelFiles.open(path, [path])
    assert len(files) == lines
    size = 5_000
    tracemalloc.start()
    try:
        read, chunk_sizes = 0, []
        for cands, refs in files.chunks(size=size):
            assert cands == refs and cands[0] == f"line {read}: the quick brown fox jumps over the lazy dog"
            chunk_sizes.append(len(cands))
            read += len(cands)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert read == lines and max(chunk_sizes) == size and len(chunk_sizes) == lines // size
    # the whole file as strings would be over 20 MB; a chunk's strings are about 0.5 MB
    assert peak < 4 << 20, peak
    # contiguous shards, as torchrun processes read them: together every line once, in order
    bounds = [0, 1, 66_667, 133_334, lines]
    firsts = []
    for start, stop in itertools.pairwise(bounds):
        shard = _all_lines(files, start=start, stop=stop, size=size)
        assert len(shard) == stop - start
        firsts.append(shard[0])
    assert firsts == [f"line {b}: the quick brown fox jumps over the lazy dog" for b in bounds[:-1]]


def test_a_decoding_error_names_its_byte_even_in_a_later_block(tmp_path):
    file = tmp_path / "bad.txt"
    file.write_bytes("é".encode() * 10 + b"\xff" + b"\n")  # byte 20 is not UTF-8
    with pytest.raises(
        InputFileError, match=r"^candidate file .*bad.txt is not UTF-8 text \(invalid start byte at byte 20\)$"
    ):
        count_lines(str(file), "candidate", block_bytes=3)
    assert "at byte 20" in _message(lambda: read_lines(str(file), "candidate"))


def _message(call) -> str:
    try:
        call()
    except Exception as err:
        return str(err)
    return ""


def test_file_errors_name_the_file_and_its_role(tmp_path):
    good = _write(tmp_path / "c.txt", "a\nb\n")
    empty = _write(tmp_path / "empty.txt", "")
    three = _write(tmp_path / "three.txt", "a\nb\nc\n")
    cases = [
        ((str(tmp_path / "missing.txt"), [str(good)]), f"candidate file {tmp_path / 'missing.txt'} does not exist"),
        ((str(good), [str(tmp_path)]), f"reference file {tmp_path} is a folder, not a file"),
        ((str(empty), [str(good)]), f"candidate file {empty} is empty"),
        (
            (str(good), [str(good), str(three)]),
            f"reference file {three} has 3 lines but candidate file {good} has 2 lines: line i of every reference "
            "file is a reference for line i of the candidate file",
        ),
    ]
    for (cand, refs), message in cases:
        with pytest.raises(InputFileError) as err:
            ParallelFiles.open(cand, refs)
        assert str(err.value) == message


def test_a_folder_or_a_pipe_is_named_for_what_it_is(tmp_path):
    with pytest.raises(InputFileError, match=f"candidate file {tmp_path} is a folder, not a file"):
        count_lines(str(tmp_path), "candidate")
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)  # as `-c <(cat hyps.txt)` gives: its lines could be read once only, and are counted first
    with pytest.raises(InputFileError, match=r"is not a regular file \(a pipe or a device.*pass it as '-'"):
        count_lines(str(pipe), "candidate")
