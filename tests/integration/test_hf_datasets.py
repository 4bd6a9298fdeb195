"""BatchScorer and corpus_idf on real Hugging Face `datasets` (no mocks): `Dataset.map(batched=True)` in this
process, with `num_proc=2` (two worker processes, each loading the model from the pickled arguments) and with
`with_rank=True`; every route equal to the Metric on the same WMT pairs bit for bit, plain, IDF counted over
the Dataset first (two phases) and several references."""

from __future__ import annotations

import numpy as np
import pytest

from bertscore_tm import PACKAGED_MINILM, BatchScorer, BERTScore
from bertscore_tm.corpus import corpus_idf
from bertscore_tm.errors import ColumnDataError

datasets = pytest.importorskip("datasets")

N = 48


@pytest.fixture(scope="module")
def dataset(wmt):
    return datasets.Dataset.from_dict(
        {
            "candidate": wmt["hyps_long"][:N],
            "reference": wmt["refs_long"][:N],
            "refs": [[a, b] for a, b in zip(wmt["refs_long"][:N], wmt["refs_long"][N : 2 * N], strict=True)],
        }
    )


def metric_scores(dataset, references, **kwargs):
    metric = BERTScore(PACKAGED_MINILM, **kwargs)
    metric.update(list(dataset["candidate"]), list(dataset[references]))
    return metric, metric.compute_scores()


@pytest.fixture(scope="module")
def plain(dataset):
    return metric_scores(dataset, "reference")[1]


def assert_equal(out, scores, several=False):
    for name in ("precision", "recall", "f1"):
        column = np.asarray(out[f"bertscore_{name}"], dtype=np.float32)
        assert np.array_equal(column, getattr(scores, name).numpy()), name
    if several:
        assert np.array_equal(np.asarray(out["bertscore_best_reference"]), scores.best_reference.numpy())


@pytest.mark.parametrize("options", [{}, {"num_proc": 2}, {"num_proc": 2, "with_rank": True}])
def test_map_equals_the_metric(dataset, plain, options):
    out = dataset.map(BatchScorer(PACKAGED_MINILM), batched=True, batch_size=10, **options)
    assert out.column_names == [*dataset.column_names, "bertscore_precision", "bertscore_recall", "bertscore_f1"]
    assert out["candidate"] == dataset["candidate"]
    assert_equal(out, plain)


def test_idf_in_two_phases_with_several_references_and_two_processes(dataset):
    metric, scores = metric_scores(dataset, "refs", idf=True)
    weights = corpus_idf(dataset, PACKAGED_MINILM, reference_column="refs")
    assert weights == metric.idf_weights()
    scorer = BatchScorer(PACKAGED_MINILM, reference_column="refs", idf=True, idf_weights=weights)
    out = dataset.map(scorer, batched=True, batch_size=10, num_proc=2)
    assert_equal(out, scores, several=True)


def test_an_empty_list_of_references_names_its_row(dataset):
    bad = dataset.select(range(4)).map(lambda row, i: {"refs": [] if i == 2 else row["refs"]}, with_indices=True)
    with pytest.raises(ColumnDataError, match="row 2 of column 'refs' is an empty list"):
        bad.map(BatchScorer(PACKAGED_MINILM, reference_column="refs"), batched=True)
