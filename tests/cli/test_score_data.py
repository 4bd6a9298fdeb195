"""``bertscore-tm score --data FILE``: Parquet, JSON Lines, CSV and TSV in, Parquet, JSON Lines and CSV out,
every input column kept and the score columns equal to the Metric's on the same WMT pairs bit for bit (plain,
IDF, several references, --checkpoint), written atomically; bad files and cells are one line naming the
file, column or row, before any model loads."""

from __future__ import annotations

import datetime
import decimal
import json
from pathlib import Path

import numpy as np
import pytest

import bertscore_tm
from bertscore_tm import BERTScore
from bertscore_tm.cli import main
from bertscore_tm.corpus.tables import ColumnFile
from bertscore_tm.errors import ColumnDataError, InputFileError
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


@pytest.mark.slow
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


@pytest.mark.slow
def test_several_references_as_columns_and_idf(capsys, tmp_path, table):
    data = write(table, tmp_path / "pairs.parquet")
    out_file = tmp_path / "scored.parquet"
    score(capsys, "--data", str(data), "--reference-column", "reference", "other", "--idf", "-o", str(out_file))
    assert_scores(read(out_file), metric_scores(table, several=True, idf=True), several=True)


@pytest.mark.slow
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

    monkeypatch.setattr(bertscore_tm.metric.bertscore.BERTScore, "from_config", classmethod(refuse))


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


def test_a_column_name_given_twice_is_one_line_before_any_model_loads(capsys, tmp_path, table, no_model):
    """A CSV header or a Parquet schema may name two columns alike: which is meant cannot be told (pyarrow
    refuses to pick), and an output cannot keep both by name (JSON Lines would keep one), so either is refused
    with the name and its count, whether or not the column holds texts."""
    dup = tmp_path / "dup.csv"
    dup.write_text("candidate,reference,reference\nThe cat.,A cat.,The cat\n", encoding="utf-8")
    err = one_line(capsys, "--data", str(dup), "-o", str(tmp_path / "o.parquet"))
    assert "the column name 'reference' appears 2 times" in err
    names = ["id", "candidate", "reference", "id"]
    ids = write(pa.Table.from_arrays([table[n] for n in names], names=names), tmp_path / "ids.parquet")
    assert "the column name 'id' appears 2 times" in one_line(
        capsys, "--data", str(ids), "-o", str(tmp_path / "o.jsonl")
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dup.csv", "ids.parquet"]


@pytest.mark.slow
def test_json_lines_write_timestamps_dates_and_decimals_as_strings(capsys, tmp_path, table, plain):
    """JSON has no type for a timestamp, a date or a decimal, which a Parquet file may hold beside the texts:
    they are written as ISO 8601 strings and as the decimal's own digits (no float rounding), every line
    strict JSON, where the writer used to stop after scoring the whole file."""
    when = datetime.datetime(2024, 1, 2, 3, 4, 5)
    extra = {
        "when": pa.array([when] * N, pa.timestamp("us", tz="UTC")),
        "day": [when.date()] * N,
        "price": pa.array([decimal.Decimal("1.50")] * N, pa.decimal128(5, 2)),
    }
    data = write(pa.table({**{n: table[n] for n in table.column_names}, **extra}), tmp_path / "typed.parquet")
    out_file = tmp_path / "scored.jsonl"
    score(capsys, "--data", str(data), "-o", str(out_file))
    rows = [json.loads(line, parse_constant=refuse) for line in out_file.read_text(encoding="utf-8").splitlines()]
    assert {(r["when"], r["day"], r["price"]) for r in rows} == {("2024-01-02T03:04:05+00:00", "2024-01-02", "1.50")}
    assert_scores(read(out_file), plain)


def refuse(token: str) -> None:
    raise AssertionError(f"not JSON: {token}")


def test_an_output_format_that_cannot_hold_a_column_is_refused_naming_it(capsys, tmp_path, table, no_model):
    """CSV has no form for a list (the documented column of several references) or a struct, nor JSON for
    bytes: one line naming the column and the formats that hold it, no output file, and the check is one the
    command line makes before any pair is scored (`ColumnFile.check_writable`), not pyarrow's traceback after."""
    groups = [list(g) for g in zip(table["reference"].to_pylist(), table["other"].to_pylist(), strict=True)]
    extra = {"refs": groups, "meta": [{"a": 1}] * N, "blob": [b"\x00"] * N}
    data = write(pa.table({**{n: table[n] for n in table.column_names}, **extra}), tmp_path / "lists.parquet")
    opened = ColumnFile.open(str(data), "candidate", ["refs"])
    for fmt, column, others in [("csv", "refs", ".parquet or .jsonl"), ("jsonl", "blob", ".parquet or .csv")]:
        with pytest.raises(ColumnDataError, match=f"column '{column}' .* cannot hold: write the output as {others}"):
            opened.check_writable(fmt)
    err = one_line(capsys, "--data", str(data), "--reference-column", "refs", "-o", str(tmp_path / "o.csv"))
    assert "column 'refs'" in err and "a CSV file cannot hold" in err and ".parquet or .jsonl" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lists.parquet"]


def test_json_lines_write_nan_scores_and_cells_as_null(capsys, tmp_path):
    """JSON has no NaN: a pair whose token weights sum to 0 (IDF over references that all hold the same
    tokens) gets null, as ``score --format json`` writes it, and so does a NaN cell of the input."""
    rows = pa.table({"candidate": ["the cat", "the dog"], "reference": ["a b", "a b"], "weight": [float("nan"), 1.0]})
    out_file = tmp_path / "scored.jsonl"
    score(capsys, "--data", str(write(rows, tmp_path / "nan.parquet")), "--idf", "-o", str(out_file))
    out = [json.loads(line, parse_constant=refuse) for line in out_file.read_text(encoding="utf-8").splitlines()]
    assert [r["bertscore_recall"] for r in out] == [None, None] and [r["weight"] for r in out] == [None, 1.0]


@pytest.mark.slow
def test_score_columns_of_an_earlier_run_are_replaced_or_left_out_with_a_warning(capsys, tmp_path, table, plain):
    """A file scored before with two references, scored again with one: its best reference column would sit
    beside the new scores as if it were theirs. It is left out, with one warning naming it; the old F1 is
    replaced."""
    earlier = table.append_column("bertscore_best_reference", pa.array([1] * N))
    data = write(earlier.append_column("bertscore_f1", pa.array([0.5] * N)), tmp_path / "scored_before.parquet")
    out_file = tmp_path / "scored.parquet"
    code = main(["score", "-m", MINILM, "--data", str(data), "-o", str(out_file)])
    err = capsys.readouterr().err
    assert code == 0 and err.count("'bertscore_best_reference' that this run does not write") == 1, err
    out = read(out_file)
    assert "bertscore_best_reference" not in out.column_names and out.column_names.count("bertscore_f1") == 1
    assert_scores(out, plain)


#: Rows enough for a file well past pyarrow's first block of 4 MiB.
MANY = 60_000


def late_rows(last: dict[str, object]) -> list[dict[str, object]]:
    rows = [
        {"candidate": f"The cat sat on the mat number {i} today.", "reference": f"A cat was on mat {i} today.", "id": i}
        for i in range(MANY)
    ]
    return [*rows, {"candidate": "x y", "reference": "x z", **last}]


def csv_text(rows: list[dict[str, object]]) -> str:
    return "id,candidate,reference\n" + "".join(f"{r['id']},{r['candidate']},{r['reference']}\n" for r in rows)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("suffix", "last", "expected"),
    [
        (".jsonl", {"id": 1.5, "note": "late", "meta": {"a": 1}}, {"id": 1.5, "note": "late", "meta": {"a": 1}}),
        (".csv", {"id": "x7"}, {"id": "x7"}),
        (".tsv", {"id": 0.5}, {"id": 0.5}),
    ],
)
def test_a_column_whose_type_shows_after_the_first_4_mib_is_read_whole(tmp_path, suffix, last, expected):
    """pyarrow types a streamed CSV or JSON Lines file by its first 4 MiB, and a valid file whose key first
    appears later, or whose id column holds a fraction or a text only there, was refused at that row. The
    file is typed block by block first, so that every block is read with types that hold all of them."""
    rows = late_rows(last)
    path = tmp_path / f"late{suffix}"
    if suffix == ".jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    else:
        path.write_text(csv_text(rows).replace(",", "\t" if suffix == ".tsv" else ","), encoding="utf-8")
    assert path.stat().st_size > 4 << 20
    opened = ColumnFile.open(str(path), "candidate", ["reference"])
    cands, groups, _ = opened.pairs()
    assert len(cands) == len(groups) == MANY + 1 and cands[-1] == "x y"
    whole = pa.Table.from_batches(list(opened.batches()))  # one schema for every batch, as a writer needs
    assert {k: whole[k][MANY].as_py() for k in expected} == expected
    assert whole["id"][1].as_py() == ("1" if expected["id"] == "x7" else 1)


