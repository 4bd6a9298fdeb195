"""A context column (issue 39 with issue 38's columns): `BatchScorer(context_column=)` and `score --data FILE
--context-column X` score each row with its context as `update(..., context=)` does, bit for bit on a CPU, with
--checkpoint too; an empty cell is no context; a missing column is one line naming it."""

from __future__ import annotations

import numpy as np
import pytest

from bertscore_tm import BatchScorer, BERTScore
from tests.cli.test_score_data import assert_scores, one_line, read, score, write
from tests.conftest import MINILM

pa = pytest.importorskip("pyarrow")
pd = pytest.importorskip("pandas")

pytestmark = pytest.mark.usefixtures("one_thread")

N = 12


@pytest.fixture(scope="module")
def table(wmt):
    contexts = wmt["hyps_long"][N : 2 * N]
    contexts[3] = None  # an empty cell: this row has no context
    return pa.table(
        {
            "candidate": wmt["hyps_long"][:N],
            "reference": wmt["refs_long"][:N],
            "context": contexts,
        }
    )


@pytest.fixture(scope="module")
def expected(table):
    metric = BERTScore(MINILM, idf=True)
    contexts = [c or "" for c in table["context"].to_pylist()]
    metric.update(table["candidate"].to_pylist(), table["reference"].to_pylist(), context=contexts)
    return metric.compute_scores()


@pytest.mark.slow
def test_score_data_with_a_context_column_equals_the_metric_and_resumes(capsys, tmp_path, table, expected):
    data = write(table, tmp_path / "pairs.parquet")
    first, again = tmp_path / "first.parquet", tmp_path / "again.parquet"
    score(capsys, "--data", str(data), "--context-column", "context", "--idf", "-o", str(first))
    assert_scores(read(first), expected)
    args = ["--data", str(data), "--context-column", "context", "--idf", "--checkpoint", str(tmp_path / "ckpt")]
    score(capsys, *args, "--shard-size", "5", "-o", str(again))
    assert read(again).equals(read(first))
    without = tmp_path / "without.parquet"
    score(capsys, "--data", str(data), "--idf", "-o", str(without))
    assert not np.array_equal(read(without)["bertscore_f1"].to_numpy(), read(first)["bertscore_f1"].to_numpy())


def test_a_missing_context_column_is_one_line(capsys, tmp_path, table):
    data = write(table, tmp_path / "pairs.parquet")
    err = one_line(capsys, "--data", str(data), "--context-column", "source", "-o", str(tmp_path / "o.parquet"))
    assert "'source'" in err and "context_column" in err
    err = one_line(capsys, "-c", str(data), "-r", str(data), "--context-column", "context")
    assert "--context-column go with --data" in err


@pytest.mark.slow
@pytest.mark.parametrize("shape", ["dict", "pandas", "arrow"])
def test_batch_scorer_takes_a_context_column(table, shape):
    plain = BERTScore(MINILM)
    contexts = [c or "" for c in table["context"].to_pylist()]
    plain.update(table["candidate"].to_pylist(), table["reference"].to_pylist(), context=contexts)
    want = plain.compute_scores()
    batch = {"dict": table.to_pydict(), "pandas": table.to_pandas(), "arrow": table}[shape]
    out = BatchScorer(MINILM, context_column="context")(batch)
    f1 = np.asarray(out["bertscore_f1"] if shape != "arrow" else out["bertscore_f1"].to_numpy())
    assert np.array_equal(f1.astype(np.float32), want.f1.numpy())


def test_batch_scorer_hash_code_names_a_context_column():
    with_context, plain = BatchScorer(MINILM, context_column="context"), BatchScorer(MINILM)
    assert with_context.hash_code == plain.hash_code + "_context"
    assert not plain.hash_code.endswith("_context")
