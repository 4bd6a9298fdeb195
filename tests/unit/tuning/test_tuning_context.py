"""Layer tuning with a context per judgement (issue 39's context column): the reader takes an optional context
column (a blank cell: no context; a line split by a tab or a line break in its context is named), every layer's
scores equal the metric's with ``context=`` at that layer, relative rankings carry the context to both candidates,
and ``tune-layers --context-column`` gives the library's figures, its mistakes one line before the model loads."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from bertscore_tm import BERTScore
from bertscore_tm.tuning.judgements import JudgementFileError, Judgements, RelativeRankings, read_relative_rankings
from bertscore_tm.tuning.layer_tuning import SCORES, read_judgements, score_all_layers, tune_from_scores
from tests.cli.test_cli import no_model, one_line_error, run_main  # noqa: F401 (no_model is a fixture)
from tests.conftest import MINILM, REPO, WMT

pytestmark = pytest.mark.usefixtures("one_thread")
DATA = REPO / "tests" / "data" / "wmt17-da" / "da-seglevel-toen.tsv"
ROWS = 8


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """8 WMT17 judgements spread over cs-en, with a `source` column standing for the source sentence (another
    segment's English reference), one of them blank."""
    lines = DATA.read_text(encoding="utf-8").splitlines()
    sources = WMT.joinpath("refs_long.txt").read_text(encoding="utf-8").splitlines()[200 : 200 + ROWS]
    sources[5] = ""
    rows = [f"{lines[1 + k * 61]}\t{source}" for k, source in enumerate(sources)]
    path = tmp_path_factory.mktemp("judged") / "judged.tsv"
    path.write_text("\n".join([lines[0] + "\tsource", *rows]) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def rows(judged: Path) -> Judgements:
    return read_judgements(judged, context="source")


def test_the_reader_takes_a_context_column(judged: Path, rows: Judgements) -> None:
    assert rows.contexts is not None and len(rows.contexts) == ROWS
    assert rows.contexts[5] == "" and rows.contexts[0].strip()
    assert read_judgements(judged).contexts is None  # the column is read only when named
    assert rows.select([5, 0]).contexts == [rows.contexts[5], rows.contexts[0]]
    made = Judgements.from_columns(rows.candidates, rows.references, rows.human, contexts=rows.contexts)
    assert made.contexts == rows.contexts
    with pytest.raises(ValueError, match="contexts has 7 entries for 8 candidates"):
        Judgements.from_columns(rows.candidates, rows.references, rows.human, contexts=rows.contexts[:7])


def test_a_missing_or_split_context_is_named(judged: Path, tmp_path: Path) -> None:
    with pytest.raises(JudgementFileError, match=r"no column 'src' \(the context column\).*with context=\)$"):
        read_judgements(judged, context="src")
    lines = judged.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[3] = lines[3].rstrip("\n") + "\tdef f():\n"  # a tab inside the context of line 4
    split = tmp_path / "split.tsv"
    split.write_text("".join(lines), encoding="utf-8")
    problem = r"line 4 has 8 tab-separated fields where the header has 7 \(a context, column 'source', cannot hold"
    with pytest.raises(JudgementFileError, match=problem) as err:
        read_judgements(split, context="source")
    assert err.value.line == 4
    with pytest.warns(UserWarning, match="1 bad line"):
        assert len(read_judgements(split, context="source", skip_bad=True)) == ROWS - 1
    with pytest.raises(JudgementFileError, match=r"header has 7 \(pass skip_bad"):  # without a context column, no hint
        read_judgements(split)


@pytest.mark.slow
@pytest.mark.parametrize("idf", [False, True], ids=["plain", "idf"])
def test_every_layer_equals_the_metric_with_context(rows: Judgements, idf: bool) -> None:
    scores = score_all_layers(rows, MINILM, idf=idf)
    assert scores.f1.shape == (7, ROWS)
    for layer in range(scores.depth + 1):
        metric = BERTScore(MINILM, num_layers=layer, idf=idf)
        metric.update(rows.candidates, rows.references, context=rows.contexts)
        expected = dict(zip(SCORES, metric.compute_scores().as_tuple(), strict=True))
        for name in SCORES:
            np.testing.assert_allclose(scores.of(name)[layer], expected[name].double().numpy(), atol=1e-6, rtol=0)
    if not idf:
        without = score_all_layers(Judgements(rows.candidates, rows.references, rows.human), MINILM)
        assert not np.allclose(without.f1, scores.f1)  # the contexts do change the scores
        assert scores.hash_code.endswith("_context") and not without.hash_code.endswith("_context")
        assert np.array_equal(without.f1[:, 5], scores.f1[:, 5])  # but a blank one adds nothing


def test_relative_rankings_score_both_candidates_with_the_context(tmp_path: Path) -> None:
    path = tmp_path / "darr.tsv"
    lines = ["reference\tbetter\tworse\tsource", *(f"r{k}\tb{k}\tw{k}\tsrc {k}" for k in range(3))]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    rankings = read_relative_rankings(path, context="source")
    assert rankings.contexts == ["src 0", "src 1", "src 2"]
    assert rankings.as_pairs().contexts == ["src 0", "src 1", "src 2"] * 2
    assert rankings.select([2]).contexts == ["src 2"] and read_relative_rankings(path).contexts is None
    made = RelativeRankings.from_columns(["r"], ["b"], ["w"], contexts=["c"])
    assert made.as_pairs().contexts == ["c", "c"]


@pytest.mark.slow
def test_tune_layers_cli_with_a_context_column(capsys, judged: Path, rows: Judgements) -> None:
    rc, out, err = run_main(
        capsys,
        "tune-layers",
        "--data",
        str(judged),
        "--context-column",
        "source",
        "-m",
        MINILM,
        "--format",
        "json",
        "--bootstrap",
        "200",
    )
    assert rc == 0, err
    doc = json.loads(out)
    expected = tune_from_scores(rows, score_all_layers(rows, MINILM), bootstrap=200, seed=0)
    assert doc["context_column"] == "source" and doc["best_layer"] == expected.best_layer
    assert doc["hash"] == expected.hash_code and doc["hash"].endswith("_context")  # the scores had contexts
    for entry in doc["layers"]:
        assert entry["pearson"]["mean"] == pytest.approx(expected.figures(entry["layer"]).mean, abs=1e-9)


@pytest.mark.usefixtures("no_model")
def test_tune_layers_cli_context_mistakes_are_one_line(capsys, judged: Path, tmp_path: Path) -> None:
    base = ["tune-layers", "--data", str(judged), "-m", MINILM]
    line = one_line_error(capsys, *base, "--context-column", "src")
    assert "no column 'src' (the context column)" in line
    assert line.endswith("(name the right one with --context-column)")
    lines = judged.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[2] = lines[2].rstrip("\n") + "\tmore\n"
    split = tmp_path / "split.tsv"
    split.write_text("".join(lines), encoding="utf-8")
    line = one_line_error(capsys, "tune-layers", "--data", str(split), "-m", MINILM, "--context-column", "source")
    assert "line 3 has 8 tab-separated fields" in line and "cannot hold a tab" in line and "--skip-bad" in line