def test_a_json_lines_column_of_two_types_names_it_and_its_rows(tmp_path):
    """A JSON number cannot be read as a text: a column holding numbers for 4 MiB, then a string, is refused
    naming the column and what to do, with rows counted in the file (pyarrow counts them within its block),
    whether the string comes within a block of numbers or in a block of its own; a broken line alike."""
    path = tmp_path / "mixed.jsonl"
    lines = [json.dumps(r) + "\n" for r in late_rows({"id": "x7"})]
    path.write_text("".join(lines), encoding="utf-8")
    with pytest.raises(InputFileError, match=rf"Column\(/id\) changed from number to string in row {MANY}: a column"):
        ColumnFile.open(str(path), "candidate", ["reference"])
    numbers = "".join(lines[:-1])
    numbers = numbers[: numbers.rindex("\n", 0, 4 << 20) + 1]  # up to the end of pyarrow's first block
    strings = [json.dumps({"candidate": "x y", "reference": "x z", "id": f"x{i}"}) + "\n" for i in range(5)]
    path.write_text(numbers[:-1] + " " * ((4 << 20) - len(numbers)) + "\n" + "".join(strings), encoding="utf-8")
    count = numbers.count("\n")
    with pytest.raises(InputFileError, match=rf"'id' holds int64 values before row {count} but string values in rows"):
        ColumnFile.open(str(path), "candidate", ["reference"])
    path.write_text("".join(lines[:-1]) + '{"candidate": "x", "reference"\n', encoding="utf-8")
    with pytest.raises(InputFileError, match=rf"Missing a colon .* in row {MANY}$"):
        ColumnFile.open(str(path), "candidate", ["reference"])
