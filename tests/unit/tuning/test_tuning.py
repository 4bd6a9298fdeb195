"""Layer tuning on a 40-row slice of the vendored WMT17 judgements with the packaged MiniLM: the one-pass
figures equal per-layer runs, IDF changes them, the JSON shape, and the judgement reader's bad input."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from bertscore_tm import PACKAGED_MINILM, BERTScore
from bertscore_tm.errors import ArgumentTypeError, ArgumentValueError
from bertscore_tm.models.registry import default_num_layers
from bertscore_tm.tuning.correlation import grouped_correlation
from bertscore_tm.tuning.judgements import JudgementsError
from bertscore_tm.tuning.layer_tuning import (
    SCORES,
    JudgementFileError,
    Judgements,
    LayerScores,
    layer_scores,
    read_judgements,
    tune_from_scores,
    tune_layers,
)
from bertscore_tm.tuning.system_level import system_correlation
from tests.conftest import REPO

DATA = REPO / "tests" / "data" / "wmt17-da" / "da-seglevel-toen.tsv"
pytestmark = pytest.mark.usefixtures("one_thread")  # MiniLM on a shared 2-core machine: extra threads only wait
HEADER = "lp\tsystem\tsid\thuman\tcandidate\treference\n"


@pytest.fixture(scope="module")
def rows() -> Judgements:
    """20 cs-en and 20 de-en judgements (the file holds 560 of each language pair, in order)."""
    everything = read_judgements(DATA, group="lp", system="system")
    assert len(everything) == 2800 and everything.groups is not None
    return everything.select(list(range(20)) + list(range(560, 580)))


@pytest.fixture(scope="module")
def tuned(rows, one_thread):
    return tune_layers(rows, model=PACKAGED_MINILM, bootstrap=200, seed=3)


@pytest.fixture(scope="module")
def per_layer(rows, one_thread):
    """Scores of metrics built for one layer each, the usual way."""
    out = {}
    for layer in (2, 5):
        metric = BERTScore(PACKAGED_MINILM, num_layers=layer)
        metric.update(rows.candidates, rows.references)
        out[layer] = {k: v.double().numpy() for k, v in zip(SCORES, metric.compute_scores().as_tuple(), strict=True)}
    return out


@pytest.mark.slow
def test_one_pass_equals_per_layer_runs(rows, tuned, per_layer):
    assert tuned.scores.f1.shape == (7, 40) and tuned.segments == 40
    assert tuned.groups == {"cs-en": 20, "de-en": 20}
    for layer, scores in per_layer.items():
        for name in SCORES:
            np.testing.assert_allclose(tuned.scores.of(name)[layer], scores[name], atol=1e-6, rtol=0)
            for method in ("pearson", "spearman", "kendall"):
                expected = grouped_correlation(scores[name], rows.human, rows.groups, method)
                figures = tuned.figures(layer, method, name)
                assert figures.mean == pytest.approx(expected.mean, abs=1e-6)
                assert figures.groups == pytest.approx(expected.groups, abs=1e-6)
                if name == tuned.score:  # intervals are drawn for the tuned score only
                    low, high = figures.ci
                    assert low <= high
                else:
                    assert figures.ci is None
            system = system_correlation(scores[name], rows.systems, rows.human, rows.groups)
            assert tuned.layers[layer].system[name].mean == pytest.approx(system.mean, abs=1e-6)


def test_best_and_default_layer_and_the_paired_test(tuned):
    means = [tuned.figures(k).mean for k in range(7)]
    assert tuned.criterion == "pearson" and tuned.score == "f1"
    assert tuned.best_layer == int(np.argmax(means))
    assert tuned.default_layer == default_num_layers(PACKAGED_MINILM) == 5
    test = tuned.test
    assert test is not None and test.num_samples == 200
    assert test.estimate_b == pytest.approx(means[tuned.best_layer]) and test.estimate_a == pytest.approx(means[5])
    assert 1 / 201 <= test.p_value <= 1 and test.significant == (test.p_value < 0.05)
    if tuned.best_layer == 5:
        assert test.p_value == 1.0


@pytest.mark.slow
def test_idf_changes_the_figures(rows, tuned):
    pick = list(range(6)) + list(range(20, 26))  # 6 judgements of each pair keep this pass short
    few = rows.select(pick)
    plain = tune_from_scores(few, tuned.scores.select(np.asarray(pick)), bootstrap=0)
    weighted = tune_layers(few, model=PACKAGED_MINILM, idf=True, bootstrap=0)
    assert weighted.idf and "idf" in weighted.hash_code and "no-idf" not in weighted.hash_code
    assert weighted.test is None and weighted.figures(5).ci is None
    assert not np.allclose(weighted.scores.f1, plain.scores.f1, atol=1e-4)
    assert abs(weighted.figures(5).mean - plain.figures(5).mean) > 1e-4


def test_seeded_intervals_without_scoring_again(rows, tuned):
    again = tune_from_scores(rows, tuned.scores, bootstrap=200, seed=3)
    assert again.to_dict() == tuned.to_dict()
    other = tune_from_scores(rows, tuned.scores, bootstrap=200, seed=4)
    assert other.figures(3).ci != tuned.figures(3).ci and other.figures(3).mean == tuned.figures(3).mean
    by_kendall = tune_from_scores(rows, tuned.scores, criterion="kendall", score="recall", bootstrap=0)
    recall_tau = [by_kendall.figures(k).mean for k in range(7)]
    assert by_kendall.best_layer == int(np.argmax(recall_tau)) and by_kendall.test is None


def test_json_shape_and_layer_table_line(tuned, tmp_path):
    data = json.loads(tuned.to_json())
    assert data["best_layer"] == tuned.best_layer and data["default_layer"] == 5
    assert [entry["layer"] for entry in data["layers"]] == list(range(7))
    for entry in data["layers"]:
        for method in ("pearson", "spearman", "kendall"):
            figures = entry[method]
            assert set(figures) == {"mean", "groups", "ci"} and set(figures["groups"]) == {"cs-en", "de-en"}
            assert figures["ci"][0] <= figures["ci"][1]
        assert set(entry["system"]["pearson"]["groups"]) == {"cs-en", "de-en"}
        assert "scores" not in entry
    assert set(data["test"]) >= {"p_value", "significant", "difference", "interval", "best", "default"}
    full = json.loads(tuned.to_json(all_scores=True))
    assert set(full["layers"][0]["scores"]) == set(SCORES)
    line = tuned.layer_table_line()
    assert json.loads("{" + line + "}") == {PACKAGED_MINILM: tuned.best_layer}
    table = tmp_path / "layers.json"
    tuned.save_to_layer_table(table)
    assert default_num_layers(PACKAGED_MINILM, layer_table=table) == tuned.best_layer


def test_undefined_scores_are_left_out(rows, tuned):
    f1 = tuned.scores.f1.copy()
    f1[3, 7] = math.nan
    scores = LayerScores(tuned.scores.precision, tuned.scores.recall, f1, PACKAGED_MINILM, "code", False)
    with pytest.warns(UserWarning, match=r"1 judgement\(s\) have an undefined .*line\(s\) 9"):
        result = tune_from_scores(rows, scores, bootstrap=0)
    assert result.dropped == 1 and result.segments == 39 and result.groups == {"cs-en": 19, "de-en": 20}
    listed = Judgements.from_columns(rows.candidates, rows.references, rows.human, rows.groups)
    with pytest.warns(UserWarning, match=r"index\(es\) 7\)"):
        assert tune_from_scores(listed, scores, bootstrap=0).dropped == 1


@pytest.mark.slow
def test_bad_arguments(rows, tuned):
    for kwargs, argument in (
        ({"criterion": "cosine"}, "criterion"),
        ({"score": "F"}, "score"),
        ({"bootstrap": -1}, "bootstrap"),
        ({"default_layer": 7}, "default_layer"),
        ({"confidence": 95.0}, "confidence"),
        ({"bootstrap": 1_000_001}, "bootstrap"),  # the significance functions' cap: memory grows with it
        ({"alpha": 2.0}, "alpha"),  # every p-value below it: a significant verdict whatever the data
        ({"alpha": float("nan")}, "alpha"),
        ({"alpha": -1}, "alpha"),
        ({"alpha": "0.05"}, "alpha"),  # of the wrong type: an ArgumentTypeError
        ({"alpha": True}, "alpha"),
    ):
        with pytest.raises((ArgumentValueError, ArgumentTypeError)) as err:
            tune_from_scores(rows, tuned.scores, **kwargs)
        assert err.value.argument == argument
    with pytest.raises(ArgumentValueError, match="num_layers cannot be passed"):
        tune_layers(rows, model=PACKAGED_MINILM, num_layers=3)


# -- the judgement reader ---------------------------------------------------------------------------------------
def write(tmp_path, text, name="judged.tsv"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


GOOD = [
    "cs-en\tA\t1\t0.5\ta cat sat.\tthe cat sat.\n",
    'de-en\tB\t2\t-1.25\the said "no".\the said no.\n',
    "de-en\tA\t3\t2\tit rains.\tit is raining.\n",
]


def test_reader_reads_columns_by_name(tmp_path):
    read = read_judgements(write(tmp_path, HEADER + "".join(GOOD) + "\n"), group="lp", system="system")
    assert read.human == [0.5, -1.25, 2.0] and read.groups == ["cs-en", "de-en", "de-en"]
    assert read.candidates[1] == 'he said "no".' and read.systems == ["A", "B", "A"] and read.lines == [2, 3, 4]
    renamed = "src\tcand\tref\tscore\n" + "x\ta\tb\t1\n" * 3
    read = read_judgements(write(tmp_path, renamed), candidate="cand", reference="ref", human="score")
    assert read.candidates == ["a"] * 3 and read.groups is None and read.systems is None


@pytest.mark.parametrize(
    ("bad_line", "problem"),
    [
        ("cs-en\tA\t4\tgood\tx\ty\n", "line 4 has a human score that is not a number: 'good'"),
        ("cs-en\tA\t4\t\tx\ty\n", "line 4 has no human score"),
        ("cs-en\tA\t4\tnan\tx\ty\n", "line 4 has a human score that is not finite"),
        ("cs-en\tA\t4\t0.3\tx\n", "line 4 has 5 tab-separated fields where the header has 6"),
        ("\tA\t4\t0.3\tx\ty\n", "line 4 has an empty group label"),
    ],
)
def test_reader_names_the_bad_line_or_skips_it(tmp_path, bad_line, problem):
    path = write(tmp_path, HEADER + "".join(GOOD[:2]) + bad_line + GOOD[2])
    with pytest.raises(JudgementFileError, match=problem) as err:
        read_judgements(path, group="lp")
    assert err.value.line == 4 and str(path) in str(err.value)
    with pytest.warns(UserWarning, match="1 bad line"):
        read = read_judgements(path, group="lp", skip_bad=True)
    assert read.skipped == 1 and len(read) == 3 and read.lines == [2, 3, 5]


def test_reader_refuses_missing_columns_and_too_few_rows(tmp_path):
    with pytest.raises(JudgementFileError, match=r"no column 'score' \(the human column\), no column 'language'"):
        read_judgements(write(tmp_path, HEADER + "".join(GOOD)), human="score", group="language")
    with pytest.raises(JudgementFileError, match=r"has 1 usable judgement.*at least 3"):
        read_judgements(write(tmp_path, HEADER + GOOD[0]))
    with (
        pytest.raises(JudgementFileError, match=r"has 2 usable judgement\(s\) \(1 bad line"),
        pytest.warns(UserWarning),
    ):
        read_judgements(write(tmp_path, HEADER + GOOD[0] + "x\tA\t9\t?\ta\tb\n" + GOOD[1]), skip_bad=True)
    with pytest.raises(JudgementFileError, match="has 0 usable"):
        read_judgements(write(tmp_path, HEADER))
    with pytest.raises(JudgementFileError, match="is empty"):
        read_judgements(write(tmp_path, ""))
    with pytest.raises(JudgementFileError, match="cannot be read"):
        read_judgements(tmp_path / "missing.tsv")
    (tmp_path / "latin1.tsv").write_bytes(HEADER.encode() + "cs-en\tA\t1\t0.5\tcaf\xe9\tcafe\n".encode("latin-1"))
    with pytest.raises(JudgementFileError, match=r"latin1\.tsv cannot be read: 'utf-8' codec"):
        read_judgements(tmp_path / "latin1.tsv")
    with pytest.raises(ValueError, match="human has 2 entries for 3 candidates"):
        Judgements.from_columns(["a", "b", "c"], ["a", "b", "c"], [1.0, 2.0])


def test_uncorrelatable_judgements_are_refused_before_scoring(rows, tuned):
    constant = Judgements.from_columns(rows.candidates, rows.references, [0.5] * 20 + rows.human[20:], rows.groups)
    with pytest.raises(JudgementsError, match=r"the human scores of group 'cs-en' are all 0.5: .* undefined"):
        tune_layers(constant, model="no/such-model")  # refused before the model is looked for
    with pytest.raises(JudgementsError, match="the human scores of group 'cs-en'"):
        tune_from_scores(constant, tuned.scores, bootstrap=0)
    tiny = Judgements.from_columns(rows.candidates[:4], rows.references[:4], [1, 2, 3, 4], ["a", "b", "c", "c"])
    with pytest.raises(JudgementsError, match=r"no group has 3 judgements or more \('a' 1, 'b' 1, 'c' 2\)"):
        tune_layers(tiny, model="no/such-model")
    one_system = Judgements.from_columns(rows.candidates, rows.references, rows.human, rows.groups, ["s"] * 40)
    with pytest.warns(UserWarning, match="no group has 3 systems or more"):
        assert tune_from_scores(one_system, tuned.scores, bootstrap=0).layers[0].system is None


@pytest.mark.slow
def test_layer_scores_takes_the_callers_metric(rows, tuned):
    few = rows.select(list(range(4)) + list(range(20, 24)))
    metric = BERTScore(PACKAGED_MINILM, all_layers=True)
    scores = layer_scores(metric, few)
    pick = np.asarray(list(range(4)) + list(range(20, 24)))
    np.testing.assert_allclose(scores.f1, tuned.scores.f1[:, pick], atol=1e-6, rtol=0)
    with pytest.raises(ArgumentValueError, match="all_layers=True and reduction='none'"):
        layer_scores(BERTScore(PACKAGED_MINILM), few)


def test_file_errors_name_their_remedy(tmp_path):
    path = write(tmp_path, HEADER + GOOD[0] + "cs-en\tA\t4\tgood\tx\ty\n" + GOOD[1])
    with pytest.raises(JudgementFileError) as err:
        read_judgements(path)
    assert err.value.remedy == "skip_bad" and err.value.problem.endswith("is not a number: 'good'")
    assert str(err.value) == err.value.problem + " (pass skip_bad=True to leave bad lines out)"
    with pytest.raises(JudgementFileError) as err:
        read_judgements(path, human="score")
    assert err.value.remedy == "columns" and "(name the right ones with the column arguments)" in str(err.value)


def test_plot_layers_draws_the_curve(tuned, tmp_path):
    pytest.importorskip("matplotlib")
    from bertscore_tm.reports.tuning_plot import plot_layers

    plot_layers(tuned, tmp_path / "layers.svg")
    svg = (tmp_path / "layers.svg").read_text(encoding="utf-8")
    assert "<svg" in svg and f"best: {tuned.best_layer}" in svg and "default: 5" in svg
