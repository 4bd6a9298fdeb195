"""Intervals and paired tests on per-pair scores, checked without any model: on simulated scores the 95%
interval covers the true mean 95% of the time, p-values are uniform when the systems do not differ, a real
difference is found, and the vectorised resampling equals the textbook definitions computed one resample at
a time. Many simulated data sets go through one call each (pairs on the last axis), so this takes seconds."""

from __future__ import annotations

import math
import warnings

import pytest
import torch

from bertscore_tm.comparison import significance
from bertscore_tm.comparison.significance import bootstrap_interval, check_settings, paired_test
from bertscore_tm.errors import ArgumentValueError
from bertscore_tm.settings.arguments import MAX_RESAMPLES

DATA_SETS = 2000  # simulated test sets per calibration check: the share's standard error is about 0.005
PAIRS = 300
METHODS = ("bootstrap", "randomization")


def simulated_scores(*shape: int, seed: int) -> torch.Tensor:
    """F1-like per-pair scores: Beta(18, 2), mean 0.9, skewed to the left as BERTScore F1 is."""
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        return torch.distributions.Beta(torch.tensor(18.0), torch.tensor(2.0)).sample(shape).double()


def null_systems(seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Two systems that do not differ: per pair a shared difficulty plus each system's own noise, so the two
    scores of a pair are exchangeable (DATA_SETS x PAIRS each)."""
    difficulty = simulated_scores(DATA_SETS, PAIRS, seed=seed)
    generator = torch.Generator().manual_seed(seed)
    noise = 0.03 * torch.randn((2, DATA_SETS, PAIRS), generator=generator, dtype=torch.float64)
    return difficulty + noise[0], difficulty + noise[1]


def ks_distance(p_values: torch.Tensor) -> float:
    """Kolmogorov-Smirnov distance between the p-values' empirical distribution and Uniform(0, 1)."""
    p = torch.sort(p_values).values
    upper = torch.arange(1, len(p) + 1, dtype=torch.float64) / len(p)
    return float(torch.maximum(upper - p, p - (upper - 1 / len(p))).max())


KS_CRITICAL = 1.63 / math.sqrt(DATA_SETS)  # the 1% level of the KS test for this many p-values


# -- calibration ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("confidence", "low", "high"), [(0.95, 0.93, 0.97), (0.80, 0.77, 0.83)])
def test_interval_covers_the_true_mean_at_its_confidence(confidence: float, low: float, high: float) -> None:
    scores = simulated_scores(DATA_SETS, PAIRS, seed=1)  # true mean 18 / 20
    interval = bootstrap_interval(scores, confidence=confidence, num_samples=1000, seed=0)
    covered = (interval.low <= 0.9) & (interval.high >= 0.9)
    assert low <= float(covered.double().mean()) <= high
    assert bool((interval.low <= interval.mean).all() and (interval.mean <= interval.high).all())


@pytest.mark.parametrize("method", METHODS)
def test_p_values_are_uniform_when_the_systems_do_not_differ(method: str) -> None:
    a, b = null_systems(seed=2)
    p = paired_test(a, b, method=method, num_samples=1000, seed=0).p_value
    assert p.shape == (DATA_SETS,)
    assert 0.035 <= float((p < 0.05).double().mean()) <= 0.065
    assert ks_distance(p) < KS_CRITICAL


def test_the_calibration_check_rejects_sacrebleus_bootstrap_p_value() -> None:
    """The same check fails sacrebleu's paired-bootstrap p-value (absolute resampled differences shifted by
    their own mean, counted when strictly greater): a one-sided tail of a two-sided statistic, so it falls
    below 0.05 about twice as often as it should. This is why paired_test shifts the signed differences."""
    a, b = null_systems(seed=2)
    diffs = b - a
    resampled = significance._resampled_means(diffs, 1000, seed=0)  # [1000, DATA_SETS]
    shifted = resampled.abs() - resampled.abs().mean(dim=0)
    p = ((shifted > diffs.mean(dim=-1).abs()).sum(dim=0) + 1) / 1001
    assert float((p < 0.05).double().mean()) > 0.08
    assert ks_distance(p) > KS_CRITICAL


@pytest.mark.parametrize("method", METHODS)
def test_a_clear_difference_gives_a_small_p_value(method: str) -> None:
    difficulty = simulated_scores(50, PAIRS, seed=3)
    noise = 0.03 * torch.randn((2, 50, PAIRS), generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    a, b = difficulty + noise[0], difficulty + 0.02 + noise[1]  # B is better by 0.02 on average (8 standard errors)
    result = paired_test(a, b, method=method, num_samples=1000, seed=0)
    assert bool((result.p_value < 0.01).all())
    assert float(result.p_value.min()) == pytest.approx(1 / 1001)  # the smallest p-value 1000 samples can give
    assert bool((result.low > 0).all())  # the interval of the difference excludes 0 ...
    assert float(((result.low <= 0.02) & (result.high >= 0.02)).double().mean()) >= 0.9  # ... and covers 0.02
    # the test is two-sided: swapping the systems changes the sign of the difference, not the p-value
    swapped = paired_test(b, a, method=method, num_samples=1000, seed=0)
    assert torch.equal(swapped.p_value, result.p_value)
    assert torch.allclose(swapped.delta, -result.delta, rtol=0, atol=1e-15)


@pytest.mark.parametrize("method", METHODS)
def test_identical_systems_give_p_value_one_and_no_difference(method: str) -> None:
    a = simulated_scores(PAIRS, seed=4)
    result = paired_test(a, a.clone(), method=method, num_samples=1000, seed=0)
    assert float(result.p_value) == 1.0
    assert float(result.delta) == float(result.low) == float(result.high) == 0.0
    assert (result.method, result.num_samples) == (method, 1000)


@pytest.mark.parametrize("method", METHODS)
def test_a_system_that_differs_on_a_few_lines_is_not_significant(method: str) -> None:
    """Shared lines have a difference of exactly 0; ties with the observed difference (shuffles or resamples
    that reproduce it up to summation order) must count, or p would be spuriously small."""
    a = simulated_scores(PAIRS, seed=5)
    b = a.clone()
    b[:2] += torch.tensor([0.01, -0.004], dtype=torch.float64)
    assert float(paired_test(a, b, method=method, num_samples=1000, seed=0).p_value) > 0.2


def test_a_statistic_equal_to_the_observed_one_up_to_summation_order_reaches_it() -> None:
    diffs = torch.tensor([[0.1, 0.2, 0.3, 0.0]], dtype=torch.float64)
    observed = diffs.sum(dim=-1) / 4
    one_ulp_below = torch.nextafter(observed, torch.zeros(1, dtype=torch.float64))
    null = torch.stack([observed, one_ulp_below, observed * (1 - 1e-6), observed * 2])  # [4 samples, 1 row]
    assert significance._reaching(null, observed, diffs).tolist() == [3]  # all but the one really smaller


# -- the definitions, one resample at a time -------------------------------------------------------------------


def test_resampling_equals_its_definition_one_resample_at_a_time() -> None:
    a, b = simulated_scores(2, 40, seed=6).unbind(0)
    n, num_samples, confidence = 40, 200, 0.9
    # the draws the functions make: one [num_samples, n] tensor from a CPU generator seeded with the seed
    indices = torch.randint(0, n, (num_samples, n), generator=torch.Generator().manual_seed(7))
    signs = 1 - 2 * torch.randint(0, 2, (num_samples, n), generator=torch.Generator().manual_seed(7)).double()
    d = (b - a).tolist()
    observed = sum(d) / n
    boot = sorted(sum(d[i] for i in row) / n for row in indices.tolist())
    k = 10  # floor(200 * 0.1 / 2)
    expected_low, expected_high = boot[k], boot[num_samples - 1 - k]
    boot_p = (1 + sum(abs(x - observed) >= abs(observed) for x in boot)) / (num_samples + 1)
    shuffled = [abs(sum(s * x for s, x in zip(row, d, strict=True)) / n) for row in signs.tolist()]
    shuffle_p = (1 + sum(x >= abs(observed) for x in shuffled)) / (num_samples + 1)

    result = paired_test(a, b, "bootstrap", num_samples, seed=7, confidence=confidence)
    assert float(result.delta) == pytest.approx(observed, abs=1e-12)
    assert float(result.low) == pytest.approx(expected_low, abs=1e-12)
    assert float(result.high) == pytest.approx(expected_high, abs=1e-12)
    assert float(result.p_value) == pytest.approx(boot_p, abs=1e-12)
    shuffled_result = paired_test(a, b, "randomization", num_samples, seed=7, confidence=confidence)
    assert float(shuffled_result.p_value) == pytest.approx(shuffle_p, abs=1e-12)

    interval = bootstrap_interval(b, confidence, num_samples, seed=7)
    b_boot = sorted(sum(b[i] for i in row).item() / n for row in indices)
    assert float(interval.mean) == pytest.approx(float(b.mean()), abs=1e-12)
    expected = (b_boot[k], b_boot[num_samples - 1 - k])
    assert (float(interval.low), float(interval.high)) == pytest.approx(expected, abs=1e-12)


def test_95_percent_of_1000_resamples_cuts_25_from_each_end_as_sacrebleu_does() -> None:
    samples = torch.arange(1000, dtype=torch.float64)[torch.randperm(1000, generator=torch.Generator().manual_seed(0))]
    low, high = significance._percentiles(samples[:, None], 0.95)
    assert (float(low), float(high)) == (25.0, 974.0)


def test_same_seed_same_numbers_other_seed_other_numbers() -> None:
    a, b = simulated_scores(2, PAIRS, seed=8).unbind(0)
    for method in METHODS:
        first, again = (paired_test(a, b, method=method, num_samples=500, seed=11) for _ in range(2))
        assert first == again
        other = paired_test(a, b, method=method, num_samples=500, seed=12)
        assert other.p_value != first.p_value or other.low != first.low
    assert bootstrap_interval(a, seed=11) == bootstrap_interval(a, seed=11)
    assert bootstrap_interval(a, seed=11).low != bootstrap_interval(a, seed=12).low


def test_batches_of_resamples_do_not_change_the_numbers(monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = simulated_scores(2, PAIRS, seed=9).unbind(0)

    def everything() -> tuple:
        return [paired_test(a, b, method=m, num_samples=300, seed=1) for m in METHODS], bootstrap_interval(a, 0.9, 300)

    whole = everything()
    monkeypatch.setattr(significance, "_BATCH_BYTES", 16 * PAIRS * 7)  # batches of 7 resamples
    assert len(list(significance._batches(300, PAIRS))) == 43
    assert everything() == whole


def test_leading_axes_are_independent_data_sets_with_shared_resamples() -> None:
    """A [K, N] input (layers, or K systems against one baseline) equals K calls with the same seed."""
    scores = simulated_scores(3, PAIRS, seed=10)
    together = bootstrap_interval(scores, num_samples=400, seed=5)
    assert together.low.shape == (3,)
    for i in range(3):
        alone = bootstrap_interval(scores[i], num_samples=400, seed=5)
        assert torch.allclose(torch.stack(alone), torch.stack([x[i] for x in together]), rtol=0, atol=1e-15)
    baseline = simulated_scores(PAIRS, seed=11)
    for method in METHODS:
        many = paired_test(baseline, scores, method=method, num_samples=400, seed=5)
        for i in range(3):
            one = paired_test(baseline, scores[i], method=method, num_samples=400, seed=5)
            assert float(one.p_value) == float(many.p_value[i])
            assert float(one.delta) == pytest.approx(float(many.delta[i]), abs=1e-12)


def test_inputs_may_be_float32_lists_or_on_another_device() -> None:
    values = [0.91, 0.87, 0.95, 0.90]
    with pytest.warns(UserWarning, match=r"only 4 pair\(s\)"):
        as_list = bootstrap_interval(values, num_samples=100)
    with pytest.warns(UserWarning, match=r"only 4 pair\(s\)"):
        as_tensor = bootstrap_interval(torch.tensor(values, dtype=torch.float64), num_samples=100)
    assert as_list == as_tensor and as_list.mean.dtype == torch.float64
    with pytest.warns(UserWarning, match=r"only 4 pair\(s\)"):
        assert paired_test(values, values, num_samples=10).p_value.item() == 1.0


# -- bad arguments -------------------------------------------------------------------------------------------


BAD_SETTINGS = [
    (dict(confidence=0.0), ValueError, "between 0 and 1"),
    (dict(confidence=1.0), ValueError, "between 0 and 1"),
    (dict(confidence=95), ValueError, "e.g. 0.95"),
    (dict(confidence=float("nan")), ValueError, "between 0 and 1"),
    (dict(confidence=True), TypeError, "confidence must be a number"),
    (dict(confidence="0.95"), TypeError, "got str"),
    (dict(num_samples=0), ValueError, "an integer >= 1"),
    (dict(num_samples=MAX_RESAMPLES + 1), ValueError, "from 1 to 1,000,000"),
    (dict(num_samples=10**11), ValueError, "from 1 to 1,000,000"),
    (dict(num_samples=10.0), TypeError, "num_samples must be an integer"),
    (dict(num_samples=True), TypeError, "num_samples must be an integer"),
    (dict(seed=1.5), TypeError, "seed must be an integer"),
    (dict(seed=-1), ValueError, "seed must be an integer >= 0"),
    (dict(seed=2**64), ValueError, "from 0 to 18,446,744,073,709,551,615"),
]


@pytest.mark.parametrize(("settings", "error", "words"), BAD_SETTINGS, ids=[str(s) for s, _, _ in BAD_SETTINGS])
def test_bad_settings_are_refused_by_both_functions(settings: dict, error: type, words: str) -> None:
    scores = [0.9, 0.8, 0.85]
    with pytest.raises(error, match=words.replace("*", r"\*").replace(".", r"\.")):
        bootstrap_interval(scores, **settings)
    with pytest.raises(error, match=words.replace("*", r"\*").replace(".", r"\.")):
        paired_test(scores, scores, **settings)
    with pytest.raises(error):
        check_settings(**settings)


def test_too_many_resamples_are_refused_before_any_is_drawn(monkeypatch: pytest.MonkeyPatch) -> None:
    """The bound is checked first: nothing is allocated for 10**11 resamples (800 GB of means)."""
    monkeypatch.setattr(significance, "_resampled_means", lambda *a: pytest.fail("resampling began"))
    with pytest.raises(ArgumentValueError, match="num_samples must be an integer from 1 to 1,000,000") as err:
        paired_test([0.9, 0.8, 0.7], [0.8, 0.8, 0.7], num_samples=10**11)
    assert (err.value.argument, err.value.value) == ("num_samples", 10**11)
    check_settings(num_samples=MAX_RESAMPLES)  # the bound itself is allowed


def test_a_paired_test_needs_two_pairs_and_warns_below_ten() -> None:
    """On one pair every resample is that pair: the p-value would be the smallest possible for any difference."""
    with pytest.raises(ValueError, match="a paired test needs the scores of at least 2 pairs, got 1"):
        paired_test([0.9], [0.8])
    with pytest.warns(UserWarning, match=r"a paired test on only 3 pair\(s\)"):
        paired_test([0.9, 0.8, 0.7], [0.8, 0.8, 0.7])
    scores = torch.linspace(0.5, 0.9, 10)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # 10 pairs: no warning, and the same numbers as before
        result = paired_test(scores, scores + 0.01, num_samples=100)
    assert float(result.p_value) == 1 / 101


def test_bad_scores_are_refused_with_what_to_do() -> None:
    with pytest.raises(ValueError, match=r"scores_a has 3 pairs but scores_b has 2: .* same pairs, in the same order"):
        paired_test([0.9, 0.8, 0.7], [0.9, 0.8])
    with pytest.raises(ValueError, match="scores is empty"):
        bootstrap_interval([])
    with pytest.raises(ValueError, match="one score per pair"):
        bootstrap_interval(torch.tensor(0.9))
    with pytest.raises(ValueError, match=r"scores_b holds 1 value\(s\) that are NaN .*first at pair 1.*idf=True"):
        paired_test([0.9, 0.8, 0.7], [0.9, float("nan"), 0.7])
    with pytest.raises(ValueError, match="NaN or infinite"):
        bootstrap_interval([0.9, float("inf")])
    with pytest.raises(TypeError, match="real numbers"):
        bootstrap_interval(torch.tensor([True, False]))
    with pytest.raises(ValueError, match="method must be one of"):
        paired_test([0.9], [0.8], method="ar")
    with pytest.raises(ValueError, match="do not broadcast"):
        paired_test(torch.zeros(2, 5), torch.zeros(3, 5))


def test_an_interval_on_few_pairs_warns_and_on_one_pair_has_no_width():
    with pytest.warns(UserWarning, match=r"a bootstrap interval on only 1 pair\(s\) is coarse \(has no width"):
        mean, low, high = bootstrap_interval([0.8], num_samples=100)
    assert float(low) == float(high) == float(mean) == pytest.approx(0.8)
    with pytest.warns(UserWarning, match=r"only 4 pair\(s\)"):
        bootstrap_interval([0.8, 0.7, 0.9, 0.85], num_samples=100)
