"""BatchScorer and corpus_idf on the three batch shapes (dicts of lists or numpy arrays, pandas, pyarrow):
every route equal to the Metric on the same WMT pairs bit for bit, whatever the batches, plain, with IDF
counted over the whole corpus first, and with several references; bad rows name their column and row.
The Ray and `datasets` engines themselves are in tests/integration/test_dataframes.py."""

from __future__ import annotations

import pickle
import subprocess
import sys

import numpy as np
import pytest

from bertscore_tm import PACKAGED_MINILM, BatchScorer, BERTScore
from bertscore_tm.corpus import corpus_idf
from bertscore_tm.errors import ArgumentTypeError, ArgumentValueError, ColumnDataError

pd = pytest.importorskip("pandas")
pa = pytest.importorskip("pyarrow")

pytestmark = pytest.mark.usefixtures("one_thread")

N = 48


@pytest.fixture(scope="module")
def pairs(wmt):
    # a second reference per candidate: the reference of another pair, a real text of the same kind
    return wmt["hyps_long"][:N], wmt["refs_long"][:N], wmt["refs_long"][N : 2 * N]


def metric_scores(cands, refs, **kwargs):
    metric = BERTScore(PACKAGED_MINILM, **kwargs)
    metric.update(cands, refs)
    return metric, metric.compute_scores()


@pytest.fixture(scope="module")
def plain(pairs):
    return metric_scores(pairs[0], pairs[1])[1]


@pytest.fixture(scope="module")
def several(pairs):
    return metric_scores(pairs[0], [list(g) for g in zip(pairs[1], pairs[2], strict=True)])[1]


@pytest.fixture(scope="module")
def scorer():
    return BatchScorer(PACKAGED_MINILM)


def assert_equal(columns, scores, several=False):
    assert np.array_equal(np.asarray(columns["bertscore_precision"]), scores.precision.numpy())
    assert np.array_equal(np.asarray(columns["bertscore_recall"]), scores.recall.numpy())
    assert np.array_equal(np.asarray(columns["bertscore_f1"]), scores.f1.numpy())
    if several:
        assert np.array_equal(np.asarray(columns["bertscore_best_reference"]), scores.best_reference.numpy())


@pytest.mark.slow
@pytest.mark.parametrize("size", [1, 7, N])
def test_dicts_of_lists_and_arrays_in_any_batches_equal_the_metric(scorer, pairs, plain, size):
    pieces = []
    for lo in range(0, N, size):
        cands, refs = pairs[0][lo : lo + size], pairs[1][lo : lo + size]
        batch = (
            {"candidate": np.array(cands, dtype=object), "reference": refs}
            if lo % 2
            else {
                "candidate": cands,
                "reference": np.array(refs),
            }
        )
        out = scorer(batch)
        assert list(out) == ["candidate", "reference", "bertscore_precision", "bertscore_recall", "bertscore_f1"]
        pieces.append(out)
    joined = {k: np.concatenate([p[k] for p in pieces]) for k in pieces[0] if k.startswith("bertscore_")}
    assert joined["bertscore_f1"].dtype == np.float32
    assert_equal(joined, plain)


def test_pandas_keeps_every_column_and_index(scorer, pairs, plain):
    frame = pd.DataFrame(
        {"id": list(range(N)), "candidate": pairs[0], "reference": pairs[1]}, index=np.arange(10, 10 + N)
    )
    out = frame.pipe(scorer)
    assert list(out.columns) == [
        "id",
        "candidate",
        "reference",
        "bertscore_precision",
        "bertscore_recall",
        "bertscore_f1",
    ]
    assert list(out.index) == list(frame.index) and "bertscore_f1" not in frame
    assert_equal({k: out[k].to_numpy() for k in out.columns}, plain)


@pytest.mark.slow
def test_several_references_as_columns_or_as_one_column_of_lists(pairs, several):
    groups = [list(g) for g in zip(pairs[1], pairs[2], strict=True)]
    table = pa.table({"candidate": pairs[0], "refs": groups})
    out = BatchScorer(PACKAGED_MINILM, reference_column="refs", prefix="bertscore_")(table)
    assert out.column_names[-1] == "bertscore_best_reference"
    assert_equal({k: out[k].to_numpy() for k in out.column_names[2:]}, several, several=True)
    frame = pd.DataFrame({"candidate": pairs[0], "r1": pairs[1], "r2": pairs[2]})
    out = BatchScorer(PACKAGED_MINILM, reference_column=["r1", "r2"])(frame)
    assert_equal({k: out[k].to_numpy() for k in out.columns}, several, several=True)


