"""Correlations of bootstrap resamples (a resample: a row of draw counts per segment), the kernels behind
`bertscore_tm.tuning.correlation`. `GroupResamples` computes what many score columns share once; its shortcuts
are exact, so Spearman's and Kendall's figures are the same bits in any order."""

from __future__ import annotations

import math
from functools import cached_property
from typing import Any

import numpy as np
from numpy.typing import NDArray

Floats = NDArray[np.float64]
#: Entries of one block of the pair-sign matrix (Kendall).
BLOCK = 1 << 22
#: A group's human pair signs are made once and kept (4 bytes a pair) for groups of at most this many pairs.
CACHED_SIGNS = 1 << 20
#: Fewest blocks of rows of the symmetric pair-sign matrix: with k blocks, (1 + 1/k) / 2 of its products are taken.
_KENDALL_BLOCKS = 4
#: Resamples taken at a time by the rank kernels, so that their [rows, segments] arrays stay in cache.
_CHUNK_ROWS = 32
#: Whole numbers below this are exact in float32.
_FLOAT32_EXACT = 1 << 24


def is_constant(x: Floats, weights: Floats) -> NDArray[np.bool_]:
    """Per resample row of `weights` [B, n]: whether the segments it draws all have the same value of `x`."""
    drawn = weights > 0
    return np.where(drawn, x, np.inf).min(axis=1) == np.where(drawn, x, -np.inf).max(axis=1)


def tie_totals(x: Floats, weights: Floats) -> tuple[Floats, Floats, NDArray[np.intp], NDArray[np.intp]]:
    """Per resample, the weight below and in each tie group of `x` ([B, g]); the sort order, each one's group."""
    order = np.argsort(x, kind="stable")
    sorted_x = x[order]
    starts = np.flatnonzero(np.r_[True, sorted_x[1:] != sorted_x[:-1]])
    group_of = np.cumsum(np.r_[True, sorted_x[1:] != sorted_x[:-1]]) - 1
    cumulative = np.cumsum(weights[:, order], axis=1)
    ends = np.r_[starts[1:], len(x)] - 1
    upto = cumulative[:, ends]
    below = np.concatenate([np.zeros((len(weights), 1)), upto[:, :-1]], axis=1)
    return below, upto - below, order, group_of


def plain_pearson(x: Floats, y: Floats) -> float:
    """Pearson's r of the segments as they are, centred on the means first so that sums of squares do not
    cancel; NaN where either is constant."""
    if np.all(x == x[0]) or np.all(y == y[0]):
        return math.nan
    xc, yc = x - x.mean(), y - y.mean()
    with np.errstate(invalid="ignore", divide="ignore"):
        return float((xc * yc).sum() / np.sqrt((xc * xc).sum() * (yc * yc).sum()))


def weighted_average_ranks(x: Floats, weights: Floats) -> Floats:
    """Each segment's average rank in each resample ([B, n]): ``below + (in_group + 1) / 2``."""
    below, within, order, group_of = tie_totals(x, weights)
    ranks = np.empty_like(weights)
    ranks[:, order] = (below + (within + 1) / 2)[:, group_of]
    return ranks


def exact_counts(weights: Floats) -> NDArray[Any]:
    """`weights` in float32 (faster, and exact) where they are whole counts with row sums below 2**24."""
    whole = bool(np.all(weights == np.round(weights)))
    return (
        weights.astype(np.float32) if whole and float(np.abs(weights).sum(axis=1).max()) < _FLOAT32_EXACT else weights
    )


