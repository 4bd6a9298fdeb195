"""Confidence intervals and paired significance tests on per-pair scores: is system B better than system A?

A corpus mean alone cannot say whether a gap of 0.004 F1 between two systems is real or an accident of which
sentences happen to be in the test set. The metric already returns one score per pair (`compute()` with
``reduction="none"``), so intervals and tests need no further model work: they only resample those scores.

Definitions (both as used for MT metrics by Moses, MultEval, sacrebleu and COMET):

* Interval: the percentile bootstrap (Efron and Tibshirani 1993, ch. 13) of the mean. Draw `num_samples`
  resamples of the n pairs with replacement, take each resample's mean, sort, and cut
  ``k = floor(num_samples * (1 - confidence) / 2)`` means off each end: the interval is
  ``[sorted[k], sorted[num_samples - 1 - k]]``, which at 95% and 1000 resamples is sacrebleu's
  (``sorted[25]``, ``sorted[974]``).
* Paired bootstrap resampling (Koehn 2004, "Statistical significance tests for machine translation
  evaluation", EMNLP): both systems are resampled with the same pairs, so the test sees the per-pair
  differences ``d = b - a``. Under the null hypothesis the resampled mean differences are shifted to mean 0
  (Efron and Tibshirani 1993, sec. 16.4; Berg-Kirkpatrick et al. 2012); the two-sided p-value is
  ``(1 + #{|mean_r(d) - mean(d)| >= |mean(d)|}) / (num_samples + 1)``.
  sacrebleu (``--paired-bs``) shifts the *absolute* resampled differences by their own mean and counts
  strictly greater ones; that compares a two-sided statistic with a one-sided tail, so under the null its
  p-values fall below 0.05 about twice as often as they should, and identical systems get its smallest
  p-value. We keep its resampling, its +1 correction and its interval, and shift the signed differences.
* Approximate randomisation (Riezler and Maxwell 2005, "On some pitfalls in automatic evaluation and
  significance testing for MT", ACL workshop; Noreen 1989): under the null the two systems' scores of a
  pair are exchangeable, so each shuffle swaps them with probability 1/2 (flips the sign of ``d_i``); the
  p-value is ``(1 + #{|mean(s * d)| >= |mean(d)|}) / (num_samples + 1)``, with Riezler and Maxwell's +1.

Both p-values are at least ``1 / (num_samples + 1)`` and exactly 1 for identical systems. Statistics that
differ from the observed one only by floating-point summation order count as ties (as reaching it).
A paired test needs at least 2 pairs (on one, every resample is that pair: no variation, and any difference
would look significant), and warns below `FEW_PAIRS` (10); resamples are at most `MAX_RESAMPLES` (1,000,000).

Resampling is vectorised: the indices (or sign flips) of a batch of resamples are one ``[batch, n]`` tensor,
drawn from a CPU ``torch.Generator`` seeded with `seed`, so the same seed gives the same resamples on any
machine; each batch's means are one matrix product. Batches are sized to a fixed memory budget, and since
the generator's stream does not depend on how it is cut into batches, neither do the results.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import NamedTuple

import torch
from torch import Tensor

from bertscore_tm.errors import ArgumentTypeError, ArgumentValueError, warn_user
from bertscore_tm.settings.arguments import MAX_RESAMPLES

METHODS = ("bootstrap", "randomization")
#: A paired test on fewer pairs than this warns: its resamples repeat a handful of values, so its p-value is
#: coarse and its interval too narrow (on 1 pair there is nothing to resample, and `paired_test` refuses).
FEW_PAIRS = 10
#: Bytes one batch of resamples may take: its indices (int64) and their counts or signs (float64).
_BATCH_BYTES = 32 << 20
#: Statistics within this fraction of the largest per-pair |difference| of the observed one are ties.
_TIE = 1e-9


class Interval(NamedTuple):
    """A mean and its confidence interval (0-d tensors, or one per leading index of the scores), float64."""

    mean: Tensor
    low: Tensor
    high: Tensor


class PairedTestResult(NamedTuple):
    """The outcome of a paired test of system B against system A on the same pairs (float64 tensors).

    Attributes:
        delta: the observed difference of the means, ``mean(scores_b) - mean(scores_a)``.
        low, high: the percentile bootstrap interval of `delta` at the test's confidence.
        p_value: the two-sided p-value of "no difference", in ``[1 / (num_samples + 1), 1]``.
        method: ``"bootstrap"`` or ``"randomization"``.
        num_samples: bootstrap resamples, or shuffles for randomisation (the interval always resamples).
    """

    delta: Tensor
    low: Tensor
    high: Tensor
    p_value: Tensor
    method: str
    num_samples: int


def check_settings(confidence: float = 0.95, num_samples: int = 1000, seed: int = 0) -> None:
    """Raise `ArgumentValueError`/`ArgumentTypeError` (ValueError/TypeError, from `bertscore_tm.errors`) with
    an actionable message for a confidence level outside (0, 1), a number of resamples outside
    ``[1, MAX_RESAMPLES]`` (1,000,000), or a seed that is not an integer in ``[0, 2**64)``.

    >>> check_settings(0.95, 1000, 0)
    >>> try:
    ...     check_settings(95)
    ... except ValueError as err:
    ...     print(err)
    confidence must be between 0 and 1 (exclusive), e.g. 0.95 for a 95% interval; got 95
    """
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)):
        raise ArgumentTypeError(
            f"confidence must be a number between 0 and 1, e.g. 0.95; got {type(confidence).__name__}",
            argument="confidence",
            expected="float",
            value=confidence,
        )
    if not (math.isfinite(confidence) and 0 < confidence < 1):
        raise ArgumentValueError(
            f"confidence must be between 0 and 1 (exclusive), e.g. 0.95 for a 95% interval; got {confidence!r}",
            argument="confidence",
            allowed="a number in (0, 1)",
            value=confidence,
        )
    if isinstance(num_samples, bool) or not isinstance(num_samples, int):
        raise ArgumentTypeError(
            f"num_samples must be an integer (resamples, e.g. 1000); got {type(num_samples).__name__}",
            argument="num_samples",
            expected="int",
            value=num_samples,
        )
    if not 1 <= num_samples <= MAX_RESAMPLES:
        raise ArgumentValueError(
            f"num_samples must be at least 1 and at most {MAX_RESAMPLES:,} (1000 is usual; more only narrows the "
            f"smallest possible p-value, and each resample takes memory); got {num_samples}",
            argument="num_samples",
            allowed=f"an integer in [1, {MAX_RESAMPLES}]",
            value=num_samples,
        )
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ArgumentTypeError(
            f"seed must be an integer (the same seed gives the same resamples); got {type(seed).__name__}",
            argument="seed",
            expected="int",
            value=seed,
        )
    if not 0 <= seed < 2**64:
        raise ArgumentValueError(
            f"seed must be between 0 and 2**64 - 1; got {seed}", argument="seed", allowed="[0, 2**64)", value=seed
        )


def bootstrap_interval(
    scores: Tensor | Sequence[float], confidence: float = 0.95, num_samples: int = 1000, seed: int = 0
) -> Interval:
    """The mean of per-pair `scores` and its percentile bootstrap confidence interval.

    Args:
        scores: one score per pair on the last axis, e.g. ``metric.compute()["f1"]`` (``[N]``, or
            ``[L + 1, N]`` with ``all_layers``): every leading index gets its own interval, all from the same
            resamples of the N pairs.
        confidence: the interval's coverage, in (0, 1).
        num_samples: how many resamples of the pairs (with replacement) to draw.
        seed: seeds the resampling (a CPU generator: the same seed gives the same interval on any machine).

    Returns:
        ``Interval(mean, low, high)``, float64 tensors on the CPU, shaped like `scores` without its last axis.

    >>> f1 = torch.tensor([0.91, 0.87, 0.95, 0.90, 0.86, 0.93, 0.89, 0.92, 0.88, 0.94])
    >>> mean, low, high = bootstrap_interval(f1, confidence=0.95, num_samples=1000, seed=0)
    >>> [round(float(x), 4) for x in (mean, low, high)]
    [0.905, 0.885, 0.921]
    """
    check_settings(confidence, num_samples, seed)
    values = _as_scores(scores, "scores")
    if values.shape[-1] < FEW_PAIRS:
        _warn_few(values.shape[-1], "a bootstrap interval")
    flat = values.reshape(-1, values.shape[-1])
    means = _resampled_means(flat, num_samples, seed)
    low, high = _percentiles(means, confidence)
    lead = values.shape[:-1]
    return Interval(flat.mean(dim=-1).reshape(lead), low.reshape(lead), high.reshape(lead))


def paired_test(
    scores_a: Tensor | Sequence[float],
    scores_b: Tensor | Sequence[float],
    method: str = "bootstrap",
    num_samples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> PairedTestResult:
    """Test whether system B's mean score differs from system A's on the same pairs (two-sided).

    Args:
        scores_a: per-pair scores of the baseline system (the pairs on the last axis).
        scores_b: per-pair scores of the other system on the same pairs in the same order. Leading axes
            broadcast: ``scores_a`` ``[N]`` against ``scores_b`` ``[K, N]`` tests K systems against one
            baseline with the same resamples.
        method: ``"bootstrap"`` (paired bootstrap resampling, Koehn 2004, the shifted two-sided p-value) or
            ``"randomization"`` (approximate randomisation, Riezler and Maxwell 2005); see the module docstring.
        num_samples: bootstrap resamples or randomisation shuffles (the interval of the difference always
            uses that many bootstrap resamples).
        seed: seeds the resampling and the shuffles (CPU generators: the same on any machine).
        confidence: coverage of the interval of the difference, in (0, 1).

    Raises ValueError for fewer than 2 pairs, and warns (UserWarning) for fewer than 10: the test is undefined,
    or coarse, on so few.

    >>> a = torch.tensor([0.91, 0.87, 0.95, 0.90, 0.86, 0.93, 0.89, 0.92, 0.88, 0.94])
    >>> result = paired_test(a, a + 0.01, num_samples=1000, seed=0)
    >>> round(float(result.delta), 4), float(result.p_value) < 0.01
    (0.01, True)
    >>> float(paired_test(a, a, method="randomization").p_value)   # identical systems
    1.0
    """
    if method not in METHODS:
        raise ValueError(
            f"method must be one of {METHODS} (paired bootstrap or approximate randomization); got {method!r}"
        )
    check_settings(confidence, num_samples, seed)
    diffs = _differences(scores_a, scores_b)
    flat = diffs.reshape(-1, diffs.shape[-1])
    delta = flat.mean(dim=-1)
    resampled = _resampled_means(flat, num_samples, seed)
    low, high = _percentiles(resampled, confidence)
    null = (
        (resampled - delta).abs()  # the resampled differences shifted to the null's mean, 0
        if method == "bootstrap"
        else _shuffled_means(flat, num_samples, seed).abs()
    )
    p_value = (_reaching(null, delta.abs(), flat) + 1).to(torch.float64) / (num_samples + 1)
    lead = diffs.shape[:-1]
    return PairedTestResult(
        delta.reshape(lead), low.reshape(lead), high.reshape(lead), p_value.reshape(lead), method, num_samples
    )


def _differences(scores_a: Tensor | Sequence[float], scores_b: Tensor | Sequence[float]) -> Tensor:
    """B's scores less A's, pair by pair, once both are checked to hold the same pairs."""
    a, b = _as_scores(scores_a, "scores_a"), _as_scores(scores_b, "scores_b")
    if a.shape[-1] != b.shape[-1]:
        raise ValueError(
            f"scores_a has {a.shape[-1]} pairs but scores_b has {b.shape[-1]}: a paired test needs both systems' "
            "scores of the same pairs, in the same order"
        )
    try:
        diffs = b - a
    except RuntimeError:
        raise ValueError(
            f"the leading axes of scores_a {tuple(a.shape)} and scores_b {tuple(b.shape)} do not broadcast"
        ) from None
    _check_pairs(diffs.shape[-1])
    return diffs


def _check_pairs(n: int) -> None:
    """A paired test needs 2 pairs or more (one pair has no variation to resample: every resample is that pair,
    and the p-value would look significant for any difference); below `FEW_PAIRS` it warns."""
    if n < 2:
        raise ArgumentValueError(
            f"a paired test needs the scores of at least 2 pairs, got {n}: one pair has no variation to resample, "
            "so no p-value can say whether the difference is real; score more lines",
            argument="scores_a",
            allowed="at least 2 pairs",
            value=n,
        )
    if n < FEW_PAIRS:
        _warn_few(n, "a paired test")


def _warn_few(n: int, what: str) -> None:
    """Warn that `what` rests on fewer than `FEW_PAIRS` pairs (on one pair an interval has no width at all)."""
    coarse = "has no width: one pair has no variation to resample" if n == 1 else f"resamples only {n} values"
    warn_user(f"{what} on only {n} pair(s) is coarse ({coarse}); use {FEW_PAIRS} pairs or more, preferably hundreds")


# -- the vectorised resampling ---------------------------------------------------------------------------------


def _as_scores(scores: Tensor | Sequence[float], name: str) -> Tensor:
    """`scores` as a float64 CPU tensor with at least one pair on its last axis, every value finite."""
    # a list of Python floats is float64 already: keep it so (torch would make it float32)
    values = scores.detach() if isinstance(scores, Tensor) else torch.as_tensor(scores, dtype=torch.float64)
    if values.dtype == torch.bool or values.is_complex():
        raise TypeError(f"{name} must hold real numbers, got {values.dtype}")
    values = values.to(device="cpu", dtype=torch.float64)
    if values.dim() == 0:
        raise ValueError(f"{name} must hold one score per pair (a 1-d tensor), got a single number")
    if values.shape[-1] == 0 or values.numel() == 0:
        raise ValueError(f"{name} is empty: intervals and tests need the scores of at least one pair")
    bad = ~torch.isfinite(values)
    if bool(bad.any()):
        first = int(torch.nonzero(bad.reshape(-1, values.shape[-1]).any(dim=0))[0])
        raise ValueError(
            f"{name} holds {int(bad.sum())} value(s) that are NaN or infinite (first at pair {first}); with "
            "idf=True, pairs whose tokens all occur in every reference score NaN (compute() warns about them): "
            "leave those pairs out of every system, e.g. keep = torch.isfinite(a) & torch.isfinite(b)"
        )
    return values


def _batches(num_samples: int, n: int) -> Iterator[tuple[int, int]]:
    """(start, stop) of the batches of resamples, each holding at most `_BATCH_BYTES` of indices and weights."""
    rows = max(1, _BATCH_BYTES // (16 * n))
    for start in range(0, num_samples, rows):
        yield start, min(start + rows, num_samples)


def _resampled_means(values: Tensor, num_samples: int, seed: int) -> Tensor:
    """The means of `values` ([m, n], pairs last) over `num_samples` resamples of the n pairs: [num_samples, m].

    Each batch of resamples is one [batch, n] draw of indices, turned into counts (how often each pair was
    drawn), so all m rows are resampled with the same pairs by one matrix product.
    """
    n = values.shape[-1]
    generator = torch.Generator(device="cpu").manual_seed(seed)
    out = torch.empty((num_samples, values.shape[0]), dtype=torch.float64)
    for start, stop in _batches(num_samples, n):
        indices = torch.randint(0, n, (stop - start, n), generator=generator)
        counts = torch.zeros((stop - start, n), dtype=torch.float64)
        counts.scatter_add_(1, indices, torch.ones((), dtype=torch.float64).expand(stop - start, n))
        out[start:stop] = counts @ values.T / n
    return out


def _shuffled_means(diffs: Tensor, num_samples: int, seed: int) -> Tensor:
    """Mean differences after swapping each pair's two systems with probability 1/2: [num_samples, m].

    A swap flips the sign of that pair's difference; each batch of shuffles is one [batch, n] draw of signs.
    """
    n = diffs.shape[-1]
    generator = torch.Generator(device="cpu").manual_seed(seed)
    out = torch.empty((num_samples, diffs.shape[0]), dtype=torch.float64)
    for start, stop in _batches(num_samples, n):
        bits = torch.randint(0, 2, (stop - start, n), generator=generator)
        signs = 1.0 - 2.0 * bits.to(torch.float64)
        out[start:stop] = signs @ diffs.T / n
    return out


def _reaching(null: Tensor, observed: Tensor, diffs: Tensor) -> Tensor:
    """How many of the null statistics ([num_samples, m]) reach the observed ones ([m]): at least as large, up
    to summation order (within `_TIE` of the largest |difference| of the m rows of `diffs`, [m, n])."""
    tolerance = _TIE * diffs.abs().amax(dim=-1)
    return (null >= observed - tolerance).sum(dim=0)


def _percentiles(samples: Tensor, confidence: float) -> tuple[Tensor, Tensor]:
    """The percentile interval of each column of `samples` ([num_samples, m]): sorted[k], sorted[-1 - k]."""
    num_samples = samples.shape[0]
    # the tiny nudge keeps e.g. 1000 * (1 - 0.95) / 2 = 24.999... from rounding down to 24
    k = min(math.floor(num_samples * (1.0 - confidence) / 2.0 + 1e-9), (num_samples - 1) // 2)
    ordered = torch.sort(samples, dim=0).values
    return ordered[k], ordered[num_samples - 1 - k]
