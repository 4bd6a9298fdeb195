"""Files of rows with named columns (Parquet, JSON Lines, CSV, TSV) for ``score --data``, read and written a
record batch at a time so that a file is never held whole; a file that is not what its extension says is one
`InputFileError`, never pyarrow's traceback. pyarrow is imported only here (the ``[data]`` extra)."""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import io
import json
import math
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bertscore_tm.corpus import columns
from bertscore_tm.corpus.files import not_a_file
from bertscore_tm.errors import ColumnDataError, InputFileError

#: Input formats by extension, and the output formats.
READS = {".parquet": "parquet", ".pq": "parquet", ".jsonl": "jsonl", ".json": "jsonl", ".csv": "csv", ".tsv": "tsv"}
WRITES = {".parquet": "parquet", ".pq": "parquet", ".jsonl": "jsonl", ".csv": "csv"}
#: Rows per record batch read from Parquet.
BATCH_ROWS = 8192
#: Bytes per block read from CSV and JSON Lines: pyarrow types a streamed file's columns by its first block.
BLOCK_BYTES = 1 << 22
#: What to do about a JSON Lines column of two types.
ONE_TYPE = (
    "a column is read as one type, so give its values one type throughout (every id a string, say), or convert "
    "the file to Parquet with one type per column"
)


def _pyarrow() -> Any:
    try:
        import pyarrow
    except ImportError:
        raise InputFileError(
            "reading and writing column files needs pyarrow: pip install 'bertscore-tm[data]'", path="", what="data"
        ) from None
    return pyarrow


def file_format(path: str, formats: Mapping[str, str], what: str) -> str:
    fmt = formats.get(Path(path).suffix.lower())
    if fmt is None:
        known, verb = ", ".join(sorted(formats)), "read" if formats is READS else "written"
        message = f"{what} file {path}: its extension names no format {verb} here (known: {known})"
        raise InputFileError(message, path=path, what=what)
    return fmt


