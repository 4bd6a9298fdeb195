"""An empty batch gets the same columns, in the same order and of the same types, as a full one from the same
scorer: Ray Data and `datasets` concatenate the batches a scorer returns and fail on (or silently widen)
mismatched schemas. Each case scores a real batch of WMT pairs, then the same batch cut to no rows (its
column types kept, as an engine's empty block keeps them), and compares the two schemas."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from bertscore_tm import PACKAGED_MINILM, BatchScorer
from bertscore_tm.errors import ArgumentTypeError, ArgumentValueError, ColumnDataError

pd = pytest.importorskip("pandas")
pa = pytest.importorskip("pyarrow")

pytestmark = pytest.mark.usefixtures("one_thread")

N = 4


@pytest.fixture(scope="module")
def rows(wmt):
    cands, refs, refs2 = wmt["hyps"][:N], wmt["refs"][:N], wmt["refs2"][:N]
    # rows with different numbers of references, as a list column allows
    groups = [[r, s] if i % 2 else [r] for i, (r, s) in enumerate(zip(refs, refs2, strict=True))]
    return {"id": list(range(N)), "candidate": cands, "reference": refs, "other": refs2, "refs": groups}


def schema(out):
    """Column names and types, in order, of a batch in any of the three shapes."""
    if isinstance(out, dict):
        return [(name, getattr(values, "dtype", type(values))) for name, values in out.items()]
    if isinstance(out, pd.DataFrame):
        return list(out.dtypes.items())
    return [(field.name, field.type) for field in out.schema]


def shaped(rows, kind, columns):
    """`rows`' `columns` as a dict of numpy arrays, a DataFrame (list cells in pyarrow's list type, as Ray Data's
    pandas batches hold them) or a pyarrow Table, each with its types: an empty cut keeps them."""
    table = pa.table({c: rows[c] for c in columns})
    if kind == "arrow":
        return table, table.slice(0, 0)
    if kind == "pandas":
        frame = table.to_pandas(types_mapper=lambda t: pd.ArrowDtype(t) if pa.types.is_list(t) else None)
        return frame, frame.iloc[:0]
    fixed = {c: np.array(rows[c]) for c in columns}  # references of two per row: a 2-D array, fixed-size lists
    return fixed, {c: v[:0] for c, v in fixed.items()}


def assert_same_schema(scorer, full, empty):
    whole, none = scorer(full), scorer(empty)
    assert len(next(iter(none.values())) if isinstance(none, dict) else none) == 0
    assert schema(none) == schema(whole)
    return whole


@pytest.mark.parametrize("kind", ["mapping", "pandas", "arrow"])
def test_an_empty_batch_of_a_list_column_gets_the_best_reference(rows, kind):
    columns = ["id", "candidate", "refs"]
    if kind == "mapping":  # numpy holds only lists of one length in a typed (2-D) array
        rows = {**rows, "refs": [[r, s] for r, s in zip(rows["reference"], rows["other"], strict=True)]}
    full, empty = shaped(rows, kind, columns)
    whole = assert_same_schema(BatchScorer(PACKAGED_MINILM, reference_column="refs"), full, empty)
    assert "bertscore_best_reference" in schema_names(whole)


@pytest.mark.parametrize("kind", ["mapping", "pandas", "arrow"])
@pytest.mark.parametrize(
    "options",
    [
        {},
        {"reference_column": ["reference", "other"]},
        {"reference_column": ["reference", "other"], "beta": 2.0},
        {"beta": 0.5, "model_dtype": torch.bfloat16},
        {"reference_column": "reference", "several_references": True},
    ],
    ids=["plain", "columns", "columns-beta", "beta-bfloat16", "declared"],
)
def test_an_empty_batch_gets_the_columns_and_types_of_a_full_one(rows, kind, options):
    columns = ["id", "candidate", *([options.get("reference_column")] if options.get("reference_column") else [])]
    columns = [c for part in columns for c in ([part] if isinstance(part, str) else part)]
    columns += [] if "reference_column" in options else ["reference"]
    full, empty = shaped(rows, kind, columns)
    whole = assert_same_schema(BatchScorer(PACKAGED_MINILM, **options), full, empty)
    names = schema_names(whole)
    several = isinstance(options.get("reference_column"), list) or options.get("several_references")
    assert ("bertscore_best_reference" in names) == bool(several)
    assert ("bertscore_f_beta" in names) == ("beta" in options)


@pytest.mark.parametrize("kind", ["mapping", "pandas"])
def test_declared_several_references_fix_the_columns_of_an_untyped_empty_batch(rows, kind):
    """A dict of plain lists, or a DataFrame of Python objects, with no rows cannot say whether its cells are
    lists: `several_references=True` says it for every batch."""
    scorer = BatchScorer(PACKAGED_MINILM, reference_column="refs", several_references=True)
    full = {c: rows[c] for c in ("candidate", "refs")}
    empty = {c: [] for c in full}
    if kind == "pandas":
        full = pd.DataFrame(full, dtype=object)
        empty = full.iloc[:0]
    assert_same_schema(scorer, full, empty)


def test_several_references_false_refuses_a_list_and_a_list_of_columns(rows):
    scorer = BatchScorer(PACKAGED_MINILM, reference_column="refs", several_references=False)
    with pytest.raises(ColumnDataError, match=r"row 0 of column 'refs' holds a list .*several_references=False"):
        scorer({"candidate": rows["candidate"], "refs": rows["refs"]})
    with pytest.raises(ArgumentValueError, match="several_references"):
        BatchScorer(PACKAGED_MINILM, reference_column=["reference", "other"], several_references=False)
    with pytest.raises(ArgumentTypeError, match="several_references must be True or False"):
        BatchScorer(PACKAGED_MINILM, several_references="yes")


def schema_names(out):
    return [name for name, _ in schema(out)]
