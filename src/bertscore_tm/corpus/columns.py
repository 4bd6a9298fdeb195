"""Rows given as columns, in the shapes data engines hand them over: a mapping of columns, a pandas DataFrame or
a pyarrow Table. pandas and pyarrow are recognised by their type's module, never imported here, since both
are optional extras; every bad cell is a `ColumnDataError` naming its column and row."""

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
    """``"pandas"``, ``"arrow"`` or ``"mapping"``, or an `ArgumentTypeError` for any other batch."""
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
    if kind == "pandas":
        return [str(c) for c in batch.columns]
    if kind == "arrow":
        return list(batch.column_names)
    return [str(c) for c in batch]


def num_rows(batch: Any, kind: str) -> int:
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
    """Refuse a `column` that is missing or whose name two columns share: pandas would hand over both as one
    frame, and pyarrow cannot tell which one is meant."""
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
    """The cells of `column` as Python objects (a label that is not a string, such as 0, is found by its string)."""
    names = column_names(batch, kind)
    check_column(names, column, argument)
    if kind == "arrow":
        return list(batch.column(column).to_pylist())
    labels = list(batch.columns) if kind == "pandas" else list(batch)
    values = batch[labels[names.index(column)]]
    return list(values.tolist()) if hasattr(values, "tolist") else list(values)


def _is_empty(value: object) -> bool:
    missing = type(value).__name__ in ("NAType", "NaTType")
    return value is None or (isinstance(value, float) and value != value) or missing


def text_cell(value: object, column: str, row: int) -> str:
    """`value` as a text, or a `ColumnDataError` saying why it is not one."""
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


def texts(batch: Any, kind: str, column: str, argument: str, first_row: int) -> list[str]:
    """The cells of `column` as texts, its rows numbered from `first_row`."""
    return [text_cell(v, column, row) for row, v in enumerate(cells(batch, kind, column, argument), first_row)]


def contexts(batch: Any, kind: str, column: str, argument: str, first_row: int) -> list[str]:
    """A column of contexts, checked as texts are, except that an empty cell is a blank context: a row may have none."""
    values = cells(batch, kind, column, argument)
    return ["" if _is_empty(v) else text_cell(v, column, row) for row, v in enumerate(values, first_row)]


def reference_groups(
    batch: Any, kind: str, columns: Sequence[str], first_row: int, argument: str, several: bool | None = None
) -> tuple[list[list[str]], bool]:
    """Each row's references, and whether rows may have several: `several` where the caller knows it, else the
    column's type, else its cells, so that every batch of one source gets the same columns."""
    if len(columns) > 1:
        per_column = [texts(batch, kind, c, argument, first_row) for c in columns]
        return [list(group) for group in zip(*per_column, strict=True)], True
    column = columns[0]
    values = cells(batch, kind, column, argument)
    if several is None:
        several = list_typed(batch, kind, column) or any(_is_list(v) for v in values)
    groups = []
    for row, value in enumerate(values, first_row):
        if not _is_list(value):
            groups.append([text_cell(value, column, row)])
            continue
        if not several:
            raise ColumnDataError(
                f"row {row} of column {column!r} holds a list of references, but the scorer was told "
                "several_references=False: leave it out (or pass True) for a column of lists",
                column=column,
                row=row,
            )
        items = list(value.tolist() if hasattr(value, "tolist") else value)
        if not items:
            raise ColumnDataError(
                f"row {row} of column {column!r} is an empty list: every candidate needs at least one reference",
                column=column,
                row=row,
            )
        groups.append([text_cell(v, f"{column}[{j}]", row) for j, v in enumerate(items)])
    return groups, several


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


def _is_list(value: object) -> bool:
    return isinstance(value, (list, tuple, np.ndarray))


def stale_scores(names: Sequence[str], new: Iterable[str], prefix: str) -> list[str]:
    """The columns of `names` with this package's score names that this run does not write (an earlier run's),
    warned about, so that no score beside the new ones is another run's."""
    unwritten = {prefix + name for name in SCORE_NAMES} - set(new)
    stale = [name for name in dict.fromkeys(names) if name in unwritten]
    if stale:
        warn_user(
            f"the rows already hold score column(s) {', '.join(map(repr, stale))} that this run does not write "
            "(an earlier run's): left out of the output, so that every score column is this run's"
        )
    return stale


def with_columns(batch: Any, kind: str, new: Mapping[str, np.ndarray], drop: Sequence[str] = ()) -> Any:
    """The batch without the `drop` columns and with the `new` ones, in its own shape; the input is not changed."""
    if kind == "pandas":
        return (batch.drop(columns=list(drop)) if drop else batch).assign(**new)
    if kind == "arrow":
        import pyarrow

        gone = [name for name in dict.fromkeys([*drop, *new]) if name in batch.column_names]
        out = batch.drop_columns(gone) if hasattr(batch, "drop_columns") else batch.drop(gone)
        for name, values in new.items():
            out = out.append_column(name, pyarrow.array(values))
        return out
    return {**{k: v for k, v in batch.items() if k not in drop}, **new}