@dataclass(frozen=True)
class ColumnFile:
    """A data file of rows, its columns checked to exist (`open`) before any model loads. `types` settle a large
    CSV or JSON Lines file's column types (`_settled_types`); None lets pyarrow type them by the first block."""

    path: str
    format: str
    candidate_column: str
    reference_columns: tuple[str, ...]
    context_column: str | None = None
    types: Any = None

    @classmethod
    def open(
        cls, path: str, candidate_column: str, reference_columns: Sequence[str], context_column: str | None = None
    ) -> ColumnFile:
        file = Path(path).expanduser()
        if not file.is_file():
            raise InputFileError(f"data file {path} {not_a_file(file)}", path=path, what="data")
        this = cls(path, file_format(path, READS, "data"), candidate_column, tuple(reference_columns), context_column)
        names = list(this.schema().names)
        for argument, name in [
            ("candidate_column", candidate_column),
            *(("reference_column", r) for r in reference_columns),
            *([] if context_column is None else [("context_column", context_column)]),
            *(("each column is kept in the output, by its name", n) for n in names),
        ]:
            columns.check_column(names, name, argument)
        types = this._settled_types(_pyarrow(), names)
        return this if types is None else dataclasses.replace(this, types=types)

    def schema(self) -> Any:
        """The columns and their types as the first record batch has them (an error for a file of no rows)."""
        first = next(self.batches(), None)
        if first is None:
            raise InputFileError(f"data file {self.path} has no rows: nothing to score", path=self.path, what="data")
        return first.schema

    def check_writable(self, fmt: str) -> None:
        """Refuse a column a file of `fmt` cannot hold before any pair is scored: no run is lost at its end."""
        pa = _pyarrow()
        for field in self.schema():
            if not _holds(pa, fmt, field.type):
                others = " or ".join(f".{f}" for f in ("parquet", "jsonl", "csv") if _holds(pa, f, field.type))
                raise ColumnDataError(
                    f"column {field.name!r} of data file {self.path} holds {field.type} values, which a "
                    f"{fmt.upper()} file cannot hold: write the output as {others}, or drop the column first",
                    column=field.name,
                    row=None,
                )

    def batches(self) -> Iterator[Any]:
        pa = _pyarrow()
        yield from self._guarded(pa, self._read(pa))

    def _guarded(self, pa: Any, blocks: Iterator[Any]) -> Iterator[Any]:
        """`blocks` with pyarrow's errors as one `InputFileError`, its row numbers counted from the file's first row."""
        done = 0
        try:
            for block in blocks:
                yield block
                done += block.num_rows
        except (pa.ArrowException, OSError) as err:
            message = re.sub(r"\bin row (\d+)", lambda m: f"in row {int(m[1]) + done}", " ".join(str(err).split()))
            message = message[:300] + (f" (at row {done} or later)" if done and " in row " not in message else "")
            advice = f": {ONE_TYPE}" if " changed from " in message else ""
            raise InputFileError(
                f"cannot read data file {self.path} as {self.format.upper()}: {message}{advice}",
                path=self.path,
                what="data",
            ) from None

    def _read(self, pa: Any) -> Iterator[Any]:
        if self.format == "parquet":
            import pyarrow.parquet

            yield from pyarrow.parquet.ParquetFile(self.path).iter_batches(batch_size=BATCH_ROWS)
        elif self.format == "jsonl":
            import pyarrow.json

            parse = pyarrow.json.ParseOptions(explicit_schema=self.types)
            if hasattr(pyarrow.json, "open_json"):  # pyarrow 18 on: a stream
                read = pyarrow.json.ReadOptions(block_size=BLOCK_BYTES)
                yield from pyarrow.json.open_json(self.path, read_options=read, parse_options=parse)
            else:
                yield from pyarrow.json.read_json(self.path, parse_options=parse).to_batches(max_chunksize=BATCH_ROWS)
        else:
            import pyarrow.csv

            if self.types is None:
                types = {name: pa.string() for name in self._text_columns()}
            else:
                types = dict(zip(self.types.names, self.types.types, strict=True))
            parse = pyarrow.csv.ParseOptions(delimiter="\t" if self.format == "tsv" else ",")
            convert = pyarrow.csv.ConvertOptions(column_types=types)
            read = pyarrow.csv.ReadOptions(block_size=BLOCK_BYTES)
            yield from pyarrow.csv.open_csv(self.path, read_options=read, parse_options=parse, convert_options=convert)

    def _text_columns(self) -> tuple[str, ...]:
        return (self.candidate_column, *self.reference_columns, *([self.context_column] if self.context_column else []))

    def _settled_types(self, pa: Any, names: list[str]) -> Any:
        """Every column's type for a CSV or JSON Lines file larger than one block, else None: pyarrow types a stream
        by its first block and stops where a later block differs, so each block is typed alone and the types joined."""
        if self.format == "parquet" or os.path.getsize(self.path) <= BLOCK_BYTES:
            return None
        blocks = self._json_blocks() if self.format == "jsonl" else self._csv_blocks(pa, names)
        schema: Any = None
        first = 0
        for block in self._guarded(pa, blocks):
            schema = block.schema if schema is None else self._joined(pa, schema, block.schema, first, block.num_rows)
            first += block.num_rows
        if self.format != "jsonl":
            for name in self._text_columns():
                schema = schema.set(schema.get_field_index(name), pa.field(name, pa.string()))
        return schema

    def _joined(self, pa: Any, schema: Any, block: Any, first: int, rows: int) -> Any:
        """Two blocks' types joined as pyarrow joins them, else as text where the file holds both as text; any other
        pair is an `InputFileError` naming the column and the rows."""
        for field in block:
            if field.name not in schema.names:
                continue
            known = schema.field(field.name)
            try:
                pa.unify_schemas([pa.schema([known]), pa.schema([field])], promote_options="permissive")
                continue
            except (pa.ArrowTypeError, pa.ArrowInvalid):
                pass
            texts = all(pa.types.is_string(t) or pa.types.is_timestamp(t) for t in (known.type, field.type))
            if self.format == "jsonl" and not texts:
                raise InputFileError(
                    f"cannot read data file {self.path}: column {field.name!r} holds {known.type} values before "
                    f"row {first} but {field.type} values in rows {first} to {first + rows - 1}: {ONE_TYPE}",
                    path=self.path,
                    what="data",
                )
            text = pa.field(field.name, pa.string())
            schema = schema.set(schema.get_field_index(field.name), text)
            block = block.set(block.get_field_index(field.name), text)
        return pa.unify_schemas([schema, block], promote_options="permissive")

    def _json_blocks(self) -> Iterator[Any]:
        import pyarrow.json

        def read(data: bytes) -> Any:
            options = pyarrow.json.ReadOptions(block_size=len(data) + 1)
            return pyarrow.json.read_json(io.BytesIO(data), read_options=options)

        with open(self.path, "rb") as file:
            rest = b""
            while data := file.read(BLOCK_BYTES):
                rest += data
                cut = rest.rfind(b"\n") + 1
                if cut:
                    yield read(rest[:cut])
                    rest = rest[cut:]
            if rest.strip():
                yield read(rest)

    def _csv_blocks(self, pa: Any, names: list[str]) -> Iterator[Any]:
        """The record batches, each typed alone as pyarrow types a whole file (read as texts, written, read again)."""
        import pyarrow.csv

        texts = dataclasses.replace(self, types=pa.schema([(name, pa.string()) for name in names]))
        for batch in texts._read(pa):
            buffer = io.BytesIO()
            pyarrow.csv.write_csv(pa.Table.from_batches([batch]), buffer)
            data = buffer.getvalue()
            yield pyarrow.csv.read_csv(io.BytesIO(data), read_options=pyarrow.csv.ReadOptions(block_size=len(data) + 1))

    def pairs(self) -> tuple[list[str], list[list[str]], bool]:
        """Every row's candidate and references, each cell checked, and whether rows may have several references."""
        cands: list[str] = []
        groups: list[list[str]] = []
        several = len(self.reference_columns) > 1
        for batch in self.batches():
            first = len(cands)
            cands += columns.texts(batch, "arrow", self.candidate_column, "candidate_column", first)
            more, many = columns.reference_groups(batch, "arrow", self.reference_columns, first, "reference_column")
            groups += more
            several = several or many
        return cands, groups, several

    def contexts(self) -> list[str] | None:
        if self.context_column is None:
            return None
        out: list[str] = []
        for batch in self.batches():
            out += columns.contexts(batch, "arrow", self.context_column, "context_column", len(out))
        return out


