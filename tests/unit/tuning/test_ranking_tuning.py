"""Layer tuning on relative-ranking judgements (WMT's DARR), built from the vendored WMT17 judgements: where two
systems' translations of one segment were judged, the higher human score marks the better one. WMT18's tau of
every layer equals the tau of metrics built for one layer each (counted by hand, float64), the bootstrap equals a
plain loop over its resamples, and the reader names bad input."""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np
import pytest

from bertscore_tm import PACKAGED_MINILM, BERTScore
from bertscore_tm.tuning.correlation import DarrBootstrap
from bertscore_tm.tuning.judgements import JudgementFileError
from bertscore_tm.tuning.layer_tuning import SCORES, LayerScores, read_judgements
from bertscore_tm.tuning.ranking_tuning import (
    RelativeRankings,
    read_relative_rankings,
    tune_layers_on_rankings,
    tune_rankings_from_scores,
)
from tests.conftest import REPO

DATA = REPO / "tests" / "data" / "wmt17-da" / "da-seglevel-toen.tsv"
pytestmark = pytest.mark.usefixtures("one_thread")


def hand_tau(better: np.ndarray, worse: np.ndarray, groups: list[str]) -> float:
    """WMT18's Kendall-like tau averaged over groups, counted one judgement at a time (a tie is discordant)."""
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for b, w, g in zip(better.tolist(), worse.tolist(), groups, strict=True):
        counts[g][0 if b > w else 1] += 1
    return float(np.mean([(c - d) / (c + d) for c, d in counts.values()]))


@pytest.fixture(scope="module")
def rankings() -> RelativeRankings:
    """12 cs-en and 12 de-en judgements: two systems' translations of one segment, the higher human score the
    better one (ties of the human scores left out)."""
    rows = read_judgements(DATA, group="lp", system="system")
    by_segment: dict[tuple[str, str], list[int]] = defaultdict(list)
    for i, (group, reference) in enumerate(zip(rows.groups or [], rows.references, strict=True)):
        by_segment[group, reference].append(i)
    refs, better, worse, groups = [], [], [], []
    for (group, reference), members in by_segment.items():
        a, b = members[:2] if len(members) > 1 else (0, 0)
        if group in ("cs-en", "de-en") and a != b and rows.human[a] != rows.human[b] and groups.count(group) < 12:
            high, low = (a, b) if rows.human[a] > rows.human[b] else (b, a)
            refs.append(reference)
            better.append(rows.candidates[high])
            worse.append(rows.candidates[low])
            groups.append(group)
    assert groups.count("cs-en") == 12 and groups.count("de-en") == 12
    return RelativeRankings.from_columns(refs, better, worse, groups)


@pytest.fixture(scope="module")
def tuned(rankings, one_thread):
    return tune_layers_on_rankings(rankings, PACKAGED_MINILM, bootstrap=300, seed=2)


@pytest.mark.slow
@pytest.mark.parametrize("layer", [2, 5])
def test_one_pass_equals_per_layer_runs_counted_by_hand(rankings, tuned, layer):
    metric = BERTScore(PACKAGED_MINILM, num_layers=layer)
    scores = {}
    for side in ("better", "worse"):
        metric.reset()
        metric.update(getattr(rankings, side), rankings.references)
        scores[side] = dict(zip(SCORES, (t.double().numpy() for t in metric.compute_scores().as_tuple()), strict=True))
    n = len(rankings)
    for name in SCORES:
        np.testing.assert_allclose(tuned.scores.of(name)[layer, :n], scores["better"][name], atol=1e-6, rtol=0)
        np.testing.assert_allclose(tuned.scores.of(name)[layer, n:], scores["worse"][name], atol=1e-6, rtol=0)
        expected = hand_tau(scores["better"][name], scores["worse"][name], rankings.groups or [])
        assert tuned.figures(layer, "darr", name).mean == pytest.approx(expected, abs=1e-12)
        for group in ("cs-en", "de-en"):
            pick = np.array([g == group for g in rankings.groups or []])
            alone = hand_tau(scores["better"][name][pick], scores["worse"][name][pick], [group] * int(pick.sum()))
            assert tuned.figures(layer, "darr", name).groups[group] == pytest.approx(alone, abs=1e-12)


def test_best_layer_interval_and_test(tuned):
    means = [tuned.figures(k).mean for k in range(7)]
    assert tuned.criterion == "darr" and tuned.segments == 24 and tuned.groups == {"cs-en": 12, "de-en": 12}
    assert tuned.best_layer == int(np.argmax(means)) and tuned.default_layer == 5
    for k in range(7):
        low, high = tuned.figures(k).ci
        assert low <= means[k] <= high
        assert tuned.figures(k, "darr", "precision").ci is None
    test = tuned.test
    assert test is not None and test.method == "darr" and test.num_samples == 300
    assert test.estimate_b == means[tuned.best_layer] and test.estimate_a == means[5]
    data = tuned.to_dict()
    assert data["criterion"] == "darr" and set(data["layers"][0]) == {"layer", "darr"}