def kendall_numerator(
    x: Floats, y: Floats, weights: Floats, counts: NDArray[Any] | None = None, signs: NDArray[np.float32] | None = None
) -> Floats:
    """``C - D`` of each resample, a block of rows of the pair-sign matrix at a time; `counts` (`exact_counts`)
    and the human `signs` (`GroupResamples`') where the caller keeps them."""
    if len(weights) != 1 or not bool(np.all(weights == 1)):  # resamples (one row of ones: a plain count)
        counts = exact_counts(weights) if counts is None else counts
        return _resampled_kendall_numerator(x, y, weights, counts, signs)
    n = len(x)
    rows = max(1, BLOCK // max(n, len(weights)))
    numerator = 0
    for start in range(0, n, rows):  # each pair once, from its segment with the larger x: concordant or not
        part = slice(start, min(n, start + rows))
        larger = x[part, None] > x[None, :]
        above = signs[part] > 0 if signs is not None else y[part, None] > y[None, :]
        below = signs[part] < 0 if signs is not None else y[part, None] < y[None, :]
        numerator += int(np.count_nonzero(larger & above)) - int(np.count_nonzero(larger & below))
    return np.full(len(weights), float(numerator))


def _resampled_kendall_numerator(
    x: Floats, y: Floats, weights: Floats, counts: NDArray[Any], signs: NDArray[np.float32] | None
) -> Floats:
    """The pair-sign matrix is symmetric, so each block of rows meets only the columns from its first row on."""
    n = len(x)
    rows = max(1, min(-(-n // _KENDALL_BLOCKS), BLOCK // max(n, len(weights))))
    float32 = counts.dtype == np.float32 and float(np.abs(counts).sum(axis=1).max()) ** 2 < _FLOAT32_EXACT
    right = counts if float32 else weights
    numerator = np.zeros(len(weights))
    for start in range(0, n, rows):
        end = min(n, start + rows)
        # rows start:end and columns start: of the pair-sign matrix sign(dx) sign(dy) (float32, exact)
        dy = signs[start:end, start:] if signs is not None else np.sign(y[start:end, None] - y[None, start:])
        block = np.sign(x[start:end, None] - x[None, start:]).astype(np.float32) * dy.astype(np.float32, copy=False)
        products = counts[:, start:end] @ block.astype(counts.dtype, copy=False)
        if not float32:
            products = products.astype(np.float64)  # [B, n - start]
        within = np.einsum("bi,bi->b", products[:, : end - start], right[:, start:end])
        numerator += within / 2 + np.einsum("bi,bi->b", products[:, end - start :], right[:, end:])
    return numerator


class _Ties:
    """A column's sort order and its tie groups: `tied`, members' sorted positions; `firsts`, group starts."""

    def __init__(self, x: Floats) -> None:
        self.order = np.argsort(x, kind="stable")
        ordered = x[self.order]
        new = np.r_[True, ordered[1:] != ordered[:-1]]
        sizes = np.diff(np.r_[np.flatnonzero(new), len(x)])
        self.largest = int(sizes.max())
        several = sizes > 1
        self.tied = np.flatnonzero(np.repeat(several, sizes))
        self.members = self.order[self.tied]
        self.sizes = sizes[several]
        self.firsts = np.cumsum(self.sizes) - self.sizes
        self.group_of = np.repeat(np.arange(len(self.sizes)), self.sizes)


def _rank_variance(total: Floats, cubes: Floats) -> Floats:
    """``(T^3 - T - cubes) / 12``: the squared deviations of T draws' average ranks (exact, a multiple of 1/4)."""
    return np.asarray((total * total * total - total - cubes) / 12)


def _cubes(tied: Floats) -> Floats:
    """``sum(t^3 - t)`` of each row of tie group sizes."""
    return np.asarray(((tied * tied - 1) * tied).sum(axis=1))


class GroupResamples:
    """One group's resamples (`weights`: [B, m] counts) and `human` scores, with what every column correlated
    on them shares computed once (lazily, each method's human side)."""

    def __init__(self, weights: Floats, human: Floats) -> None:
        if not np.all((weights >= 0) & (weights == np.round(weights))):
            raise ValueError("resample weights must be whole counts of draws (>= 0)")
        self.weights = weights
        self.human = human
        self.total = weights.sum(axis=1)
        self.distinct = (weights > 0).sum(axis=1)
        self.single = self.distinct <= 1
        self.copy_ties = (weights * (weights - 1) / 2).sum(axis=1)
        self.counts = exact_counts(weights)
        self._human: dict[str, Any] = {}

    def _constant(self, x: Floats, ties: _Ties) -> NDArray[np.bool_]:
        """The resamples constant in `x`: of one segment, or of segments that all tie."""
        constant = self.single.copy()
        if ties.largest > 1:
            rows = np.flatnonzero((self.distinct <= ties.largest) & ~constant)
            constant[rows] = is_constant(x, self.weights[rows])
        return constant

    @cached_property
    def _copy_cubes(self) -> Floats:
        """`_cubes` of a column without ties: its tie groups are the copies of each segment."""
        return _cubes(self.weights)

    def _tie_draws(self, ties: _Ties) -> tuple[Floats, Floats]:
        """The draws of each member of the column's tie groups, and of each group."""
        drawn = self.weights[:, ties.members]
        return drawn, np.add.reduceat(drawn, ties.firsts, axis=1)

    def _human_side(self, method: str) -> Any:
        """What `method` needs of the human scores in every resample, computed on first use."""
        if method not in self._human:
            y, w = self.human, self.weights
            if method == "constant":
                self._human[method] = is_constant(y, w)
            elif method == "ties":  # the human tie groups: the draws below each and in each, [B, g]
                self._human[method] = tie_totals(y, w)
            elif method == "signs":  # sign(y_i - y_j) of every pair, worth keeping across resamples (not for one row)
                keep = len(w) > 1 and len(y) ** 2 <= CACHED_SIGNS
                self._human[method] = np.sign(y[:, None] - y[None, :]).astype(np.float32) if keep else None
            elif method == "spearman":  # the counts times the centred ranks, their sum with the counts, variance
                below, within, order, group_of = self._human_side("ties")
                centred = np.empty_like(w)
                centred[:, order] = (below + (within + 1) / 2)[:, group_of] - (self.total[:, None] + 1) / 2
                weighted_ranks = w * centred
                variance = _rank_variance(self.total, _cubes(within))
                self._human[method] = (weighted_ranks, (w * weighted_ranks).sum(axis=1), variance)
            else:  # kendall: the pairs tied in the human scores
                within = self._human_side("ties")[1]
                self._human[method] = (within * (within - 1) / 2).sum(axis=1)
        return self._human[method]

    @cached_property
    def _once(self) -> GroupResamples:
        """The segments as they are (every one drawn once), sharing this group's human signs."""
        once = GroupResamples(np.ones((1, len(self.human))), self.human)
        once._human["signs"] = self._human_side("signs")
        return once

    def plain(self, x: Floats, method: str) -> float:
        """`method` on the segments as they are: Pearson's two-pass definition (`plain_pearson`), or the
        resamples' kernels so that the human side is computed once."""
        if method == "pearson":
            return plain_pearson(x, self.human)
        return float(self._once.correlations(x[None, :], method)[0, 0])

    def correlations(self, columns: Floats, method: str) -> Floats:
        """`method` of each column ([k, m]) with the human scores per resample: [k, B], NaN where constant."""
        ties = [_Ties(x) for x in columns]
        if method == "pearson":
            values = self._pearson(columns)
        elif method == "spearman":
            values = np.stack([self._spearman(t) for t in ties])
        else:
            values = np.stack([self._kendall(x, t) for x, t in zip(columns, ties, strict=True)])
        for row, (x, tied) in enumerate(zip(columns, ties, strict=True)):
            values[row, self._constant(x, tied) | self._human_side("constant")] = np.nan
        return values

    def _pearson(self, columns: Floats) -> Floats:
        """Sums around the group's mean, close to each resample's, so sums of squares do not cancel."""
        w, total = self.weights, self.total
        yc = self.human - self.human.mean()  # einsum's loops: BLAS is no faster here, and waits on busy cores
        sy, syy = np.einsum("bi,i->b", w, yc), np.einsum("bi,i->b", w, yc * yc)
        values = np.empty((len(columns), len(w)))
        for row, x in enumerate(columns):
            xc = x - x.mean()
            sx, sxx, sxy = (np.einsum("bi,i->b", w, v) for v in (xc, xc * xc, xc * yc))
            with np.errstate(invalid="ignore", divide="ignore"):
                values[row] = (sxy - sx * sy / total) / np.sqrt((sxx - sx * sx / total) * (syy - sy * sy / total))
        return values

    def _spearman(self, ties: _Ties) -> Floats:
        """Pearson's r of average ranks by exact sums: covariance ``sum(g upto) - sum(w g) / 2``, corrected for
        ties (`_shared_ranks`), variances from tie group sizes (`_rank_variance`)."""
        weighted_ranks, human_sum, human_variance = self._human_side("spearman")
        covariance = np.empty(len(self.weights))
        upto_tied = np.empty((len(self.weights), len(ties.tied)))  # the running sums at tie groups' members
        for lo in range(0, len(covariance), _CHUNK_ROWS):
            rows = slice(lo, lo + _CHUNK_ROWS)
            upto = np.cumsum(self.weights[rows, ties.order], axis=1)
            covariance[rows] = np.einsum("bi,bi->b", weighted_ranks[rows, ties.order], upto) - human_sum[rows] / 2
            upto_tied[rows] = upto[:, ties.tied]
        cubes = self._copy_cubes
        if ties.largest > 1:
            drawn, within = self._tie_draws(ties)
            covariance += _shared_ranks(ties, drawn, upto_tied, weighted_ranks[:, ties.members])
            cubes = cubes + _cubes(within) - _cubes(drawn)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.asarray(covariance / np.sqrt(_rank_variance(self.total, cubes) * human_variance))

    def _tied_pairs(self, ties: _Ties) -> Floats:
        """Per resample, the pairs of draws tied in the column: copies of one segment, and pairs within a tie group."""
        if ties.largest == 1:
            return self.copy_ties
        drawn, within = self._tie_draws(ties)
        copies = (drawn * (drawn - 1) / 2).sum(axis=1)
        return np.asarray(self.copy_ties + (within * (within - 1) / 2).sum(axis=1) - copies)

    def _kendall(self, x: Floats, ties: _Ties) -> Floats:
        pairs = self.total * (self.total - 1) / 2
        with np.errstate(invalid="ignore", divide="ignore"):
            denominator = np.sqrt((pairs - self._tied_pairs(ties)) * (pairs - self._human_side("kendall")))
            return np.asarray(
                kendall_numerator(x, self.human, self.weights, self.counts, self._human_side("signs")) / denominator,
                dtype=np.float64,
            )


def _shared_ranks(ties: _Ties, w: Floats, upto: Floats, g: Floats) -> Floats:
    """The rank covariance's gain where tie group members share their average rank instead of each its own."""
    lasts = ties.firsts + ties.sizes - 1
    shared = (upto[:, ties.firsts] - w[:, ties.firsts] + upto[:, lasts]) / 2
    return np.asarray(np.einsum("bi,bi->b", g, shared[:, ties.group_of] - upto + w / 2))


def plain_correlation(x: Floats, y: Floats, method: str) -> float:
    """The correlation `method` of `x` with human `y` as they are (no resampling), NaN where either is constant."""
    if method == "pearson":
        return plain_pearson(x, y)
    return float(GroupResamples(np.ones((1, len(x))), y).correlations(x[None, :], method)[0, 0])
