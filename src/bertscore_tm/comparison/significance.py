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
from typing import Any, NamedTuple

import torch
from torch import Tensor

from bertscore_tm.errors import ArgumentTypeError, ArgumentValueError, warn_user
from bertscore_tm.settings import rules
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


def check_settings(confidence: float = 0.95, num_samples: int = 1000, seed: int = 0) -> tuple[float, int, int]:
    """The settings of every interval and test, by the settings' rules (numpy numbers too): a confidence level in
    (0, 1), resamples from 1 to `MAX_RESAMPLES` (1,000,000) and a seed in ``[0, 2**64)``; an
    `ArgumentTypeError` or `ArgumentValueError` naming the argument otherwise. Returns them as Python numbers.

    >>> check_settings(0.95, 1000, 0)
    (0.95, 1000, 0)
    >>> check_settings(95)
    Traceback (most recent call last):
    ...
    bertscore_tm.errors.ArgumentValueError: confidence must be between 0 and 1 (exclusive), e.g. 0.95, got 95
    """
    rules.probability("confidence", confidence)
    RESAMPLES("num_samples", num_samples)
    rules.SEED("seed", seed)
    return float(confidence), int(num_samples), int(seed)


#: Resamples (or shuffles) an interval or a test draws: each takes memory, and more only narrows the p-value.
RESAMPLES = rules.integer(1, maximum=MAX_RESAMPLES, why=" (resamples: 1000 is usual)")


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
    confidence, num_samples, seed = check_settings(confidence, num_samples, seed)
    values = as_scores(scores, "scores")
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
    rules.choice(METHODS)("method", method)
    confidence, num_samples, seed = check_settings(confidence, num_samples, seed)
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
    a, b = as_scores(scores_a, "scores_a"), as_scores(scores_b, "scores_b")
    if a.shape[-1] != b.shape[-1]:
        raise ArgumentValueError(
            f"scores_a has {a.shape[-1]} pairs but scores_b has {b.shape[-1]}: a paired test needs both systems' "
            "scores of the same pairs, in the same order",
            argument="scores_b",
            allowed=f"{a.shape[-1]} pairs",
            value=b.shape[-1],
            others=("scores_a",),
        )
    try:
        diffs = b - a
    except RuntimeError:
        raise ArgumentValueError(
            f"the leading axes of scores_a {tuple(a.shape)} and scores_b {tuple(b.shape)} do not broadcast",
            argument="scores_b",
            allowed=f"leading axes that broadcast with {tuple(a.shape[:-1])}",
            value=tuple(b.shape),
            others=("scores_a",),
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


def as_scores(scores: object, name: str) -> Tensor:
    """`scores` (a tensor, a numpy array, or a list of numbers or of lists of them; pairs on the last axis) as
    a float64 CPU tensor, every value finite and at least one pair; an error naming `name` otherwise."""
    if isinstance(scores, (list, tuple)):
        try:
            values = torch.tensor(_numbers(scores, name), dtype=torch.float64)
        except ValueError:  # rows of several lengths
            raise ArgumentValueError(
                f"{name}'s rows have different lengths: give every leading index one score per pair",
                argument=name,
                allowed="rows of one length",
                value=[len(row) for row in scores],
            ) from None
    elif isinstance(scores, Tensor) or (type(scores).__module__ == "numpy" and hasattr(scores, "__array__")):
        values = torch.as_tensor(scores).detach()
    else:
        raise ArgumentTypeError(
            f"{name} must be one score per pair: a tensor, an array or a list of numbers, got {type(scores).__name__}",
            argument=name,
            expected="Tensor | Sequence[float]",
            value=scores,
        )
    if values.dtype == torch.bool or values.is_complex():
        raise ArgumentTypeError(
            f"{name} must hold real numbers, got {values.dtype}", argument=name, expected="float", value=values.dtype
        )
    values = values.to(device="cpu", dtype=torch.float64)
    if values.dim() == 0 or values.numel() == 0:
        said = (
            "must hold one score per pair (a 1-d tensor), got a single number"
            if values.dim() == 0
            else ("is empty: intervals and tests need the scores of at least one pair")
        )
        raise ArgumentValueError(f"{name} {said}", argument=name, allowed="a score per pair", value=tuple(values.shape))
    bad = ~torch.isfinite(values)
    if bool(bad.any()):
        first = int(torch.nonzero(bad.reshape(-1, values.shape[-1]).any(dim=0))[0])
        raise ArgumentValueError(
            f"{name} holds {int(bad.sum())} value(s) that are NaN or infinite (first at pair {first}); with "
            "idf=True, pairs whose tokens all occur in every reference score NaN (compute() warns about them): "
            "leave those pairs out of every system, e.g. keep = torch.isfinite(a) & torch.isfinite(b)",
            argument=name,
            allowed="finite scores",
            value=int(bad.sum()),
        )
    return values


def _numbers(items: list[object] | tuple[object, ...], name: str) -> list[Any]:
    """A list of numbers, or of lists of them (one per leading index), by the settings' rule for numbers."""
    if items and all(isinstance(row, (list, tuple)) for row in items):
        return [_numbers(row, name) for row in items]  # type: ignore[arg-type]
    return rules.real_numbers(name, items, finite=False)


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
