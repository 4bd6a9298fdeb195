"""The scoring core: the Scorer and the greedy matching that turns token vectors into P, R and F."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bertscore_tm.lazy import exports

__all__ = ["HashSignature", "Scorer", "Scores", "build_scorer", "hash_code"]

__getattr__ = exports(
    __name__,
    dict(HashSignature="hashcode", hash_code="hashcode", Scorer="scorer", build_scorer="scorer", Scores="results"),
)

if TYPE_CHECKING:
    from bertscore_tm.scoring.hashcode import HashSignature, hash_code
    from bertscore_tm.scoring.results import Scores
    from bertscore_tm.scoring.scorer import Scorer, build_scorer
