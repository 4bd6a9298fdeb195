"""Rows given as columns, in the three shapes data engines hand them over: a mapping of columns (lists or numpy
arrays: Ray Data's "numpy" batches, Hugging Face ``datasets``' batches), a pandas DataFrame, or a pyarrow
Table (or RecordBatch). Texts come out as plain Python strings, each cell checked, and scores go back in as new
columns of the same shape.

pandas and pyarrow are recognised by their type's module, never imported here, so that the package imports
neither (they are optional extras). Every bad cell is a `ColumnDataError` naming its column and row, and so
is a column asked for that is missing or whose name two columns share. A batch's own score columns from an
earlier run never stay beside the new ones (`stale_scores`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from bertscore_tm.errors import ArgumentTypeError, BERTScoreError, ColumnDataError, warn_user
from bertscore_tm.settings.texts import check_text

#: The score columns a scorer adds, after its prefix (``bertscore_`` by default, always on the command line).
PREFIX = "bertscore_"
SCORE_NAMES = ("precision", "recall", "f1", "f_beta", "best_reference")


def batch_kind(batch: object) -> str:
    """``"pandas"``, ``"arrow"`` or ``"mapping"``: which shape `batch` has (an `ArgumentTypeError` for anything
    else)."""
    module = type(batch).__module__
    if module.startswith("pandas") and hasattr(batch, "columns"):
        return "pandas"
    if module.startswith("pyarrow") and hasattr(batch, "column_names"):
        return "arrow"
    if isinstance(batch, Mapping):
        return "mapping"
    raise ArgumentTypeError(
        f"a batch of rows must be a dict of columns (lists or numpy arrays), a pandas DataFrame or a pyarrow "
        f"Table, got {type(batch).__name__}",
        argument="batch",
        expected="Mapping | pandas.DataFrame | pyarrow.Table",
        value=batch,
    )


def column_names(batch: Any, kind: str) -> list[str]:
    """The names of the batch's columns, in order."""
    if kind == "pandas":
        return [str(c) for c in batch.columns]
    if kind == "arrow":
        return list(batch.column_names)
    return [str(c) for c in batch]


def num_rows(batch: Any, kind: str) -> int:
    """How many rows the batch holds (0 for a mapping without columns)."""
    if kind in ("pandas", "arrow"):
        return len(batch)
    for name, values in batch.items():  # one row's values (`datasets`' map without batched=True), not columns
        if isinstance(values, (str, bytes)) or not hasattr(values, "__len__"):
            raise ColumnDataError(
                f"column {str(name)!r} of the batch holds one {type(values).__name__} ({values!r:.40}), not a "
                "column of values: a dict batch maps each column to a list (with datasets, map(..., batched=True))",
                column=str(name),
                row=None,
            )
    lengths = {len(values) for values in batch.values()}
    if len(lengths) > 1:
        raise ColumnDataError(f"the batch's columns have different lengths: {sorted(lengths)}", column=None, row=None)
    return lengths.pop() if lengths else 0


def check_column(names: Sequence[str], column: str, argument: str) -> None:
    """A `ColumnDataError` unless `column` is one of `names` exactly once: a missing column is named with the
    columns present, and a name given to two columns is refused (pandas would hand over both as one frame,
    whose cells are its labels, and pyarrow cannot tell which one is meant)."""
    count = list(names).count(column)
    if count == 0:
        raise ColumnDataError(
            f"no column {column!r} in the rows ({argument}); the columns are: {', '.join(map(repr, names))}",
            column=column,
            row=None,
        )
    if count > 1:
        raise ColumnDataError(
            f"the column name {column!r} appears {count} times in the rows ({argument}): rename or drop all but "
            "one of those columns first",
            column=column,
            row=None,
        )


def cells(batch: Any, kind: str, column: str, argument: str) -> list[Any]:
    """The cells of `column` as Python objects, once `check_column` has found it exactly once (a DataFrame's or a
    dict's label that is not a string, such as 0, is found by its string, "0")."""
    names = column_names(batch, kind)
    check_column(names, column, argument)
    if kind == "arrow":
        return list(batch.column(column).to_pylist())
    labels = list(batch.columns) if kind == "pandas" else list(batch)
    values = batch[labels[names.index(column)]]
    return list(values.tolist()) if hasattr(values, "tolist") else list(values)


def _is_empty(value: object) -> bool:
    """Whether a cell is empty: null, NaN, or pandas' missing markers."""
    missing = type(value).__name__ in ("NAType", "NaTType")
    return value is None or (isinstance(value, float) and value != value) or missing


def text_cell(value: object, column: str, row: int) -> str:
    """`value` as a text, or a `ColumnDataError` saying why it is not one (null, NaN, a number, a lone
    surrogate...)."""
    if isinstance(value, str):
        try:
            return check_text(str(value), f"row {row} of column {column!r}")
        except BERTScoreError as err:
            raise ColumnDataError(str(err), column=column, row=row) from None
    if _is_empty(value):
        raise ColumnDataError(
            f"row {row} of column {column!r} is empty (null or NaN): every pair needs its texts; drop or fill "
            "such rows first (for example dataset.filter(...) or DataFrame.dropna())",
            column=column,
            row=row,
        )
    raise ColumnDataError(
        f"row {row} of column {column!r} holds {type(value).__name__} {value!r:.60}, not a text: cast the column "
        "to strings first",
        column=column,
        row=row,
    )