@pytest.mark.slow
def test_idf_counted_over_the_corpus_first_equals_the_metric_with_idf(pairs):
    groups = [list(g) for g in zip(pairs[1], pairs[2], strict=True)]
    metric, scores = metric_scores(pairs[0], groups, idf=True)
    weights = corpus_idf(groups, PACKAGED_MINILM)
    assert weights == metric.idf_weights()
    scorer = BatchScorer(PACKAGED_MINILM, reference_column="refs", idf=True, idf_weights=weights)
    halves = [scorer({"candidate": pairs[0][s], "refs": groups[s]}) for s in (slice(0, 20), slice(20, N))]
    assert_equal({k: np.concatenate([h[k] for h in halves]) for k in halves[0] if k.startswith("b")}, scores, True)


@pytest.mark.slow
@pytest.mark.parametrize("shape", ["pandas", "arrow", "dict"])
def test_corpus_idf_reads_a_table_s_reference_columns_not_its_column_names(pairs, shape, monkeypatch):
    """Iterated, a DataFrame or a dict gives its column names: the table's columns must be read, a chunk of rows
    at a time (7 here), to the metric's counts over the same references."""
    from bertscore_tm.corpus import idf_counts

    monkeypatch.setattr(idf_counts, "CHUNK", 7)
    groups = [list(g) for g in zip(pairs[1], pairs[2], strict=True)]
    columns = {"first": pairs[1], "second": pairs[2], "other": list(range(N))}
    table = {"pandas": pd.DataFrame, "arrow": pa.table, "dict": dict}[shape](columns)
    metric, _ = metric_scores(pairs[0], groups, idf=True)
    assert corpus_idf(table, PACKAGED_MINILM, reference_column=["first", "second"]) == metric.idf_weights()


@pytest.mark.parametrize(
    "row", [{"candidate": "cat sat", "reference": "dog ran"}, {"candidate": ["a"], "reference": 5}]
)
def test_a_dict_of_one_row_s_values_is_refused_not_scored_character_by_character(scorer, row):
    """`datasets`' map without batched=True hands one row: its strings, taken as columns, were lists of
    characters (a score a character, or 'different lengths' where the texts' lengths differ)."""
    column = next(name for name, value in row.items() if not isinstance(value, list))
    with pytest.raises(ColumnDataError, match=rf"column '{column}' of the batch holds one .*batched=True"):
        scorer(row)


def test_idf_counted_per_batch_is_refused_before_loading():
    with pytest.raises(ArgumentValueError, match="corpus_idf"):
        BatchScorer(PACKAGED_MINILM, idf=True)
    with pytest.raises(ArgumentValueError, match="all_layers"):
        BatchScorer(PACKAGED_MINILM, all_layers=True)
    with pytest.raises(TypeError, match="unexpected"):
        BatchScorer(PACKAGED_MINILM, candidate="x")
    with pytest.raises(ArgumentValueError, match="reference_column"):
        BatchScorer(PACKAGED_MINILM, reference_column=[])


def test_the_scorer_pickles_without_its_model(pairs, plain):
    scorer = BatchScorer(PACKAGED_MINILM)
    scorer({"candidate": pairs[0][:2], "reference": pairs[1][:2]})
    assert len(pickle.dumps(scorer)) < 2000
    copy = pickle.loads(pickle.dumps(scorer))
    assert_equal(copy({"candidate": pairs[0], "reference": pairs[1]}), plain)


@pytest.mark.parametrize(
    ("batch", "message"),
    [
        ({"candidate": ["a"], "ref": ["b"]}, r"no column 'reference' .*the columns are: 'candidate', 'ref'"),
        ({"candidate": ["a", None], "reference": ["b", "c"]}, r"row 1 of column 'candidate' is empty"),
        ({"candidate": ["a", "b"], "reference": ["c", float("nan")]}, r"row 1 of column 'reference' is empty"),
        ({"candidate": ["a", 7], "reference": ["b", "c"]}, r"row 1 of column 'candidate' holds int 7, not a text"),
        ({"candidate": ["a", "b"], "reference": [["c"], []]}, r"row 1 of column 'reference' is an empty list"),
        ({"candidate": ["a"], "reference": [["c", None]]}, r"row 0 of column 'reference\[1\]' is empty"),
        ({"candidate": ["a", "b"], "reference": ["c"]}, r"different lengths"),
    ],
)
def test_bad_rows_name_their_column_and_row(scorer, batch, message):
    with pytest.raises(ColumnDataError, match=message) as caught:
        scorer(batch)
    assert pickle.loads(pickle.dumps(caught.value)).row == caught.value.row


