"""Files of rows with named columns (Parquet, JSON Lines, CSV, TSV), read and written with pyarrow a record
batch at a time: ``bertscore-tm score --data`` reads a corpus's pairs from one and writes every input column
plus the scores to another.

The format is the file's extension. Reading is a stream of record batches, so a file's rows are never held
as one table; the text columns are read as strings whatever they look like (a CSV column of numbers is still
text), and every cell is checked (`columns`) with its row number in the file. A file that is not what its
extension says is one `InputFileError` naming it, never pyarrow's traceback. pyarrow is imported only here,
when a file is read or written (the ``[data]`` extra).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bertscore_tm.corpus import columns
from bertscore_tm.corpus.files import not_a_file
from bertscore_tm.errors import InputFileError

#: Input formats by extension, and the output formats.
READS = {".parquet": "parquet", ".pq": "parquet", ".jsonl": "jsonl", ".json": "jsonl", ".csv": "csv", ".tsv": "tsv"}
WRITES = {".parquet": "parquet", ".pq": "parquet", ".jsonl": "jsonl", ".csv": "csv"}
#: Rows per record batch read.
BATCH_ROWS = 8192


def _pyarrow() -> Any:
    try:
        import pyarrow
    except ImportError:
        raise InputFileError(
            "reading and writing column files needs pyarrow: pip install 'bertscore-tm[data]'", path="", what="data"
        ) from None
    return pyarrow


def file_format(path: str, formats: Mapping[str, str], what: str) -> str:
    """The format a file's extension names, or an `InputFileError` listing those known."""
    fmt = formats.get(Path(path).suffix.lower())
    if fmt is None:
        known, verb = ", ".join(sorted(formats)), "read" if formats is READS else "written"
        message = f"{what} file {path}: its extension names no format {verb} here (known: {known})"
        raise InputFileError(message, path=path, what=what)
    return fmt


@dataclass(frozen=True)
class ColumnFile:
    """A data file of rows, with the columns holding the candidates and the references, checked to exist
    (`open`) before any model loads."""

    path: str
    format: str
    candidate_column: str
    reference_columns: tuple[str, ...]
    context_column: str | None = None

    @classmethod
    def open(
        cls, path: str, candidate_column: str, reference_columns: Sequence[str], context_column: str | None = None
    ) -> ColumnFile:
        file = Path(path).expanduser()
        if not file.exists():
            raise InputFileError(f"data file {path} does not exist", path=path, what="data")
        if not file.is_file():
            raise InputFileError(f"data file {path} {not_a_file(file)}", path=path, what="data")
        this = cls(path, file_format(path, READS, "data"), candidate_column, tuple(reference_columns), context_column)
        first = next(this.batches(), None)
        if first is None:
            raise InputFileError(f"data file {path} has no rows: nothing to score", path=path, what="data")
        names = list(first.schema.names)
        for argument, name in [
            ("candidate_column", candidate_column),
            *(("reference_column", r) for r in reference_columns),
            *([] if context_column is None else [("context_column", context_column)]),
        ]:
            columns.cells({n: [] for n in names}, "mapping", name, argument)
        return this

    def batches(self) -> Iterator[Any]:
        """The file's record batches, in order; a file pyarrow cannot read as its format is one error."""
        pa = _pyarrow()
        try:
            yield from self._read(pa)
        except (pa.ArrowException, OSError) as err:
            message = " ".join(str(err).split())[:300]
            raise InputFileError(
                f"cannot read data file {self.path} as {self.format.upper()}: {message}", path=self.path, what="data"
            ) from None

    def _read(self, pa: Any) -> Iterator[Any]:
        text = pa.string()
        if self.format == "parquet":
            import pyarrow.parquet

            yield from pyarrow.parquet.ParquetFile(self.path).iter_batches(batch_size=BATCH_ROWS)
        elif self.format == "jsonl":
            import pyarrow.json

            if hasattr(pyarrow.json, "open_json"):  # pyarrow 18 on: a stream
                yield from pyarrow.json.open_json(self.path, read_options=pyarrow.json.ReadOptions(block_size=1 << 22))
            else:
                yield from pyarrow.json.read_json(self.path).to_batches(max_chunksize=BATCH_ROWS)
        else:
            import pyarrow.csv

            named = (
                self.candidate_column,
                *self.reference_columns,
                *([self.context_column] if self.context_column else []),
            )
            types = {name: text for name in named}
            parse = pyarrow.csv.ParseOptions(delimiter="\t" if self.format == "tsv" else ",")
            convert = pyarrow.csv.ConvertOptions(column_types=types)
            read = pyarrow.csv.ReadOptions(block_size=1 << 22)
            yield from pyarrow.csv.open_csv(self.path, read_options=read, parse_options=parse, convert_options=convert)

    def pairs(self) -> tuple[list[str], list[list[str]], bool]:
        """Every row's candidate and references, each cell checked (rows numbered from 0 in the file), and
        whether rows may have several references."""
        cands: list[str] = []
        groups: list[list[str]] = []
        several = len(self.reference_columns) > 1
        for batch in self.batches():
            first = len(cands)
            cands += columns.texts(
                columns.cells(batch, "arrow", self.candidate_column, "candidate_column"), self.candidate_column, first
            )
            more, many = columns.reference_groups(batch, "arrow", self.reference_columns, first, "reference_column")
            groups += more
            several = several or many
        return cands, groups, several

    def contexts(self) -> list[str] | None:
        """Every row's context (`context_column`; an empty cell is none), or None without that column."""
        if self.context_column is None:
            return None
        out: list[str] = []
        for batch in self.batches():
            out += columns.contexts(
                columns.cells(batch, "arrow", self.context_column, "context_column"), self.context_column, len(out)
            )
        return out


def write_scored(source: ColumnFile, target: Path, fmt: str, scores: Mapping[str, np.ndarray]) -> None:
    """Every row of `source` with the `scores` columns added (each as long as the file), written to `target`
    in `fmt` a record batch at a time."""
    pa = _pyarrow()
    writer: Any = None
    done = 0
    with open(target, "wb") as sink:
        for batch in source.batches():
            rows = batch.num_rows
            table = columns.with_columns(
                pa.Table.from_batches([batch]), "arrow", {k: v[done : done + rows] for k, v in scores.items()}
            )
            done += rows
            writer = _write(pa, writer, sink, fmt, table)
        if writer is not None and fmt != "jsonl":
            writer.close()


def _write(pa: Any, writer: Any, sink: Any, fmt: str, table: Any) -> Any:
    if fmt == "jsonl":
        for row in table.to_pylist():
            sink.write((json.dumps(row, ensure_ascii=False, allow_nan=True) + "\n").encode("utf-8"))
        return True
    if fmt == "csv":  # CSV writes float32 with 6 digits: as float64 (exact) every digit of the float32 is kept
        floats = [i for i, field in enumerate(table.schema) if field.type == pa.float32()]
        for i in floats:
            table = table.set_column(i, table.schema.field(i).name, table.column(i).cast(pa.float64()))
    if writer is None:
        if fmt == "parquet":
            import pyarrow.parquet

            writer = pyarrow.parquet.ParquetWriter(sink, table.schema)
        else:
            import pyarrow.csv

            writer = pyarrow.csv.CSVWriter(sink, table.schema)
    writer.write_table(table)
    return writer
