"""bertscore_tm.tuning.correlation against independent brute-force float64 computations from the definitions."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from bertscore_tm.tuning.correlation import (
    MIN_SEGMENTS,
    CorrelationWarning,
    GroupedBootstrap,
    average_ranks,
    correlate,
    darr_tau,
    grouped_correlation,
    kendall_tau_b,
    paired_bootstrap_test,
    pearson,
    percentile_interval,
    spearman,
)
from bertscore_tm.tuning.system_level import system_correlation, system_correlations


# -- references: a few lines each, straight from the definitions ---------------------------------------------
def ref_pearson(x, y):
    mx, my = sum(x) / len(x), sum(y) / len(y)
    cov = sum((a - mx) * (b - my) for a, b in zip(x, y, strict=True))
    return cov / math.sqrt(sum((a - mx) ** 2 for a in x) * sum((b - my) ** 2 for b in y))


def ref_ranks(x):
    """1 + the values below + half the other values equal: the average of the ranks a tie spans (O(n^2))."""
    return [1 + sum(b < a for b in x) + sum(b == a for b in x[:i] + x[i + 1 :]) / 2 for i, a in enumerate(x)]


def ref_spearman(x, y):
    return ref_pearson(ref_ranks(x), ref_ranks(y))


def ref_tau_b(x, y):
    concordant = discordant = tied_x = tied_y = 0
    n = len(x)
    for i in range(n):
        for j in range(i + 1, n):
            dx, dy = x[i] - x[j], y[i] - y[j]
            tied_x += dx == 0
            tied_y += dy == 0
            concordant += dx * dy > 0
            discordant += dx * dy < 0
    pairs = n * (n - 1) / 2
    return (concordant - discordant) / math.sqrt((pairs - tied_x) * (pairs - tied_y))


REFERENCES = {"pearson": ref_pearson, "spearman": ref_spearman, "kendall": ref_tau_b}


def sample(seed, n=60, ties=False):
    rng = np.random.default_rng(seed)
    human = rng.normal(size=n)
    metric = 0.85 + 0.05 * (0.6 * human + rng.normal(size=n))
    if ties:  # few distinct values in both
        human, metric = np.round(human), np.round(metric, 2)
    return metric.tolist(), human.tolist()


# -- single correlations ------------------------------------------------------------------------------------
@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_correlations_equal_the_definitions(seed, ties):
    metric, human = sample(seed, ties=ties)
    assert pearson(metric, human) == pytest.approx(ref_pearson(metric, human), abs=1e-9)
    assert spearman(metric, human) == pytest.approx(ref_spearman(metric, human), abs=1e-9)
    assert kendall_tau_b(metric, human) == pytest.approx(ref_tau_b(metric, human), abs=1e-9)
    for method, ref in REFERENCES.items():
        assert correlate(metric, human, method) == pytest.approx(ref(metric, human), abs=1e-9)


def test_ranks_and_a_hand_computed_tau_b():
    values = [3.0, 1.0, 3.0, 2.0, 3.0, 1.0]
    assert average_ranks(values).tolist() == ref_ranks(values) == [5.0, 1.5, 5.0, 3.0, 5.0, 1.5]
    # x = 1 2 2 3, y = 1 3 2 4: 5 concordant pairs, 0 discordant, one pair tied in x: 5 / sqrt(5 * 6)
    assert kendall_tau_b([1, 2, 2, 3], [1, 3, 2, 4]) == pytest.approx(5 / math.sqrt(30), abs=1e-15)
    assert kendall_tau_b([1, 2, 3], [3, 2, 1]) == -1.0


def test_scipy_agrees_where_installed():
    stats = pytest.importorskip("scipy.stats")
    metric, human = sample(5, ties=True)
    assert pearson(metric, human) == pytest.approx(stats.pearsonr(metric, human)[0], abs=1e-9)
    assert spearman(metric, human) == pytest.approx(stats.spearmanr(metric, human)[0], abs=1e-9)
    assert kendall_tau_b(metric, human) == pytest.approx(stats.kendalltau(metric, human)[0], abs=1e-9)


# -- groups -------------------------------------------------------------------------------------------------
def grouped_sample():
    metric, human = sample(7, n=90, ties=True)
    groups = ["cs-en"] * 30 + ["de-en"] * 25 + ["zh-en"] * 35
    order = np.random.default_rng(3).permutation(90)  # groups interleaved, as rows of a file may be
    return [metric[i] for i in order], [human[i] for i in order], [groups[i] for i in order]


@pytest.mark.parametrize("method", ["pearson", "spearman", "kendall"])
def test_group_correlations_and_their_mean(method):
    metric, human, groups = grouped_sample()
    result = grouped_correlation(metric, human, groups, method)
    assert list(result.groups) == list(dict.fromkeys(groups))
    for name, value in result.groups.items():
        x = [m for m, g in zip(metric, groups, strict=True) if g == name]
        y = [h for h, g in zip(human, groups, strict=True) if g == name]
        assert value == pytest.approx(REFERENCES[method](x, y), abs=1e-9)
        assert result.sizes[name] == len(x)
    assert result.mean == pytest.approx(sum(result.groups.values()) / 3, abs=1e-12)
    assert result.left_out == {}


def test_resample_statistics_equal_the_resampled_data():
    """A resample's statistic is the correlation of the segments it draws, copies included (copies tie)."""
    metric, human, groups = grouped_sample()
    boot = GroupedBootstrap(human, groups, num_samples=5, seed=11)
    x, y, g = np.asarray(metric), np.asarray(human), np.asarray(groups)
    for method, ref in REFERENCES.items():
        stats = boot.statistics(metric, method)
        for r in range(5):
            per_group = []
            for name, idx in boot.index.members.items():
                assert (g[idx] == name).all()
                counts = boot.weights[name][r].astype(int)
                assert counts.sum() == len(idx)
                per_group.append(ref(np.repeat(x[idx], counts).tolist(), np.repeat(y[idx], counts).tolist()))
            assert stats[r] == pytest.approx(np.mean(per_group), abs=1e-9)


