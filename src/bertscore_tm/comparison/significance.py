"""Is system B better than A, or is the gap an accident of the test set? Intervals and paired tests resample the
per-pair scores from a seeded CPU generator, so a seed gives the same numbers anywhere (docs/significance.md)."""

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
#: Fewer pairs than this make a p-value coarse and an interval too narrow: a warning says so.
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
    """B against A (float64): `delta` is ``mean(b) - mean(a)``, `low` and `high` its interval, `p_value` two-sided."""

    delta: Tensor
    low: Tensor
    high: Tensor
    p_value: Tensor
    method: str
    num_samples: int


def check_settings(confidence: float = 0.95, num_samples: int = 1000, seed: int = 0) -> tuple[float, int, int]:
    """Checked before any resample is drawn; returned as Python numbers."""
    rules.probability("confidence", confidence)
    RESAMPLES("num_samples", num_samples)
    rules.SEED("seed", seed)
    return float(confidence), int(num_samples), int(seed)


#: Resamples (or shuffles) an interval or a test draws: each takes memory, and more only narrows the p-value.
RESAMPLES = rules.integer(1, maximum=MAX_RESAMPLES, why=" (resamples: 1000 is usual)")


def bootstrap_interval(
    scores: Tensor | Sequence[float], confidence: float = 0.95, num_samples: int = 1000, seed: int = 0
) -> Interval:
    """The mean of per-pair `scores` (pairs last) and its percentile bootstrap interval, per leading index.

    >>> f1 = torch.tensor([0.91, 0.87, 0.95, 0.90, 0.86, 0.93, 0.89, 0.92, 0.88, 0.94])
    >>> mean, low, high = bootstrap_interval(f1, confidence=0.95, num_samples=1000, seed=0)
    >>> [round(float(x), 4) for x in (mean, low, high)]
    [0.905, 0.885, 0.921]
    """
    confidence, num_samples, seed = check_settings(confidence, num_samples, seed)
    values = as_scores(scores, "scores")
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
    """Whether B's mean score differs from A's on the same pairs in the same order (two-sided, docs/significance.md).
    Leading axes broadcast: ``[N]`` against ``[K, N]`` tests K systems against one baseline on the same resamples.

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
        else _resampled_means(flat, num_samples, seed, shuffle=True).abs()
    )
    p_value = (_reaching(null, delta.abs(), flat) + 1).to(torch.float64) / (num_samples + 1)
    lead = diffs.shape[:-1]
    return PairedTestResult(
        delta.reshape(lead), low.reshape(lead), high.reshape(lead), p_value.reshape(lead), method, num_samples
    )


def _differences(scores_a: Tensor | Sequence[float], scores_b: Tensor | Sequence[float]) -> Tensor:
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
    n = diffs.shape[-1]
    if n < 2:  # every resample of one pair is that pair: any difference would look significant
        raise ArgumentValueError(
            f"a paired test needs the scores of at least 2 pairs, got {n}: one pair has no variation to resample, "
            "so no p-value can say whether the difference is real; score more lines",
            argument="scores_a",
            allowed="at least 2 pairs",
            value=n,
        )
    _warn_few(n, "a paired test")
    return diffs


def _warn_few(n: int, what: str) -> None:
    if n >= FEW_PAIRS:
        return
    coarse = "has no width: one pair has no variation to resample" if n == 1 else f"resamples only {n} values"
    warn_user(f"{what} on only {n} pair(s) is coarse ({coarse}); use {FEW_PAIRS} pairs or more, preferably hundreds")


def as_scores(scores: object, name: str) -> Tensor:
    """A tensor, an array or nested lists (pairs last) as a finite float64 CPU tensor."""
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
    if items and all(isinstance(row, (list, tuple)) for row in items):
        return [_numbers(row, name) for row in items]  # type: ignore[arg-type]
    return rules.real_numbers(name, items, finite=False)


def _batches(num_samples: int, n: int) -> Iterator[tuple[int, int]]:
    rows = max(1, _BATCH_BYTES // (16 * n))
    for start in range(0, num_samples, rows):
        yield start, min(start + rows, num_samples)


def _resampled_means(values: Tensor, num_samples: int, seed: int, shuffle: bool = False) -> Tensor:
    """[num_samples, m] means of `values` ([m, n]): each batch of resamples is one matrix of draw counts (or of
    swap signs with `shuffle`), so all m rows share the resamples in one product."""
    n = values.shape[-1]
    generator = torch.Generator(device="cpu").manual_seed(seed)
    out = torch.empty((num_samples, values.shape[0]), dtype=torch.float64)
    for start, stop in _batches(num_samples, n):
        if shuffle:
            bits = torch.randint(0, 2, (stop - start, n), generator=generator)
            weights = 1.0 - 2.0 * bits.to(torch.float64)
        else:
            indices = torch.randint(0, n, (stop - start, n), generator=generator)
            weights = torch.zeros((stop - start, n), dtype=torch.float64)
            weights.scatter_add_(1, indices, torch.ones((), dtype=torch.float64).expand(stop - start, n))
        out[start:stop] = weights @ values.T / n
    return out


def _reaching(null: Tensor, observed: Tensor, diffs: Tensor) -> Tensor:
    """How many null statistics reach the observed ones, up to summation order (`_TIE`)."""
    tolerance = _TIE * diffs.abs().amax(dim=-1)
    return (null >= observed - tolerance).sum(dim=0)


def _percentiles(samples: Tensor, confidence: float) -> tuple[Tensor, Tensor]:
    """The percentile interval of each column of `samples` ([num_samples, m]): sorted[k], sorted[-1 - k]."""
    num_samples = samples.shape[0]
    # the tiny nudge keeps e.g. 1000 * (1 - 0.95) / 2 = 24.999... from rounding down to 24
    k = min(math.floor(num_samples * (1.0 - confidence) / 2.0 + 1e-9), (num_samples - 1) // 2)
    ordered = torch.sort(samples, dim=0).values
    return ordered[k], ordered[num_samples - 1 - k]