def texts(values: Sequence[object], column: str, first_row: int) -> list[str]:
    """Every cell of a column of texts, checked (rows numbered from `first_row`)."""
    return [text_cell(v, column, first_row + i) for i, v in enumerate(values)]


def contexts(values: Sequence[object], column: str, first_row: int) -> list[str]:
    """Every cell of a column of contexts, checked as texts are, except that an empty cell (null, NaN) is a
    blank context, which adds nothing (docs/semantics.md, Context): a row may have none."""
    return ["" if _is_empty(v) else text_cell(v, column, first_row + i) for i, v in enumerate(values)]


def reference_groups(
    batch: Any, kind: str, columns: Sequence[str], first_row: int, argument: str, several: bool | None = None
) -> tuple[list[list[str]], bool]:
    """Each row's references, and whether rows may have several: one per column of `columns`, or, with one
    column whose cells are lists, that row's list (an empty list is refused, naming its row).

    Whether one column holds several is `several` where the caller knows it (False: a list cell is refused),
    else the column's type where it has one (a pyarrow list, a pandas column of pyarrow lists, a 2-D numpy
    array), else its cells: a batch of no rows without such a type cannot tell, and says one each."""
    if len(columns) > 1:
        per_column = [texts(cells(batch, kind, c, argument), c, first_row) for c in columns]
        return [list(group) for group in zip(*per_column, strict=True)], True
    column = columns[0]
    values = cells(batch, kind, column, argument)
    if several is None:
        several = list_typed(batch, kind, column) or any(_is_list(v) for v in values)
    if not several:
        return [[_one_reference(v, column, first_row + i)] for i, v in enumerate(values)], False
    groups = []
    for i, value in enumerate(values):
        row = first_row + i
        if not _is_list(value):
            groups.append([text_cell(value, column, row)])
            continue
        items = list(value.tolist() if hasattr(value, "tolist") else value)
        if not items:
            raise ColumnDataError(
                f"row {row} of column {column!r} is an empty list: every candidate needs at least one reference",
                column=column,
                row=row,
            )
        groups.append([text_cell(v, f"{column}[{j}]", row) for j, v in enumerate(items)])
    return groups, True


def list_typed(batch: Any, kind: str, column: str) -> bool:
    """Whether `column`'s type (not its cells) says lists: what an empty batch still carries."""
    if kind == "arrow":
        kind_type = batch.schema.field(column).type
    else:
        values = batch[column]
        if isinstance(values, np.ndarray):
            return values.ndim > 1
        kind_type = getattr(getattr(values, "dtype", None), "pyarrow_dtype", None)  # pandas' ArrowDtype
    return str(kind_type).startswith(("list", "large_list", "fixed_size_list"))


def _one_reference(value: object, column: str, row: int) -> str:
    if _is_list(value):
        raise ColumnDataError(
            f"row {row} of column {column!r} holds a list of references, but the scorer was told "
            "several_references=False: leave it out (or pass True) for a column of lists",
            column=column,
            row=row,
        )
    return text_cell(value, column, row)


def _is_list(value: object) -> bool:
    return isinstance(value, (list, tuple, np.ndarray))


def stale_scores(names: Sequence[str], new: Iterable[str], prefix: str) -> list[str]:
    """The columns among `names` that carry this package's score names (`prefix` + one of `SCORE_NAMES`) but
    are not among the `new` columns: an earlier run's (a best reference from a run with several references,
    an F-beta from a run with beta), which would stand beside this run's scores as if they were theirs. A
    warning names them; the caller leaves them out (`with_columns`)."""
    unwritten = {prefix + name for name in SCORE_NAMES} - set(new)
    stale = [name for name in dict.fromkeys(names) if name in unwritten]
    if stale:
        warn_user(
            f"the rows already hold score column(s) {', '.join(map(repr, stale))} that this run does not write "
            "(an earlier run's): left out of the output, so that every score column is this run's"
        )
    return stale


def with_columns(batch: Any, kind: str, new: Mapping[str, np.ndarray], drop: Sequence[str] = ()) -> Any:
    """The batch without the `drop` columns and with the `new` columns added (or replaced), in the batch's own
    shape; the input is not changed."""
    if kind == "pandas":
        return (batch.drop(columns=list(drop)) if drop else batch).assign(**new)
    if kind == "arrow":
        out = batch
        for name in [*drop, *new]:
            if name in out.column_names:
                out = out.drop_columns([name]) if hasattr(out, "drop_columns") else out.drop([name])
        for name, values in new.items():
            out = out.append_column(name, _arrow_array(values))
        return out
    return {**{k: v for k, v in batch.items() if k not in drop}, **new}


def _arrow_array(values: np.ndarray) -> Any:
    """A pyarrow array of `values` (pyarrow imported only once a table is at hand, so it is installed)."""
    import pyarrow

    return pyarrow.array(values)
