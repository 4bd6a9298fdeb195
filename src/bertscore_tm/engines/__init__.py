"""Ways to score many texts with one Scorer: pairs, all pairs (N x M), MBR selection, and the functional API."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bertscore_tm.lazy import exports

__all__ = [
    "bert_score",
    "mbr_select",
    "pairwise_bert_score",
    "score",
]

__getattr__ = exports(
    __name__,
    {
        "bert_score": "functional",
        "score": "functional",
        "pairwise_bert_score": "pairwise",
        "mbr_select": "mbr",
    },
)

if TYPE_CHECKING:
    from bertscore_tm.engines.functional import bert_score, score
    from bertscore_tm.engines.mbr import mbr_select
    from bertscore_tm.engines.pairwise import pairwise_bert_score