# -- bootstrap intervals and the paired test ----------------------------------------------------------------
def interval(metric, human, groups, method, num_samples=300, seed=4, confidence=0.95):
    """The group-averaged correlation's percentile bootstrap interval (`GroupedBootstrap.interval`)."""
    return GroupedBootstrap(human, groups, num_samples, seed).interval(metric, method, confidence)


def test_intervals_are_reproducible_and_cover_the_estimate():
    metric, human, groups = grouped_sample()
    for method in ("pearson", "spearman", "kendall"):
        first = interval(metric, human, groups, method)
        assert first == interval(metric, human, groups, method)
        assert interval(metric, human, groups, method, seed=np.random.default_rng(4)) == first
        assert first != interval(metric, human, groups, method, seed=5)
        estimate = grouped_correlation(metric, human, groups, method).mean
        assert first[0] < estimate < first[1]
    wide = interval(metric, human, groups, "pearson", confidence=0.99)
    narrow = interval(metric, human, groups, "pearson", confidence=0.5)
    assert wide[0] < narrow[0] < narrow[1] < wide[1]


def test_percentile_interval_cuts_the_same_count_off_each_end():
    assert percentile_interval(np.arange(1000.0)[::-1], 0.95) == (25.0, 974.0)
    assert percentile_interval(np.arange(1000.0), 0.9) == (50.0, 949.0)


def test_paired_test_clear_case():
    rng = np.random.default_rng(0)
    human = rng.normal(size=300)
    groups = ["a", "b", "c"] * 100
    good, poor = human + 0.3 * rng.normal(size=300), human + 2.0 * rng.normal(size=300)
    for method in ("pearson", "spearman", "kendall"):
        test = paired_bootstrap_test(poor, good, human, groups, method, num_samples=500, seed=1)
        assert test.difference > 0.2 and test.significant
        assert test.p_value == pytest.approx(1 / 501)
        assert test.interval[0] > 0 and test.num_samples == 500
        backwards = paired_bootstrap_test(good, poor, human, groups, method, num_samples=500, seed=1)
        assert backwards.p_value == 1.0 and not backwards.significant


