"""Each token's account of one pair: its best match, weight and contribution, adding up to P and R."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bertscore_tm.lazy import exports

__all__ = ["PairExplanation", "explain"]

__getattr__ = exports(__name__, {"explain": "explanation", "PairExplanation": "types"})

if TYPE_CHECKING:
    from bertscore_tm.explanations.explanation import explain
    from bertscore_tm.explanations.types import PairExplanation
