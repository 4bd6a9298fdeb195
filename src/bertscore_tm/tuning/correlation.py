"""Correlation of metric scores with human judgements, per group and averaged as WMT reports it, with bootstrap
intervals and paired tests (pure numpy, so any metric). Definitions: docs/tuning.md.

>>> human = [0.1, 0.4, 0.35, 0.8]
>>> metric = [0.2, 0.5, 0.4, 0.9]
>>> round(pearson(metric, human), 4), spearman(metric, human), kendall_tau_b(metric, human)
(0.9965, 1.0, 1.0)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

import numpy as np
from numpy.typing import ArrayLike, NDArray

from bertscore_tm.errors import warn_user
from bertscore_tm.settings import rules
from bertscore_tm.settings.arguments import MAX_RESAMPLES
from bertscore_tm.tuning.weighted_correlation import GroupResamples, plain_correlation, weighted_average_ranks

Method = Literal["pearson", "spearman", "kendall"]
METHODS: tuple[str, ...] = get_args(Method)
#: Fewer segments than this make a correlation meaningless (two points always lie on a line).
MIN_SEGMENTS = 3
#: Differences of averaged correlations within this count as no difference in the paired test.
_TIE = 1e-12
#: Resamples a bootstrap draws (as `bertscore_tm.comparison.significance.RESAMPLES`, which this folder cannot import).
_RESAMPLES = rules.integer(1, maximum=MAX_RESAMPLES, why=" (bootstrap resamples: 1000 is usual)")
_METHOD = rules.choice(METHODS)
Floats = NDArray[np.float64]


class CorrelationWarning(UserWarning):
    """A correlation that is undefined (NaN) or a group left out of an average, and why."""


def finite_scores(values: ArrayLike, name: str) -> Floats:
    """`values` as a finite float64 vector."""
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1:
        raise ValueError(f"{name} must be one score per segment (a 1-d sequence), got shape {array.shape}")
    bad = np.flatnonzero(~np.isfinite(array))
    if len(bad):
        raise ValueError(
            f"{name} has {len(bad)} value(s) that are not finite numbers (NaN or infinite), the first at index "
            f"{int(bad[0])}: leave those segments out first"
        )
    return array


def _pair(x: ArrayLike, y: ArrayLike, names: tuple[str, str] = ("x", "y")) -> tuple[Floats, Floats]:
    """Two finite vectors of the same length, at least `MIN_SEGMENTS` long."""
    a, b = finite_scores(x, names[0]), finite_scores(y, names[1])
    if len(a) != len(b):
        raise ValueError(f"{names[0]} has {len(a)} values and {names[1]} {len(b)}: they must pair up one to one")
    if len(a) < MIN_SEGMENTS:
        raise ValueError(f"a correlation needs at least {MIN_SEGMENTS} segments, got {len(a)}")
    return a, b


def _single(x: ArrayLike, y: ArrayLike, method: str) -> float:
    a, b = _pair(x, y)
    value = plain_correlation(a, b, method)
    for values, name in ((a, "x"), (b, "y")):
        if np.all(values == values[0]):
            warn_user(f"{method}: {name} is constant ({values[0]!r}), so the correlation is NaN", CorrelationWarning)
    return value


def pearson(x: ArrayLike, y: ArrayLike) -> float:
    """Pearson's r of two score vectors (NaN, with a `CorrelationWarning`, if either is constant)."""
    return _single(x, y, "pearson")


def spearman(x: ArrayLike, y: ArrayLike) -> float:
    """Spearman's rho: Pearson's r of the average ranks (ties share their mean rank)."""
    return _single(x, y, "spearman")


def kendall_tau_b(x: ArrayLike, y: ArrayLike) -> float:
    """Kendall's tau-b, which corrects for ties in either vector."""
    return _single(x, y, "kendall")


def correlate(x: ArrayLike, y: ArrayLike, method: str = "pearson") -> float:
    """The correlation named by `method` (``"pearson"``, ``"spearman"`` or ``"kendall"``, tau-b)."""
    _METHOD("method", method)
    return _single(x, y, method)


def average_ranks(values: ArrayLike) -> Floats:
    """Ranks from 1 in ascending order, tied values sharing the mean of the ranks they span."""
    array = finite_scores(values, "values")
    return weighted_average_ranks(array, np.ones((1, len(array))))[0]


@dataclass(frozen=True)
class GroupedCorrelation:
    """One correlation per group and their unweighted mean (NaN if any group's is NaN, since a mean over the
    others would not compare); `left_out` holds the groups too small to count."""

    method: str
    mean: float
    groups: dict[str, float]
    sizes: dict[str, int]
    left_out: dict[str, int]


