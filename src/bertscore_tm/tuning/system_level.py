"""System-level correlation as WMT reports it: each system's mean metric score against its human score, per
group and averaged over groups (systems, not segments: a mean per system first)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from bertscore_tm.tuning.correlation import Floats, GroupedCorrelation, finite_scores, grouped_correlation

__all__ = ["system_correlation", "system_correlations"]


class _Systems:
    """The (group, system) of every segment, in order of first appearance, and means over their segments."""

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
        """Per key, `human_systems[(group, system)]` or `[system]`, else its segments' mean human score."""
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
    """System-level Pearson's r per group of at least 3 systems, averaged; a system's human score is
    `human_systems[(group, system)]` or `[system]`, else its segments' mean `human`.

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
    """`system_correlation` of each row of `metrics` ([k, segments]), the systems found once for all."""
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