def test_paired_test_null_case():
    metric, human, groups = grouped_sample()
    same = paired_bootstrap_test(metric, list(metric), human, groups, "pearson", num_samples=200, seed=2)
    assert same.difference == 0 and same.p_value == 1.0 and not same.significant
    # a monotone transform changes no rank: Spearman and Kendall see the same column
    monotone = np.exp(np.asarray(metric) * 3)
    for method in ("spearman", "kendall"):
        test = paired_bootstrap_test(metric, monotone, human, groups, method, num_samples=200, seed=2)
        assert abs(test.difference) < 1e-12 and test.p_value == 1.0 and not test.significant


# -- relative ranking and system level, by hand ----------------------------------------------------------------
def test_darr_tau_by_hand():
    better = [0.9, 0.8, 0.5, 0.6, 0.3, 0.7, 0.2]
    worse = [0.7, 0.8, 0.6, 0.1, 0.2, 0.1, 0.4]
    # all seven: concordant 0.9>0.7, 0.6>0.1, 0.3>0.2, 0.7>0.1; discordant the tie 0.8=0.8, 0.5<0.6, 0.2<0.4
    assert darr_tau(better, worse).mean == pytest.approx((4 - 3) / 7, abs=1e-15)
    grouped = darr_tau(better, worse, ["x", "x", "x", "y", "y", "y", "y"])
    # x: 1 concordant, 2 discordant -> -1/3; y: 3 concordant, 1 discordant -> 1/2
    assert grouped.groups == pytest.approx({"x": -1 / 3, "y": 0.5}, abs=1e-15)
    assert grouped.mean == pytest.approx((-1 / 3 + 0.5) / 2, abs=1e-15)
    assert darr_tau([0.5], [0.5]).mean == -1.0  # a metric tie is discordant


def test_system_level_by_hand():
    metric = [0.5, 1.5, 2.0, 2.0, 3.0, 3.0]  # system means 1, 2, 3
    human = [0.0, 2.0, 3.0, 3.0, 1.0, 3.0]  # system means 1, 3, 2
    systems = ["A", "A", "B", "B", "C", "C"]
    # centred: x = -1 0 1, y = -1 1 0: r = 1 / sqrt(2 * 2)
    assert system_correlation(metric, systems, human).mean == pytest.approx(0.5, abs=1e-12)
    given = {"A": 1.0, "B": 3.0, ("all", "C"): 2.0}
    assert system_correlation(metric, systems, human_systems=given).mean == pytest.approx(0.5, abs=1e-12)
    two_groups = system_correlation(metric * 2, systems * 2, human * 2, ["p"] * 6 + ["q"] * 6)
    assert two_groups.groups == pytest.approx({"p": 0.5, "q": 0.5}, abs=1e-12)
    assert two_groups.sizes == {"p": 3, "q": 3}
    with pytest.raises(ValueError, match="no score for system 'C'"):
        system_correlation(metric, systems, human_systems={"A": 1.0, "B": 2.0})


def test_system_level_of_many_rows_equals_one_at_a_time():
    rng = np.random.default_rng(5)
    systems = [f"s{i % 4}" for i in range(40)]
    groups = ["p"] * 20 + ["q"] * 20
    human, rows = rng.normal(size=40), rng.normal(size=(3, 40))
    many = system_correlations(rows, systems, human, groups)
    assert [r.groups for r in many] == [system_correlation(row, systems, human, groups).groups for row in rows]
    for row, result in zip(rows, many, strict=True):  # by hand: per group, Pearson of the systems' means
        for name, lo in (("p", 0), ("q", 20)):
            at = np.array([int(s[1]) for s in systems[lo : lo + 20]])
            x = np.bincount(at, weights=row[lo : lo + 20]) / np.bincount(at)
            y = np.bincount(at, weights=human[lo : lo + 20]) / np.bincount(at)
            assert result.groups[name] == pytest.approx(np.corrcoef(x, y)[0, 1], abs=1e-12)
    with pytest.raises(ValueError, match=r"metrics must be \[k, segments\]"):
        system_correlations(rows[0], systems, human, groups)
    with pytest.raises(ValueError, match="one label per segment"):
        system_correlations(rows, systems[:-1], human, groups)