def write_scored(source: ColumnFile, target: Path, fmt: str, scores: Mapping[str, np.ndarray]) -> None:
    """Every row of `source` with the `scores` columns added, written a record batch at a time; the file's own
    score columns this run does not write (an earlier run's) are left out with a warning."""
    source.check_writable(fmt)
    pa = _pyarrow()
    writer: Any = None
    stale: list[str] | None = None
    done = 0
    with open(target, "wb") as sink:
        for batch in source.batches():
            if stale is None:
                stale = columns.stale_scores(batch.schema.names, scores, columns.PREFIX)
            rows = batch.num_rows
            new = {k: v[done : done + rows] for k, v in scores.items()}
            table = columns.with_columns(pa.Table.from_batches([batch]), "arrow", new, stale)
            done += rows
            writer = _write(pa, writer, sink, fmt, table)
        if writer is not None and fmt != "jsonl":
            writer.close()


def _write(pa: Any, writer: Any, sink: Any, fmt: str, table: Any) -> Any:
    if fmt == "jsonl":
        for row in table.to_pylist():
            sink.write((json.dumps(_json_value(row), ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8"))
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


def _json_value(value: Any) -> Any:
    """A cell as JSON holds it: NaN and infinities as null, dates and times as ISO 8601, decimals as strings."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _json_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_value(v) for v in value]
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return str(value)
    return value


def _holds(pa: Any, fmt: str, kind: Any) -> bool:
    """Whether a file of `fmt` holds values of type `kind`."""
    t = pa.types
    if t.is_dictionary(kind):
        return _holds(pa, fmt, kind.value_type)
    single = (t.is_null, t.is_boolean, t.is_integer, t.is_floating, t.is_decimal, t.is_unicode, t.is_date, t.is_time)
    if fmt == "parquet" or t.is_timestamp(kind) or any(check(kind) for check in single):
        return True
    if fmt == "csv":
        return bool(t.is_binary(kind) or t.is_large_binary(kind) or t.is_fixed_size_binary(kind))
    if t.is_nested(kind):
        return all(_holds(pa, fmt, kind.field(i).type) for i in range(kind.num_fields))
    return str(kind) == "string_view"