class _Groups:
    """Segment positions per group label (`groups` None: one group, ``"all"``), small groups left out."""

    def __init__(self, groups: Sequence[Any] | None, n: int, minimum: int = MIN_SEGMENTS) -> None:
        if n < minimum:
            raise ValueError(f"a correlation needs at least {minimum} segments in all, got {n}")
        labels = ["all"] * n if groups is None else [str(g) for g in groups]
        if len(labels) != n:
            raise ValueError(f"groups has {len(labels)} labels for {n} segments: give one group label per segment")
        members: dict[str, list[int]] = {}
        for i, label in enumerate(labels):
            members.setdefault(label, []).append(i)
        self.members = {k: np.asarray(v) for k, v in members.items() if len(v) >= minimum}
        self.left_out = {k: len(v) for k, v in members.items() if len(v) < minimum}
        if self.left_out:
            shown = ", ".join(f"{k!r} ({v})" for k, v in list(self.left_out.items())[:5])
            warn_user(
                f"{len(self.left_out)} group(s) have fewer than {minimum} segments and are left out of the "
                f"average: {shown}{', ...' if len(self.left_out) > 5 else ''}",
                CorrelationWarning,
            )
        if not self.members:
            raise ValueError(f"no group has at least {minimum} segments, so no correlation can be computed")

    @property
    def sizes(self) -> dict[str, int]:
        return {k: len(v) for k, v in self.members.items()}


def _group_values(
    metric: Floats, human: Floats, groups: _Groups, method: str, plain: Mapping[str, GroupResamples] | None = None
) -> dict[str, float]:
    """Each group's correlation (by `plain[group]` where given, which computes its human side once)."""
    values = {}
    for name, idx in groups.members.items():
        x, y = metric[idx], human[idx]
        values[name] = plain_correlation(x, y, method) if plain is None else plain[name].plain(x, method)
        for array, what in ((x, "metric"), (y, "human")):
            if np.all(array == array[0]):
                warn_user(
                    f"group {name!r}: the {what} scores are constant ({array[0]!r}), so its {method} correlation "
                    "is NaN (and so is the mean over groups)",
                    CorrelationWarning,
                )
    return values


def _grouped(values: dict[str, float], groups: _Groups, method: str) -> GroupedCorrelation:
    mean = float(np.mean(list(values.values())))
    return GroupedCorrelation(method, mean, values, groups.sizes, dict(groups.left_out))


def grouped_correlation(
    metric: ArrayLike, human: ArrayLike, groups: Sequence[Any] | None = None, method: str = "pearson"
) -> GroupedCorrelation:
    """The correlation of `metric` with `human` within each group (a label per segment; None: one group).

    >>> result = grouped_correlation([1, 2, 3, 4, 3, 1], [1, 2, 4, 1, 2, 3], ["a", "a", "a", "b", "b", "b"])
    >>> {name: round(r, 4) for name, r in result.groups.items()}, result.mean
    ({'a': 0.982, 'b': -0.982}, 0.0)
    """
    _METHOD("method", method)
    x, y = _pair(metric, human, ("metric", "human"))
    index = _Groups(groups, len(x))
    return _grouped(_group_values(x, y, index, method), index, method)


@dataclass(frozen=True)
class PairedTest:
    """B against A on the same resamples: `p_value` is one-sided (B no better than A); `num_samples` counts the
    resamples where both correlations are defined."""

    method: str
    estimate_a: float
    estimate_b: float
    difference: float
    interval: tuple[float, float]
    p_value: float
    significant: bool
    alpha: float
    num_samples: int


def _defined(statistics: Floats, what: str) -> Floats:
    """The finite resample statistics (e.g. all copies of one segment leave a correlation undefined)."""
    finite = statistics[np.isfinite(statistics)]
    if len(finite) < len(statistics):
        warn_user(
            f"{len(statistics) - len(finite)} of {len(statistics)} bootstrap resamples leave {what} undefined (a "
            "group's resample with constant metric or human scores, e.g. copies of one segment); they are left out",
            CorrelationWarning,
        )
    return finite


