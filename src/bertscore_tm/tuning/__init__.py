"""Fitting the metric to data: the best layer against human judgements (scores or relative rankings), their
correlations, and new rescale baselines (public names imported on first use)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bertscore_tm.lazy import exports

__all__ = [
    "Judgements",
    "LayerTuning",
    "RelativeRankings",
    "read_judgements",
    "read_relative_rankings",
    "score_all_layers",
    "tune_from_scores",
    "tune_layers",
    "tune_layers_on_rankings",
]

__getattr__ = exports(
    __name__,
    {
        "LayerTuning": "layer_tuning",
        "score_all_layers": "layer_tuning",
        "tune_from_scores": "layer_tuning",
        "tune_layers": "layer_tuning",
        "tune_layers_on_rankings": "ranking_tuning",
        "Judgements": "judgements",
        "RelativeRankings": "judgements",
        "read_judgements": "judgements",
        "read_relative_rankings": "judgements",
    },
)

if TYPE_CHECKING:
    from bertscore_tm.tuning.judgements import Judgements, RelativeRankings, read_judgements, read_relative_rankings
    from bertscore_tm.tuning.layer_tuning import LayerTuning, score_all_layers, tune_from_scores, tune_layers
    from bertscore_tm.tuning.ranking_tuning import tune_layers_on_rankings
