"""``bertscore-tm score --data FILE``: Parquet, JSON Lines, CSV and TSV in, Parquet, JSON Lines and CSV out,
every input column kept and the score columns equal to the Metric's on the same WMT pairs bit for bit (plain,
IDF, several references, --checkpoint), written atomically; bad files and cells are one line naming the
file, column or row, before any model loads."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import bertscore_tm
from bertscore_tm import BERTScore
from bertscore_tm.cli import main
from tests.conftest import MINILM

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
pcsv = pytest.importorskip("pyarrow.csv")

pytestmark = pytest.mark.usefixtures("one_thread")

N = 24


@pytest.fixture(scope="module")
def table(wmt):
    refs = wmt["refs_long"]
    return pa.table(
        {
            "id": list(range(N)),
            "source": [f"doc {i % 3}" for i in range(N)],
            "candidate": wmt["hyps_long"][:N],
            "reference": refs[:N],
            "other": refs[N : 2 * N],
        }
    )


def metric_scores(table, several=False, **kwargs):
    metric = BERTScore(MINILM, **kwargs)
    refs = table["reference"].to_pylist()
    if several:
        refs = [list(g) for g in zip(refs, table["other"].to_pylist(), strict=True)]
    metric.update(table["candidate"].to_pylist(), refs)
    return metric.compute_scores()


@pytest.fixture(scope="module")
def plain(table):
    return metric_scores(table)


def write(table, path: Path) -> Path:
    if path.suffix == ".parquet":
        pq.write_table(table, path)
    elif path.suffix == ".jsonl":
        path.write_text("".join(json.dumps(row) + "\n" for row in table.to_pylist()), encoding="utf-8")
    else:
        pcsv.write_csv(table, path, pcsv.WriteOptions(delimiter="\t" if path.suffix == ".tsv" else ","))
    return path


def read(path: Path):
    if path.suffix == ".parquet":
        return pq.read_table(path)
    if path.suffix == ".jsonl":
        return pa.Table.from_pylist([json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()])
    return pcsv.read_csv(path, convert_options=pcsv.ConvertOptions(column_types={"source": pa.string()}))


def score(capsys, *args: str) -> str:
    code = main(["score", "-m", MINILM, *args])
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


def assert_scores(out, scores, several=False):
    for name in ("precision", "recall", "f1"):
        column = out[f"bertscore_{name}"].to_numpy().astype(np.float32)  # JSON and CSV give float64, exactly
        assert np.array_equal(column, getattr(scores, name).numpy()), name
    if several:
        assert out["bertscore_best_reference"].to_pylist() == scores.best_reference.tolist()


@pytest.mark.parametrize(
    ("source", "target"), [("parquet", "parquet"), ("jsonl", "jsonl"), ("csv", "csv"), ("tsv", "parquet")]
)
def test_round_trips_keep_every_column_and_equal_the_metric(capsys, tmp_path, table, plain, source, target):
    data = write(table, tmp_path / f"pairs.{source}")
    out_file = tmp_path / f"scored.{target}"
    printed = score(capsys, "--data", str(data), "-o", str(out_file))
    assert printed.startswith(plain.hash_code) and f"F1: {float(plain.f1.double().mean()):.6f}" in printed
    out = read(out_file)
    assert out.column_names == [*table.column_names, "bertscore_precision", "bertscore_recall", "bertscore_f1"]
    for name in table.column_names:
        assert out[name].to_pylist() == table[name].to_pylist(), name
    assert_scores(out, plain)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([data.name, out_file.name])  # no temporary file left


def test_several_references_as_columns_and_idf(capsys, tmp_path, table):
    data = write(table, tmp_path / "pairs.parquet")
    out_file = tmp_path / "scored.parquet"
    score(capsys, "--data", str(data), "--reference-column", "reference", "other", "--idf", "-o", str(out_file))
    assert_scores(read(out_file), metric_scores(table, several=True, idf=True), several=True)


def test_a_column_of_lists_and_a_checkpoint_resumed(capsys, tmp_path, table):
    groups = [list(g) for g in zip(table["reference"].to_pylist(), table["other"].to_pylist(), strict=True)]
    data = write(table.append_column("refs", pa.array(groups)), tmp_path / "pairs.jsonl")
    checkpoint, first, again = tmp_path / "ckpt", tmp_path / "first.parquet", tmp_path / "again.parquet"
    args = ["--data", str(data), "--reference-column", "refs", "--checkpoint", str(checkpoint), "--shard-size", "10"]
    score(capsys, *args, "-o", str(first))
    assert len(list(checkpoint.glob("*.npy"))) == 3
    shard = checkpoint / "rank0-shard000001.npy"  # a well-formed shard of other numbers: noticed, scored again
    np.save(shard, np.load(shard) * 0.5, allow_pickle=False)
    code = main(["score", "-m", MINILM, *args, "-o", str(again)])
    assert code == 0 and "shard000001.npy is not the file this run wrote" in capsys.readouterr().err
    assert read(again).equals(read(first))
    assert_scores(read(first), metric_scores(table, several=True), several=True)


def one_line(capsys, *args: str) -> str:
    code = main(["score", "-m", MINILM, *args])
    out, err = capsys.readouterr()
    assert code == 2 and out == "", err
    assert err.count("\n") == 1 and err.startswith("bertscore-tm: error: "), err
    return err


@pytest.fixture()
def no_model(monkeypatch):
    def refuse(*args, **kwargs):
        pytest.fail("a model loaded before the mistake was reported")

    monkeypatch.setattr(bertscore_tm.metric.bertscore, "BERTScore", refuse)


def test_bad_files_and_cells_are_one_line_before_any_model_loads(capsys, tmp_path, table, no_model):
    good = write(table, tmp_path / "pairs.parquet")
    fake = tmp_path / "fake.parquet"
    fake.write_text("candidate,reference\na,b\n", encoding="utf-8")
    assert "cannot read data file" in one_line(capsys, "--data", str(fake), "-o", str(tmp_path / "o.parquet"))
    err = one_line(capsys, "--data", str(good), "--reference-column", "target", "-o", str(tmp_path / "o.csv"))
    assert "no column 'target'" in err and "'candidate', 'reference'" in err
    nulls = table.set_column(3, "reference", pa.array([*table["reference"].to_pylist()[:5], None, *[""] * (N - 6)]))
    err = one_line(capsys, "--data", str(write(nulls, tmp_path / "nulls.parquet")), "-o", str(tmp_path / "o.csv"))
    assert "row 5 of column 'reference' is empty" in err
    empty = write(table.slice(0, 0), tmp_path / "empty.parquet")
    assert "no rows" in one_line(capsys, "--data", str(empty), "-o", str(tmp_path / "o.csv"))
    assert "no format written" in one_line(capsys, "--data", str(good), "-o", str(tmp_path / "o.txt"))
    (tmp_path / "x.txt").write_text("candidate\treference\n", encoding="utf-8")
    assert "no format read" in one_line(capsys, "--data", str(tmp_path / "x.txt"), "-o", str(tmp_path / "o.csv"))
    assert "needs -o" in one_line(capsys, "--data", str(good))
    assert "leave out -s" in one_line(capsys, "--data", str(good), "-s", "-o", str(tmp_path / "o.csv"))
    assert "one or the other" in one_line(capsys, "--data", str(good), "-c", str(good), "-o", str(tmp_path / "o.csv"))
    assert "--data FILE" in one_line(capsys, "--reference-column", "x")
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "empty.parquet",
        "fake.parquet",
        "nulls.parquet",
        "pairs.parquet",
        "x.txt",
    ]
