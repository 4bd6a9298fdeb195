"""The batched resample kernels (GroupResamples) against scipy on the resampled data (each segment repeated as
often as it is drawn), on columns with and without ties, and Kendall's float32 sums against float64 ones."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy import stats

from bertscore_tm.tuning.correlation import GroupedBootstrap
from bertscore_tm.tuning.weighted_correlation import GroupResamples, kendall_numerator

SCIPY = {"pearson": stats.pearsonr, "spearman": stats.spearmanr, "kendall": stats.kendalltau}  # tau-b


def reference(x, human, counts, method):
    """scipy's correlation of each resample's data, NaN where either side is constant in it."""
    values = []
    for row in counts.astype(int):
        a, b = np.repeat(x, row), np.repeat(human, row)
        constant = np.all(a == a[0]) or np.all(b == b[0])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            values.append(np.nan if constant else float(SCIPY[method](a, b)[0]))
    return np.array(values)


def columns_and_counts(seed: int, m: int = 40, resamples: int = 300):
    rng = np.random.default_rng(seed)
    human = np.round(rng.normal(size=m), 1)  # ties in the human scores
    continuous = 0.85 + 0.05 * (0.6 * human + rng.normal(size=m))
    columns = np.stack(
        [
            continuous,
            np.round(continuous, 2),  # ties
            np.r_[np.full(m - 2, 0.5), 0.7, 0.9],  # mostly one value: many constant resamples
            -continuous + 3.0,
        ]
    )
    counts = rng.multinomial(m, np.full(m, 1 / m), size=resamples).astype(np.float64)
    counts[0] = 0
    counts[0, 3] = m  # one resample of a single segment: constant everywhere
    return human, columns, counts


@pytest.mark.parametrize("method", ["pearson", "spearman", "kendall"])
@pytest.mark.parametrize("seed", [0, 1])
def test_batched_columns_equal_scipy_on_the_resampled_data(method, seed):
    human, columns, counts = columns_and_counts(seed)
    fast = GroupResamples(counts, human).correlations(columns, method)
    slow = np.stack([reference(x, human, counts, method) for x in columns])
    assert fast.shape == (len(columns), len(counts))
    np.testing.assert_array_equal(np.isnan(fast), np.isnan(slow))
    np.testing.assert_allclose(fast[~np.isnan(fast)], slow[~np.isnan(slow)], rtol=0, atol=1e-12)
    assert np.isnan(fast[:, 0]).all() and np.isnan(fast[2]).sum() > 1


def test_kendall_float32_sums_are_exact():
    human, columns, counts = columns_and_counts(3, m=300, resamples=50)
    x = columns[1]
    signs = np.sign(x[:, None] - x[None, :]) * np.sign(human[:, None] - human[None, :])
    exact = np.einsum("bi,ij,bj->b", counts, signs, counts) / 2
    np.testing.assert_array_equal(kendall_numerator(x, human, counts), exact)
    halves = counts / 2  # not whole counts: float64 throughout
    np.testing.assert_allclose(kendall_numerator(x, human, halves), exact / 4, rtol=1e-13)


def test_bootstrap_statistics_of_many_columns_equal_one_at_a_time():
    human, columns, _ = columns_and_counts(4, m=60)
    groups = ["a"] * 30 + ["b"] * 30
    boot = GroupedBootstrap(human, groups, num_samples=100, seed=2)
    for method in ("pearson", "spearman", "kendall"):
        many = boot.statistics_of(columns[[0, 1, 3]], method)
        for row, column in zip(many, columns[[0, 1, 3]], strict=True):
            np.testing.assert_array_equal(row, boot.statistics(column, method))
    with pytest.raises(ValueError, match=r"columns must be \[k, 60\]"):
        boot.statistics_of(columns[:, :10])
    bad = columns[:2].copy()
    bad[1, 5] = np.nan
    with pytest.raises(ValueError, match="not finite"):
        boot.statistics_of(bad)


@pytest.mark.parametrize("method", ["pearson", "spearman", "kendall"])
def test_plain_correlations_equal_scipy(method):
    """Without resampling a group's figures come from the resample kernels (the human side kept): scipy's,
    ties included, and NaN for a constant column."""
    human, columns, counts = columns_and_counts(5)
    group = GroupResamples(counts, human)
    for x in [*columns, np.full(len(human), 0.3)]:
        slow = reference(x, human, np.ones((1, len(x))), method)[0]
        fast = group.plain(x, method)
        assert fast == pytest.approx(slow, abs=1e-12) or (np.isnan(fast) and np.isnan(slow))


@pytest.mark.parametrize("method", ["spearman", "kendall"])
def test_groups_too_large_to_keep_their_human_signs_give_the_same_figures(method, monkeypatch):
    from bertscore_tm.tuning import weighted_correlation

    human, columns, counts = columns_and_counts(6)
    kept = GroupResamples(counts, human)
    expected = kept.correlations(columns, method), [kept.plain(x, method) for x in columns]
    monkeypatch.setattr(weighted_correlation, "CACHED_SIGNS", 0)
    unkept = GroupResamples(counts, human)
    np.testing.assert_array_equal(unkept.correlations(columns, method), expected[0])
    assert [unkept.plain(x, method) for x in columns] == expected[1]


def test_resample_counts_are_whole_draws_of_every_segment_and_reproducible():
    human = np.linspace(0, 1, 50)
    groups = ["a"] * 20 + ["b"] * 30
    boot = GroupedBootstrap(human, groups, num_samples=4000, seed=3)
    for name, size in (("a", 20), ("b", 30)):
        counts = boot.weights[name]
        assert counts.shape == (4000, size) and counts.dtype == np.float64
        assert (counts.sum(axis=1) == size).all() and (counts >= 0).all() and (counts == np.round(counts)).all()
        # multinomial(size, uniform): each count has mean 1 and variance 1 - 1/size
        assert counts.mean() == pytest.approx(1.0, abs=0.02)
        assert counts.var() == pytest.approx(1 - 1 / size, abs=0.05)
    again = GroupedBootstrap(human, groups, num_samples=4000, seed=3)
    assert all(np.array_equal(boot.weights[k], again.weights[k]) for k in boot.weights)


def test_resample_weights_must_be_whole_counts():
    human, _, counts = columns_and_counts(7)
    with pytest.raises(ValueError, match="whole counts"):
        GroupResamples(counts / 2, human)
