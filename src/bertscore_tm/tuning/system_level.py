"""System-level correlation: each system's mean metric score against its human score, as the WMT metrics tasks
report it (per group, such as the language pair, averaged over groups).

Why a module of its own: it works on systems, not segments (a mean per system first, then one correlation over
the systems of each group), and layer tuning needs it for every layer and score at once
(`system_correlations`); the segment-level statistics are `bertscore_tm.tuning.correlation`'s.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from bertscore_tm.tuning.correlation import Floats, GroupedCorrelation, finite_scores, grouped_correlation

__all__ = ["system_correlation", "system_correlations"]


class _Systems:
    """The (group, system) of every segment: each key's position in order of first appearance, its segment
    count, and the mean of any per-segment values over its segments."""

    def __init__(self, systems: Sequence[Any], groups: Sequence[Any] | None, n: int) -> None:
        names = [str(s) for s in systems]
        labels = ["all"] * n if groups is None else [str(g) for g in groups]
        if len(names) != n or len(labels) != n:
            raise ValueError(f"systems and groups need one label per segment ({n})")
        keys = list(zip(labels, names, strict=True))
        self.keys = list(dict.fromkeys(keys))
        position = {key: i for i, key in enumerate(self.keys)}
        self.at = np.asarray([position[key] for key in keys])
        self.counts = np.bincount(self.at, minlength=len(self.keys))

    def means(self, values: Floats) -> Floats:
        """Per key, the mean of `values` over its segments."""
        return np.bincount(self.at, weights=values, minlength=len(self.keys)) / self.counts

    def human(self, human: Floats | None, human_systems: Mapping[Any, float] | None) -> Floats:
        """Per key, the human score: `human_systems[(group, system)]` or `[system]`, else its segments' mean."""
        if human_systems is None:
            assert human is not None
            return self.means(human)
        scores = []
        for group, system in self.keys:
            value = human_systems.get((group, system), human_systems.get(system))
            if value is None:
                raise ValueError(f"human_systems has no score for system {system!r} (group {group!r})")
            scores.append(float(value))
        return np.asarray(scores)


def system_correlation(
    metric: ArrayLike,
    systems: Sequence[Any],
    human: ArrayLike | None = None,
    groups: Sequence[Any] | None = None,
    human_systems: Mapping[Any, float] | None = None,
) -> GroupedCorrelation:
    """System-level Pearson's r: each system's mean metric score against its human score, within each group
    (at least 3 systems), averaged over groups. The human score of a system is `human_systems[(group, system)]`
    or `human_systems[system]` where given, else the mean of its segments' `human` scores.

    >>> system_correlation([0.1, 0.3, 0.5, 0.6, 0.9, 0.7], ["a", "a", "b", "b", "c", "c"],
    ...                    human_systems={"a": 1.0, "b": 2.0, "c": 3.5}).groups
    {'all': 0.9778448696431339}
    """
    return system_correlations([finite_scores(metric, "metric")], systems, human, groups, human_systems)[0]


def system_correlations(
    metrics: ArrayLike,
    systems: Sequence[Any],
    human: ArrayLike | None = None,
    groups: Sequence[Any] | None = None,
    human_systems: Mapping[Any, float] | None = None,
) -> list[GroupedCorrelation]:
    """`system_correlation` of each row of `metrics` ([k, segments]), the systems and their human scores
    found once for all the rows (layer tuning correlates every layer's P, R and F1)."""
    rows = np.asarray(metrics, dtype=np.float64)
    if rows.ndim != 2:
        raise ValueError(f"metrics must be [k, segments] (a row of scores per metric), got shape {rows.shape}")
    for row in rows:
        finite_scores(row, "metric")
    if (human is None) == (human_systems is None):
        raise ValueError("give the human scores either per segment (human=) or per system (human_systems=)")
    y = None if human is None else finite_scores(human, "human")
    if y is not None and len(y) != rows.shape[1]:
        raise ValueError(f"metric has {rows.shape[1]} scores and human {len(y)}: one of each per segment")
    index = _Systems(systems, groups, rows.shape[1])
    human_means, labels = index.human(y, human_systems), [group for group, _ in index.keys]
    return [grouped_correlation(index.means(row), human_means, labels, "pearson") for row in rows]