# -- undefined cases and bad input ----------------------------------------------------------------------------
@pytest.mark.parametrize("method", ["pearson", "spearman", "kendall"])
def test_constant_scores_give_nan_with_a_warning(method):
    with pytest.warns(CorrelationWarning, match="y is constant"):
        assert math.isnan(correlate([1, 2, 3, 4], [5, 5, 5, 5], method))
    with pytest.warns(CorrelationWarning, match="x is constant"):
        assert math.isnan(correlate([0.9, 0.9, 0.9], [1, 2, 3], method))
    with pytest.warns(CorrelationWarning, match="group 'b': the human scores are constant"):
        result = grouped_correlation([1, 2, 3, 1, 2, 3], [1, 3, 2, 7, 7, 7], list("aaabbb"), method)
    assert math.isnan(result.groups["b"]) and math.isnan(result.mean) and not math.isnan(result.groups["a"])


def test_small_groups_are_left_out_and_too_few_segments_refused():
    metric, human = [1, 2, 3, 4, 9, 8], [1, 3, 2, 4, 1, 2]
    with pytest.warns(CorrelationWarning, match=r"fewer than 3 segments .* 'tiny' \(2\)"):
        result = grouped_correlation(metric, human, ["big"] * 4 + ["tiny"] * 2)
    assert result.left_out == {"tiny": 2} and list(result.groups) == ["big"]
    assert result.mean == pytest.approx(ref_pearson(metric[:4], human[:4]), abs=1e-12)
    with pytest.warns(CorrelationWarning), pytest.raises(ValueError, match="no group has at least 3"):
        grouped_correlation(metric, human, ["a", "a", "b", "b", "c", "c"])
    for n in range(MIN_SEGMENTS):
        with pytest.raises(ValueError, match="at least 3 segments"):
            pearson(metric[:n], human[:n])
        with pytest.raises(ValueError, match="at least 3 segments"):
            GroupedBootstrap(human[:n])


def test_bad_input_is_refused_clearly():
    with pytest.raises(ValueError, match=r"not finite numbers .* index 1"):
        pearson([1, float("nan"), 3], [1, 2, 3])
    with pytest.raises(ValueError, match="pair up one to one"):
        pearson([1, 2, 3, 4], [1, 2, 3])
    with pytest.raises(ValueError, match="one group label per segment"):
        grouped_correlation([1, 2, 3], [1, 2, 3], ["a", "a"])
    with pytest.raises(ValueError, match="method must be one of"):
        correlate([1, 2, 3], [1, 2, 3], "cosine")
    with pytest.raises(ValueError, match="num_samples must be an integer >= 1"):
        GroupedBootstrap([1, 2, 3], num_samples=0)
    with pytest.raises(ValueError, match="confidence must be between 0 and 1"):
        GroupedBootstrap([1, 3, 2]).interval([1, 2, 3], confidence=95)
    with pytest.raises(ValueError, match="one of each per judgement"):
        darr_tau([1, 2], [1])


def test_undefined_resamples_are_left_out_with_a_warning():
    """On 3 segments a resample often draws one segment three times: its correlation is undefined."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        boot = GroupedBootstrap([1.0, 2.0, 3.0], num_samples=200, seed=0)
    with pytest.warns(CorrelationWarning, match="of 200 bootstrap resamples leave the statistic undefined"):
        low, high = boot.interval([1.0, 3.0, 2.0])
    assert -1 <= low <= high <= 1
