"""The scoring core: the Scorer (model, weights policy, baseline, hash code) and the greedy matching of
token vectors into precision, recall and F1.

Public names are imported on first use (`bertscore_tm.lazy`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bertscore_tm.lazy import exports

__all__ = [
    "Scorer",
    "Scores",
    "ScoringSettings",
    "build_scorer",
]

__getattr__ = exports(
    __name__,
    {
        "Scorer": "scorer",
        "ScoringSettings": "scorer",
        "build_scorer": "scorer",
        "Scores": "results",
    },
)

if TYPE_CHECKING:
    from bertscore_tm.scoring.results import Scores
    from bertscore_tm.scoring.scorer import Scorer, ScoringSettings, build_scorer