def percentile_interval(statistics: ArrayLike, confidence: float = 0.95) -> tuple[float, float]:
    """The percentile bootstrap interval of resample `statistics` (the NaN ones left out, with a warning)."""
    rules.probability("confidence", confidence)
    values = np.sort(_defined(np.asarray(statistics, dtype=np.float64).ravel(), "the statistic"))
    if not len(values):
        return math.nan, math.nan
    # as `bertscore_tm.comparison.significance`'s (torch) intervals; 1 - 0.9 is 0.0999...: 50 of 1000, not 49
    cut = min(math.floor(len(values) * (1 - confidence) / 2 + 1e-9), (len(values) - 1) // 2)
    return float(values[cut]), float(values[len(values) - 1 - cut])


def _resample_counts(rng: np.random.Generator, size: int, num_samples: int) -> Floats:
    """Draw counts per segment and resample; counting uniform draws is faster than `Generator.multinomial`."""
    draws = rng.integers(0, size, size=(num_samples, size))
    draws += np.arange(num_samples)[:, None] * size  # each resample's draws counted in its own row
    return np.bincount(draws.ravel(), minlength=num_samples * size).reshape(num_samples, size).astype(np.float64)


class _GroupResampling:
    """Resamples of the items (segments or judgements) within their groups, drawn once from `seed`."""

    def __init__(
        self, n: int, groups: Sequence[Any] | None, num_samples: int, seed: int | np.random.Generator, minimum: int
    ) -> None:
        _RESAMPLES("num_samples", num_samples)
        self.index = _Groups(groups, n, minimum)
        self.num_samples = int(num_samples)
        rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
        #: Per group, [num_samples, group size]: how often each item is drawn in each resample (groups in order).
        self.weights = {
            name: _resample_counts(rng, len(idx), self.num_samples) for name, idx in self.index.members.items()
        }


class GroupedBootstrap(_GroupResampling):
    """Resamples of the segments within their groups, drawn once from `seed` and shared by every score column,
    so intervals and paired tests of different columns see the same resamples.

    >>> human = [0.1, 0.4, 0.35, 0.8, 0.5, 0.2]
    >>> boot = GroupedBootstrap(human, num_samples=200, seed=1)
    >>> boot.estimate([0.2, 0.5, 0.4, 0.9, 0.45, 0.1], "spearman").mean
    0.8857142857142857
    >>> low, high = boot.interval([0.2, 0.5, 0.4, 0.9, 0.45, 0.1], "spearman")
    >>> bool(low <= 0.8857 <= high)
    True
    """

    def __init__(
        self,
        human: ArrayLike,
        groups: Sequence[Any] | None = None,
        num_samples: int = 1000,
        seed: int | np.random.Generator = 0,
    ) -> None:
        self.human = finite_scores(human, "human")
        super().__init__(len(self.human), groups, num_samples, seed, MIN_SEGMENTS)
        #: Per group, its resamples with what every column correlated on them shares (computed once).
        self.groups = {
            name: GroupResamples(self.weights[name], self.human[idx]) for name, idx in self.index.members.items()
        }

    def _metric(self, metric: ArrayLike, method: str) -> Floats:
        _METHOD("method", method)
        x = finite_scores(metric, "metric")
        if len(x) != len(self.human):
            raise ValueError(f"metric has {len(x)} scores for {len(self.human)} human judgements")
        return x

    def estimate(self, metric: ArrayLike, method: str = "pearson") -> GroupedCorrelation:
        """The correlation on all the segments, per group and averaged (no resampling)."""
        x = self._metric(metric, method)
        return _grouped(_group_values(x, self.human, self.index, method, self.groups), self.index, method)

    def statistics(self, metric: ArrayLike, method: str = "pearson") -> Floats:
        """The group-averaged correlation of each resample ([num_samples]; NaN where a group's is undefined)."""
        return self.statistics_of(self._metric(metric, method)[None, :], method)[0]

    def statistics_of(self, columns: ArrayLike, method: str = "pearson") -> Floats:
        """`statistics` of several score columns at once ([k, segments] -> [k, num_samples])."""
        _METHOD("method", method)
        array = np.asarray(columns, dtype=np.float64)
        if array.ndim != 2 or array.shape[1] != len(self.human):
            raise ValueError(f"columns must be [k, {len(self.human)}] (a row of scores per column), got {array.shape}")
        for row in array:
            finite_scores(row, "metric")
        total = np.zeros((len(array), self.num_samples))
        for name, idx in self.index.members.items():
            total += self.groups[name].correlations(array[:, idx], method)
        return total / len(self.index.members)

    def interval(self, metric: ArrayLike, method: str = "pearson", confidence: float = 0.95) -> tuple[float, float]:
        """The percentile bootstrap interval of the group-averaged correlation."""
        return percentile_interval(self.statistics(metric, method), confidence)

    def paired_test(
        self,
        metric_a: ArrayLike,
        metric_b: ArrayLike,
        method: str = "pearson",
        confidence: float = 0.95,
        alpha: float = 0.05,
    ) -> PairedTest:
        """Whether column B correlates better than column A, on the same resamples. Choosing B as the best of
        many columns on these same segments favours it: read a small p-value as "B is not worse"."""
        rules.probability("confidence", confidence)
        a, b = self.estimate(metric_a, method).mean, self.estimate(metric_b, method).mean
        both = self.statistics_of(np.stack([self._metric(metric_a, method), self._metric(metric_b, method)]), method)
        return _paired_test(method, a, b, both[1] - both[0], confidence, alpha)


def _paired_test(method: str, a: float, b: float, differences: Floats, confidence: float, alpha: float) -> PairedTest:
    """The test of B against A from their estimates and the resamples' differences (B minus A)."""
    defined = _defined(differences, "the difference")
    p_value = (1 + int(np.sum(defined <= _TIE))) / (len(defined) + 1)
    return PairedTest(
        method=method,
        estimate_a=a,
        estimate_b=b,
        difference=b - a,
        interval=percentile_interval(defined, confidence),
        p_value=p_value,
        significant=p_value < alpha,
        alpha=alpha,
        num_samples=len(defined),
    )


def paired_bootstrap_test(
    metric_a: ArrayLike,
    metric_b: ArrayLike,
    human: ArrayLike,
    groups: Sequence[Any] | None = None,
    method: str = "pearson",
    num_samples: int = 1000,
    seed: int | np.random.Generator = 0,
    confidence: float = 0.95,
    alpha: float = 0.05,
) -> PairedTest:
    """Paired bootstrap test of `metric_b` against `metric_a` (`GroupedBootstrap.paired_test`)."""
    _METHOD("method", method)
    return GroupedBootstrap(human, groups, num_samples, seed).paired_test(metric_a, metric_b, method, confidence, alpha)


def darr_tau(better: ArrayLike, worse: ArrayLike, groups: Sequence[Any] | None = None) -> GroupedCorrelation:
    """WMT18's Kendall-like tau on relative rankings (DARR), per group and averaged: `better[i]` and `worse[i]`
    score the candidates humans judged better and worse; a metric tie counts as discordant.

    >>> darr_tau([0.9, 0.8, 0.5, 0.6], [0.7, 0.8, 0.6, 0.1]).mean   # 2 concordant, a tie and 1 discordant
    0.0
    """
    signs = _darr_signs(better, worse)
    return _darr_grouped(signs, _Groups(groups, len(signs), minimum=1))


def _darr_grouped(signs: Floats, index: _Groups) -> GroupedCorrelation:
    """Each group's tau (the mean of its judgements' signs) and their mean."""
    return _grouped({name: float(np.mean(signs[idx])) for name, idx in index.members.items()}, index, "darr")


def _darr_signs(better: ArrayLike, worse: ArrayLike) -> Floats:
    """+1 for a concordant judgement, -1 for a discordant one (a metric tie included)."""
    b, w = finite_scores(better, "better"), finite_scores(worse, "worse")
    if len(b) != len(w):
        raise ValueError(f"better has {len(b)} scores and worse {len(w)}: one of each per judgement")
    return np.where(b > w, 1.0, -1.0)


class DarrBootstrap(_GroupResampling):
    """`GroupedBootstrap` for `darr_tau`: resamples of the judgements within their groups."""

    def __init__(
        self, n: int, groups: Sequence[Any] | None = None, num_samples: int = 1000, seed: int | np.random.Generator = 0
    ) -> None:
        super().__init__(n, groups, num_samples, seed, minimum=1)
        self.size = n

    def _signs(self, better: ArrayLike, worse: ArrayLike) -> Floats:
        signs = _darr_signs(better, worse)
        if len(signs) != self.size:
            raise ValueError(f"got the scores of {len(signs)} judgements for {self.size} judgements")
        return signs

    def estimate(self, better: ArrayLike, worse: ArrayLike) -> GroupedCorrelation:
        """The tau on all the judgements, per group and averaged (no resampling)."""
        return _darr_grouped(self._signs(better, worse), self.index)

    def statistics(self, better: ArrayLike, worse: ArrayLike) -> Floats:
        """The group-averaged tau of each resample ([num_samples])."""
        signs = self._signs(better, worse)
        total = np.zeros(self.num_samples)
        for name, idx in self.index.members.items():
            total += self.weights[name] @ signs[idx] / len(idx)
        return total / len(self.index.members)

    def interval(self, better: ArrayLike, worse: ArrayLike, confidence: float = 0.95) -> tuple[float, float]:
        """The percentile bootstrap interval of the group-averaged tau."""
        return percentile_interval(self.statistics(better, worse), confidence)

    def paired_test(
        self,
        columns_a: tuple[ArrayLike, ArrayLike],
        columns_b: tuple[ArrayLike, ArrayLike],
        confidence: float = 0.95,
        alpha: float = 0.05,
    ) -> PairedTest:
        """Whether scores B rank the judgements better than scores A (as `GroupedBootstrap.paired_test`)."""
        rules.probability("confidence", confidence)
        a, b = self.estimate(*columns_a).mean, self.estimate(*columns_b).mean
        differences = self.statistics(*columns_b) - self.statistics(*columns_a)
        return _paired_test("darr", a, b, differences, confidence, alpha)