def test_a_nan_cell_of_a_dataframe_and_an_empty_batch(scorer):
    with pytest.raises(ColumnDataError, match="row 1 of column 'reference' is empty"):
        scorer(pd.DataFrame({"candidate": ["a", "b"], "reference": ["c", None]}))
    out = scorer(pd.DataFrame({"candidate": [], "reference": []}))
    assert len(out) == 0 and "bertscore_f1" in out
    with pytest.raises(TypeError, match="dict of columns"):
        scorer(["a", "b"])


def test_corpus_idf_refuses_an_empty_corpus_and_takes_a_string_as_one_text():
    with pytest.raises(ArgumentValueError, match="empty"):
        corpus_idf([], PACKAGED_MINILM)
    assert corpus_idf("A cat sat.", PACKAGED_MINILM) == corpus_idf(["A cat sat."], PACKAGED_MINILM)
    for bad in (None, b"A cat sat.", 3):
        with pytest.raises(ArgumentTypeError, match="references") as err:
            corpus_idf(bad, PACKAGED_MINILM)
        assert err.value.argument == "references"
    with pytest.raises(ArgumentValueError, match="does not use beta"):
        corpus_idf(["A cat sat."], PACKAGED_MINILM, beta=2.0)


@pytest.mark.slow
def test_importing_the_package_imports_no_data_engine():
    code = (
        "import sys, bertscore_tm\nfrom bertscore_tm import BatchScorer\nfrom bertscore_tm.corpus import corpus_idf\n"
        "print(sorted(m for m in ('ray', 'datasets', 'pandas', 'pyarrow') if m in sys.modules))"
    )
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "[]\n"


def test_beta_adds_an_f_beta_column_equal_to_the_metric_and_keeps_the_best_reference(wmt) -> None:
    cands, refs, refs2 = wmt["hyps"][:6], wmt["refs"][:6], wmt["refs2"][:6]
    rows = BatchScorer(PACKAGED_MINILM, reference_column=["r1", "r2"], beta=3.0)(
        {"candidate": cands, "r1": refs, "r2": refs2}
    )
    metric = BERTScore(PACKAGED_MINILM, beta=3.0)
    metric.update(cands, [[a, b] for a, b in zip(refs, refs2, strict=True)])
    expected = metric.compute()
    for name in ("precision", "recall", "f1", "f_beta"):
        assert np.array_equal(rows[f"bertscore_{name}"], expected[name].numpy()), name
    best = metric.compute_scores().best_reference
    assert best is not None and rows["bertscore_best_reference"].tolist() == best.tolist()


@pytest.mark.parametrize("shape", ["pandas", "arrow"])
@pytest.mark.parametrize("column", ["candidate", "reference"])
def test_a_column_name_given_to_two_columns_is_refused(scorer, shape, column):
    """pandas hands over both columns as one frame (whose cells would be its labels: every candidate scored
    against the word "reference") and pyarrow cannot pick one: neither may pass as a score."""
    names = ["candidate", "reference", column]
    rows = [["The cat sat.", "A cat sat.", "x"], ["It rained.", "Rain fell.", "y"]]
    batch = pd.DataFrame(rows, columns=names)
    if shape == "arrow":
        batch = pa.Table.from_arrays([pa.array(list(c)) for c in zip(*rows, strict=True)], names=names)
    with pytest.raises(ColumnDataError, match=f"the column name '{column}' appears 2 times") as caught:
        scorer(batch)
    assert caught.value.column == column and caught.value.row is None


@pytest.mark.slow
@pytest.mark.parametrize("shape", ["mapping", "pandas", "arrow"])
def test_score_columns_of_an_earlier_run_never_stand_beside_this_runs(scorer, pairs, plain, shape):
    """Rows scored before with two references carry a best reference: scored again with one, that column
    would sit beside the new scores as if it were theirs. It is left out with a warning naming it; the
    scores of the same names are replaced, and other columns (even with the prefix) are kept."""
    earlier = {"bertscore_best_reference": [1] * N, "bertscore_f1": [0.5] * N, "bertscore_note": ["kept"] * N}
    batch: object = {"candidate": pairs[0], "reference": pairs[1], **earlier}
    if shape != "mapping":
        batch = pd.DataFrame(batch) if shape == "pandas" else pa.table(batch)
    with pytest.warns(UserWarning, match=r"'bertscore_best_reference' that this run does not write") as caught:
        out = scorer(batch)
    assert len(caught) == 1 and "bertscore_f1'" not in str(caught[0].message)
    names = list(out.columns) if shape == "pandas" else list(out.column_names if shape == "arrow" else out)
    assert "bertscore_best_reference" not in names and "bertscore_note" in names
    assert names.count("bertscore_f1") == 1
    assert_equal({k: np.asarray(out[k]) for k in names if k != "bertscore_note"}, plain)
