"""The scoring core: the Scorer (model, weights policy, baseline, hash code) and the greedy matching of
token vectors into precision, recall and F1.

Public names are imported on first use (`bertscore_tm.lazy`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bertscore_tm.lazy import exports

__all__ = [
    "HashSignature",
    "Scorer",
    "Scores",
    "build_scorer",
    "hash_code",
]

__getattr__ = exports(
    __name__,
    {
        "HashSignature": "hashcode",
        "hash_code": "hashcode",
        "Scorer": "scorer",
        "build_scorer": "scorer",
        "Scores": "results",
    },
)

if TYPE_CHECKING:
    from bertscore_tm.scoring.hashcode import HashSignature, hash_code
    from bertscore_tm.scoring.results import Scores
    from bertscore_tm.scoring.scorer import Scorer, build_scorer
