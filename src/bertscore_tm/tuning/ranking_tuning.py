"""Layer tuning on relative rankings (WMT's DARR), which have no human score to correlate with: each layer is
measured by WMT18's Kendall-like tau (`correlation.darr_tau`) instead. Guide: docs/tuning.md."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from bertscore_tm.errors import ArgumentValueError, warn_user
from bertscore_tm.models.registry import LayerTable
from bertscore_tm.settings import rules
from bertscore_tm.tuning.correlation import DarrBootstrap, PairedTest
from bertscore_tm.tuning.judgements import MIN_ROWS, RelativeRankings, read_relative_rankings
from bertscore_tm.tuning.layer_tuning import (
    Figures,
    LayerScores,
    LayerTuning,
    check_choices,
    check_scored,
    score_all_layers,
    tuned,
)

__all__ = ["RelativeRankings", "read_relative_rankings", "tune_layers_on_rankings", "tune_rankings_from_scores"]


def tune_rankings_from_scores(
    rankings: RelativeRankings,
    scores: LayerScores,
    score: str = "f1",
    bootstrap: int = 1000,
    seed: int = 0,
    default_layer: int | None = None,
    confidence: float = 0.95,
    alpha: float = 0.05,
    layer_table: LayerTable = None,
) -> LayerTuning:
    """`tune_layers_on_rankings` on `scores` of ``rankings.as_pairs()`` from `score_all_layers`."""
    choices = check_choices(
        "darr", score, bootstrap, confidence, alpha, seed, default_layer, layer_table, criteria=("darr",)
    )
    rules.instance_of(rankings, RelativeRankings, "rankings", "read_relative_rankings or RelativeRankings.from_columns")
    rules.instance_of(scores, LayerScores, "scores", "score_all_layers")
    rankings, scores, dropped = _defined_rankings(rankings, scores)
    n = len(rankings)
    boot = DarrBootstrap(n, rankings.groups, max(choices.bootstrap, 1), choices.seed)

    def figures(column: np.ndarray, ci: bool) -> dict[str, Figures]:
        better, worse = column[:n], column[n:]  # the better candidates first (`as_pairs`)
        estimate = boot.estimate(better, worse)
        interval = boot.interval(better, worse, choices.confidence) if ci else None
        return {"darr": Figures(estimate.mean, estimate.groups, interval)}

    def test(a: np.ndarray, b: np.ndarray) -> PairedTest:
        return boot.paired_test((a[:n], a[n:]), (b[:n], b[n:]), choices.confidence, choices.alpha)

    return tuned(rankings, scores, choices, boot, figures, test, dropped)


def _defined_rankings(rankings: RelativeRankings, scores: LayerScores) -> tuple[RelativeRankings, LayerScores, int]:
    """The judgements whose two candidates have every score at every layer defined."""
    n = len(rankings)
    check_scored(scores, 2 * n, f"{n} judgements' {2 * n} candidates: score rankings.as_pairs()", "rankings")
    _check_size(n)
    defined = scores.defined()
    keep = np.flatnonzero(defined[:n] & defined[n:])
    if len(keep) == n:
        return rankings, scores, 0
    warn_user(
        f"{n - len(keep)} judgement(s) have a candidate with an undefined (NaN) BERTScore at some layer and are "
        "left out of every layer's figures"
    )
    _check_size(len(keep), " with defined scores")
    return rankings.select(keep.tolist()), scores.select(np.concatenate([keep, keep + n])), n - len(keep)


def _check_size(n: int, which: str = "") -> None:
    """Refuse fewer than `MIN_ROWS` judgements: a tau of one or two says nothing about a layer."""
    if n < MIN_ROWS:
        raise ArgumentValueError(
            f"{n} judgement(s){which}: layer tuning needs at least {MIN_ROWS}",
            argument="rankings",
            allowed=f"at least {MIN_ROWS} judgements",
            value=n,
        )


def tune_layers_on_rankings(
    rankings: RelativeRankings,
    model: str | os.PathLike[str],
    idf: bool = False,
    score: str = "f1",
    bootstrap: int = 1000,
    seed: int = 0,
    default_layer: int | None = None,
    confidence: float = 0.95,
    alpha: float = 0.05,
    progress: bool = False,
    layer_table: LayerTable = None,
    **metric_kwargs: Any,
) -> LayerTuning:
    """`tune_layers` on relative rankings, by WMT18's tau (criterion ``"darr"``). With `idf` each judgement's
    reference counts once, not once per candidate."""
    check_choices("darr", score, bootstrap, confidence, alpha, seed, default_layer, layer_table, progress, ("darr",))
    rules.instance_of(rankings, RelativeRankings, "rankings", "read_relative_rankings or RelativeRankings.from_columns")
    _check_size(len(rankings))  # all before the model runs
    if idf:
        metric_kwargs.setdefault("idf_texts", rankings.references)
    scores = score_all_layers(rankings.as_pairs(), model, idf=idf, progress=progress, **metric_kwargs)
    return tune_rankings_from_scores(
        rankings, scores, score, bootstrap, seed, default_layer, confidence, alpha, layer_table
    )