def test_bootstrap_equals_a_plain_loop_over_its_resamples(rankings, tuned):
    n, layer = len(rankings), tuned.best_layer
    better, worse = tuned.scores.f1[layer, :n], tuned.scores.f1[layer, n:]
    boot = DarrBootstrap(n, rankings.groups, num_samples=50, seed=7)
    members = {g: [i for i, x in enumerate(rankings.groups or []) if x == g] for g in ("cs-en", "de-en")}
    for r, statistic in enumerate(boot.statistics(better, worse)):
        taus = []
        for group, idx in members.items():  # each judgement repeated as often as the resample drew it
            drawn = np.repeat(np.array(idx), boot.weights[group][r].astype(int))
            taus.append(hand_tau(better[drawn], worse[drawn], [group] * len(drawn)))
        assert statistic == pytest.approx(float(np.mean(taus)), abs=1e-12)
    same = DarrBootstrap(n, rankings.groups, num_samples=50, seed=7).interval(better, worse)
    assert same == boot.interval(better, worse) != DarrBootstrap(n, rankings.groups, 50, 8).interval(better, worse)
    test = boot.paired_test((better, worse), (better, worse))
    assert test.p_value == 1.0 and test.difference == 0.0 and not test.significant


@pytest.mark.slow
def test_idf_counts_each_judgements_reference_once(rankings, tuned):
    few = RelativeRankings.from_columns(rankings.references[:6], rankings.better[:6], rankings.worse[:6])
    weighted = tune_layers_on_rankings(few, PACKAGED_MINILM, idf=True, bootstrap=0)
    metric = BERTScore(PACKAGED_MINILM, idf=True)  # the better candidates alone: each reference counted once
    metric.update(few.better, few.references)
    np.testing.assert_allclose(weighted.scores.f1[5, :6], metric.compute_scores().f1.double().numpy(), atol=1e-6)
    assert weighted.idf and not np.allclose(weighted.scores.f1[5, :6], tuned.scores.f1[5, :6], atol=1e-4)


@pytest.mark.slow
def test_undefined_scores_leave_their_judgement_out(rankings, tuned):
    n = len(rankings)
    f1 = tuned.scores.f1.copy()
    f1[4, n + 3] = math.nan  # the worse candidate of judgement 3
    scores = LayerScores(tuned.scores.precision, tuned.scores.recall, f1, PACKAGED_MINILM, "code", False)
    with pytest.warns(UserWarning, match=r"1 judgement\(s\) have a candidate with an undefined"):
        result = tune_rankings_from_scores(rankings, scores, bootstrap=0)
    assert result.dropped == 1 and result.segments == n - 1 and result.groups == {"cs-en": 11, "de-en": 12}
    keep = [i for i in range(n) if i != 3]
    expected = hand_tau(f1[2, keep], f1[2, [n + i for i in keep]], [rankings.groups[i] for i in keep])
    assert result.figures(2).mean == pytest.approx(expected, abs=1e-12)
    f1[4, n + 4 : 2 * n] = math.nan  # judgements 0 to 2 left (3 was undefined already), then 0 and 1
    few = LayerScores(tuned.scores.precision, tuned.scores.recall, f1, PACKAGED_MINILM, "code", False)
    with pytest.warns(UserWarning, match=r"21 judgement\(s\) have a candidate"):
        assert tune_rankings_from_scores(rankings, few, bootstrap=0).segments == 3
    f1[4, 2:n] = math.nan
    with pytest.warns(UserWarning), pytest.raises(ValueError, match=r"2 judgement\(s\) with defined scores: layer"):
        tune_rankings_from_scores(rankings, few, bootstrap=0)


def test_fewer_than_three_judgements_are_refused_before_the_model_loads(rankings):
    two = RelativeRankings.from_columns(rankings.references[:2], rankings.better[:2], rankings.worse[:2])
    with pytest.raises(ValueError, match=r"2 judgement\(s\): layer tuning needs at least 3"):
        tune_layers_on_rankings(two, "no/such-model")


def test_reader_reads_columns_by_name_and_names_bad_lines(tmp_path):
    path = tmp_path / "darr.tsv"
    path.write_text("lp\tref\tbetter\tworse\nde-en\tr1\tb1\tw1\nde-en\tr2\tb2\tw2\ncs-en\tr3\tb3\tw3\n", "utf-8")
    read = read_relative_rankings(path, reference="ref", group="lp")
    assert read.references == ["r1", "r2", "r3"] and read.worse == ["w1", "w2", "w3"] and read.lines == [2, 3, 4]
    assert read.groups == ["de-en", "de-en", "cs-en"] and read.as_pairs().candidates == ["b1", "b2", "b3", *read.worse]
    with pytest.raises(JudgementFileError, match=r"no column 'reference' \(the reference column\)"):
        read_relative_rankings(path)
    path.write_text("lp\treference\tbetter\tworse\nde-en\tr1\tb1\n\tr2\tb2\tw2\nx\tr\tb\tw\n", "utf-8")
    with pytest.raises(JudgementFileError, match="line 2 has 3 tab-separated fields where the header has 4"):
        read_relative_rankings(path, group="lp")
    with pytest.warns(UserWarning, match="2 bad line"), pytest.raises(JudgementFileError, match="has 1 usable"):
        read_relative_rankings(path, group="lp", skip_bad=True)
    with pytest.raises(ValueError, match="worse has 1 entries for 2 references"):
        RelativeRankings.from_columns(["a", "b"], ["c", "d"], ["e"])
