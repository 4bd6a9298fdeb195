"""Layer tuning on relative-ranking judgements (WMT's DARR: a reference and two candidates, one judged better).

Why a module of its own: WMT18 onwards judged many language pairs by relative ranking, not by a score per
segment, so there is no human column to correlate with; each layer is measured instead by WMT18's Kendall-like
tau, how often the metric ranks the two candidates as the humans did (`bertscore_tm.tuning.correlation.darr_tau`). The
scoring (one pass, every layer kept), the result (`bertscore_tm.tuning.layer_tuning.LayerTuning`, criterion ``"darr"``)
and the choice of the best layer are `bertscore_tm.tuning.layer_tuning`'s. Guide: docs/tuning.md.

>>> rankings = RelativeRankings.from_columns(
...     ["The cat sat down.", "The dog ran away.", "It was raining.", "Some birds are singing."],
...     ["The cat sat.", "A dog ran away.", "It rained.", "Birds are singing."],
...     ["A cat.", "Dog.", "Raining it was not.", "Birds sing a song loudly today."])
>>> result = tune_layers_on_rankings(rankings, "sentence-transformers/all-MiniLM-L6-v2", bootstrap=0)
>>> result.criterion, len(result.layers), result.figures(5).mean
('darr', 7, 1.0)
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from bertscore_tm.errors import ArgumentValueError, warn_user
from bertscore_tm.models.registry import LayerTable
from bertscore_tm.tuning.correlation import DarrBootstrap
from bertscore_tm.tuning.judgements import MIN_ROWS, RelativeRankings, read_relative_rankings
from bertscore_tm.tuning.layer_tuning import (
    SCORES,
    Figures,
    LayerResult,
    LayerScores,
    LayerTuning,
    best_layer_by,
    check_choices,
    checked,
    layer_to_test,
    score_all_layers,
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
    """`tune_layers_on_rankings` without the scoring: `scores` of ``rankings.as_pairs()`` (every better
    candidate, then every worse one) from `score_all_layers`. Arguments as `tune_layers_on_rankings`."""
    bootstrap, seed, confidence, alpha = check_choices(
        "darr", score, bootstrap, confidence, alpha, seed, default_layer, layer_table, criteria=("darr",)
    )
    checked(rankings, RelativeRankings, "rankings", "read_relative_rankings or RelativeRankings.from_columns")
    checked(scores, LayerScores, "scores", "score_all_layers")
    rankings, scores, dropped = _defined_rankings(rankings, scores)
    n = len(rankings)
    boot = DarrBootstrap(n, rankings.groups, max(bootstrap, 1), seed)
    layers = [
        _ranking_layer(boot, scores, layer, n, score if bootstrap else None, confidence)
        for layer in range(scores.depth + 1)
    ]
    best = best_layer_by(layers, "darr", score)
    default = layer_to_test(scores.model, default_layer, scores.depth, layer_table)
    test = None
    if bootstrap and default is not None:
        column = scores.of(score)
        a, b = (column[default, :n], column[default, n:]), (column[best, :n], column[best, n:])
        test = boot.paired_test(a, b, confidence, alpha)
    return LayerTuning(
        model=scores.model,
        hash_code=scores.hash_code,
        idf=scores.idf,
        criterion="darr",
        score=score,
        layers=layers,
        best_layer=best,
        default_layer=default,
        test=test,
        segments=n,
        groups=boot.index.sizes,
        left_out={},
        dropped=dropped,
        skipped=rankings.skipped,
        bootstrap=bootstrap,
        seed=seed,
        confidence=confidence,
        scores=scores,
    )


def _defined_rankings(rankings: RelativeRankings, scores: LayerScores) -> tuple[RelativeRankings, LayerScores, int]:
    """The judgements whose two candidates have every score at every layer defined (the others warned about)."""
    n = len(rankings)
    if scores.f1.shape[1] != 2 * n:
        raise ArgumentValueError(
            f"the scores hold {scores.f1.shape[1]} pairs for {n} judgements' {2 * n} candidates: score "
            "rankings.as_pairs()",
            argument="scores",
            allowed=f"{2 * n} pairs",
            value=scores.f1.shape[1],
            others=("rankings",),
        )
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
    """Refuse fewer than `MIN_ROWS` judgements, as `read_relative_rankings` does (a tau of one or two judgements
    says nothing about a layer)."""
    if n < MIN_ROWS:
        raise ArgumentValueError(
            f"{n} judgement(s){which}: layer tuning needs at least {MIN_ROWS}",
            argument="rankings",
            allowed=f"at least {MIN_ROWS} judgements",
            value=n,
        )


def _ranking_layer(
    boot: DarrBootstrap, scores: LayerScores, layer: int, n: int, ci_for: str | None, confidence: float
) -> LayerResult:
    """WMT18's tau of every score at one layer (better candidates are the first `n` pairs), with the interval
    from the shared resamples for the score `ci_for` (None: no intervals)."""
    figures: dict[str, dict[str, Figures]] = {}
    for name in SCORES:
        better, worse = scores.of(name)[layer, :n], scores.of(name)[layer, n:]
        estimate = boot.estimate(better, worse)
        ci = boot.interval(better, worse, confidence) if name == ci_for else None
        figures[name] = {"darr": Figures(estimate.mean, estimate.groups, ci)}
    return LayerResult(layer, figures)


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
    """`tune_layers` on relative-ranking judgements (WMT's DARR, `read_relative_rankings`): every layer's WMT18
    Kendall-like tau (`bertscore_tm.tuning.correlation.darr_tau`) of P, R and F1, per group and averaged, the best
    layer by the tau of `score` (the result's criterion is ``"darr"``), its bootstrap interval (judgements
    resampled within groups) and the paired test of the best layer against the default one.

    Each distinct text is embedded once, every layer kept; with `idf` the weights come from the judgements'
    references, one per judgement (each judgement's reference counted once, not once per candidate). Other
    arguments as `tune_layers`.
    """
    check_choices("darr", score, bootstrap, confidence, alpha, seed, default_layer, layer_table, progress, ("darr",))
    checked(rankings, RelativeRankings, "rankings", "read_relative_rankings or RelativeRankings.from_columns")
    _check_size(len(rankings))  # all before the model runs
    if idf:
        metric_kwargs.setdefault("idf_texts", rankings.references)
    scores = score_all_layers(rankings.as_pairs(), model, idf=idf, progress=progress, **metric_kwargs)
    return tune_rankings_from_scores(
        rankings, scores, score, bootstrap, seed, default_layer, confidence, alpha, layer_table
    )
