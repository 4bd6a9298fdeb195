"""Layer tuning: BERTScore's quality depends on the layer it matches, so every layer's scores from one pass are
correlated with human judgements and the best tested against the default (docs/tuning.md); the best can go
into a user layer table (`bertscore_tm.models.registry`)."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np

from bertscore_tm.errors import ArgumentValueError, JudgementsError, warn_user
from bertscore_tm.models.registry import LayerTable, add_to_layer_table, default_num_layers, is_known_model
from bertscore_tm.settings import rules
from bertscore_tm.settings.arguments import MAX_RESAMPLES
from bertscore_tm.tuning.correlation import METHODS, DarrBootstrap, GroupedBootstrap, GroupedCorrelation, PairedTest
from bertscore_tm.tuning.judgements import (
    MIN_ROWS,
    JudgementFileError,
    Judgements,
    RelativeRankings,
    check_variation,
    read_judgements,
)
from bertscore_tm.tuning.system_level import system_correlations

#: The scores correlated, in the order BERTScore returns them.
SCORES = ("precision", "recall", "f1")
__all__ = [
    "MIN_ROWS",
    "SCORES",
    "Figures",
    "JudgementFileError",
    "Judgements",
    "LayerResult",
    "LayerScores",
    "LayerTuning",
    "layer_scores",
    "read_judgements",
    "score_all_layers",
    "tune_from_scores",
    "tune_layers",
]
#: Metric arguments `tune_layers` sets itself.
_OWN_ARGUMENTS = frozenset(
    {"model_name_or_path", "num_layers", "all_layers", "reduction", "output", "verbose", "idf", "return_hash"}
)


@dataclass(frozen=True)
class LayerScores:
    """Per-pair P, R and F1 at every layer, each [layers + 1, pairs] float64, from one ``all_layers`` run."""

    precision: np.ndarray
    recall: np.ndarray
    f1: np.ndarray
    model: str
    hash_code: str
    idf: bool
    model_commit: str | None = None

    def of(self, score: str) -> np.ndarray:
        """The array of one score (``"precision"``, ``"recall"`` or ``"f1"``)."""
        return {"precision": self.precision, "recall": self.recall, "f1": self.f1}[score]

    @property
    def depth(self) -> int:
        """The model's number of layers L (rows 0, the embeddings, to L)."""
        return int(self.f1.shape[0]) - 1

    def defined(self) -> np.ndarray:
        """Per pair, whether its scores are finite at every layer."""
        return np.all([np.isfinite(self.of(name)).all(axis=0) for name in SCORES], axis=0)

    def select(self, indices: np.ndarray) -> LayerScores:
        p, r, f = (a[:, indices] for a in (self.precision, self.recall, self.f1))
        return LayerScores(p, r, f, self.model, self.hash_code, self.idf, self.model_commit)


def score_all_layers(
    rows: Judgements, model: str | os.PathLike[str], idf: bool = False, progress: bool = False, **metric_kwargs: Any
) -> LayerScores:
    """Score every pair at every layer in one pass; `metric_kwargs` go to `bertscore_tm.BERTScore`. With `idf` a
    reference judged with several systems counts each time, as in bert-score."""
    rules.instance_of(rows, Judgements, "rows", "read_judgements or Judgements.from_columns")
    rules.path()("model", model)
    rules.boolean("idf", idf)
    rules.boolean("progress", progress)
    clash = sorted(_OWN_ARGUMENTS & metric_kwargs.keys())
    if clash:
        raise ArgumentValueError(
            f"{', '.join(clash)} cannot be passed to layer tuning: it sets them itself (the model is `model`, "
            "every layer is scored)",
            argument=clash[0],
            allowed="metric arguments other than " + ", ".join(sorted(_OWN_ARGUMENTS)),
            value=metric_kwargs[clash[0]],
        )
    from bertscore_tm.metric.bertscore import BERTScore

    metric_kwargs.setdefault("sync_on_compute", False)  # this process's pairs, even inside a distributed job
    return layer_scores(BERTScore(model, all_layers=True, idf=idf, verbose=progress, **metric_kwargs), rows)


def layer_scores(metric: Any, rows: Judgements) -> LayerScores:
    """`score_all_layers` with a metric the caller built (``all_layers=True``, ``reduction="none"``)."""
    if not metric.all_layers or metric.reduction != "none":
        raise ArgumentValueError(
            "layer tuning needs a metric with all_layers=True and reduction='none'",
            argument="all_layers",
            allowed="True",
            value=metric.all_layers,
        )
    metric.reset()
    metric.update(rows.candidates, rows.references, context=rows.contexts)
    scores = metric.compute_scores()
    p, r, f = (t.detach().to("cpu").double().numpy() for t in scores.as_tuple())
    return LayerScores(p, r, f, metric.model_name, scores.hash_code, bool(metric.idf), metric.model_commit)


@dataclass(frozen=True)
class Figures:
    """One correlation of one score at one layer; `ci` only for the tuned score (`tune_from_scores` gives others)."""

    mean: float
    groups: dict[str, float]
    ci: tuple[float, float] | None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (NaN as None)."""
        ci = None if self.ci is None else [_finite(v) for v in self.ci]
        return {"mean": _finite(self.mean), "groups": {k: _finite(v) for k, v in self.groups.items()}, "ci": ci}


@dataclass(frozen=True)
class LayerResult:
    """Every figure of one layer, ``figures[score][method]``, and system-level Pearson where systems are named."""

    layer: int
    figures: dict[str, dict[str, Figures]]
    system: dict[str, GroupedCorrelation] | None = None


def _finite(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


@dataclass(frozen=True)
class LayerTuning:
    """The result of `tune_layers`; `test` is None without bootstrap or default layer, `dropped` counts pairs
    left out for an undefined score, `skipped` the bad lines the reader left out."""

    model: str
    hash_code: str
    idf: bool
    criterion: str
    score: str
    layers: list[LayerResult]
    best_layer: int
    default_layer: int | None
    test: PairedTest | None
    segments: int
    groups: dict[str, int]
    left_out: dict[str, int]
    dropped: int
    skipped: int
    bootstrap: int
    seed: int
    confidence: float
    scores: LayerScores = field(repr=False, compare=False)

    def figures(self, layer: int, method: str | None = None, score: str | None = None) -> Figures:
        """One layer's figures for `method` and `score` (default: the criterion and the tuned score)."""
        rules.integer(0, maximum=len(self.layers) - 1, why=" (a layer scored)")("layer", layer)
        rules.choice(SCORES, optional=True)("score", score)
        by_method = self.layers[layer].figures[score or self.score]
        rules.choice(tuple(by_method), optional=True)("method", method)
        return by_method[method or self.criterion]

    def to_dict(self, all_scores: bool = False) -> dict[str, Any]:
        """JSON-ready figures of the tuned score (all three with `all_scores`), NaN as None (docs/tuning.md)."""
        rules.boolean("all_scores", all_scores)
        layers = []
        for result in self.layers:
            entry: dict[str, Any] = {"layer": result.layer}
            entry.update({m: f.to_dict() for m, f in result.figures[self.score].items()})
            if result.system is not None:
                system = result.system[self.score]
                entry["system"] = {"pearson": Figures(system.mean, system.groups, None).to_dict()}
            if all_scores:
                entry["scores"] = {s: {m: f.to_dict() for m, f in by.items()} for s, by in result.figures.items()}
            layers.append(entry)
        return {
            "model": self.model,
            "hash": self.hash_code,
            "model_commit": self.scores.model_commit,
            "idf": self.idf,
            "score": self.score,
            "criterion": self.criterion,
            "best_layer": self.best_layer,
            "default_layer": self.default_layer,
            "test": None if self.test is None else _test_dict(self.test, self.best_layer, self.default_layer),
            "segments": self.segments,
            "groups": self.groups,
            "left_out": self.left_out,
            "dropped": self.dropped,
            "skipped": self.skipped,
            "bootstrap": self.bootstrap,
            "seed": self.seed,
            "confidence": self.confidence,
            "layers": layers,
        }

    def to_json(self, indent: int | None = 2, all_scores: bool = False) -> str:
        """`to_dict` as strict JSON (no NaN literals)."""
        rules.integer(0, optional=True, maximum=64)("indent", indent)
        return json.dumps(self.to_dict(all_scores), indent=indent, allow_nan=False, ensure_ascii=False)

    def layer_table_line(self) -> str:
        """The user layer table's entry for the best layer, ``"name": layer``."""
        return f"{json.dumps(self.model, ensure_ascii=False)}: {self.best_layer}"

    def save_to_layer_table(self, path: str | os.PathLike[str]) -> None:
        """Write the best layer into the user layer table at `path` (other entries kept)."""
        rules.path()("path", path)
        add_to_layer_table(path, self.model, self.best_layer)


def _test_dict(test: PairedTest, best: int, default: int | None) -> dict[str, Any]:
    return {
        "best": best,
        "default": default,
        "method": test.method,
        "difference": _finite(test.difference),
        "interval": [_finite(v) for v in test.interval],
        "p_value": test.p_value,
        "significant": test.significant,
        "alpha": test.alpha,
        "resamples": test.num_samples,
    }


@dataclass(frozen=True)
class Choices:
    """Every argument of a tuning but the judgements and scores, checked, the numbers as Python numbers."""

    criterion: str
    score: str
    bootstrap: int
    seed: int
    confidence: float
    alpha: float
    default_layer: int | None
    layer_table: LayerTable
    progress: bool


def check_choices(
    criterion: str,
    score: str,
    bootstrap: int,
    confidence: float,
    alpha: float,
    seed: int = 0,
    default_layer: int | None = None,
    layer_table: LayerTable = None,
    progress: bool = False,
    criteria: tuple[str, ...] = METHODS,
) -> Choices:
    """Every argument but the judgements and scores, checked before any work."""
    rules.choice(criteria)("criterion", criterion)
    rules.choice(SCORES)("score", score)
    rules.integer(0, maximum=MAX_RESAMPLES, why=" (0: no intervals and no test)")("bootstrap", bootstrap)
    rules.SEED("seed", seed)
    rules.integer(0, optional=True)("default_layer", default_layer)
    rules.probability("confidence", confidence)
    rules.probability("alpha", alpha)
    rules.path(optional=True)("layer_table", layer_table)
    rules.boolean("progress", progress)
    numbers = int(bootstrap), int(seed), float(confidence), float(alpha)
    return Choices(criterion, score, *numbers, default_layer, layer_table, progress)


def _defined_pairs(rows: Judgements, scores: LayerScores) -> tuple[Judgements, LayerScores, int]:
    """Only pairs defined at every layer (IDF can give NaN), so every layer is correlated on the same segments."""
    check_scored(scores, len(rows), f"{len(rows)} judgements: score these judgements", "rows")
    defined = scores.defined()
    if defined.all():
        return rows, scores, 0
    keep = np.flatnonzero(defined)
    bad = [rows.lines[i] if rows.lines else int(i) for i in np.flatnonzero(~defined)[:5]]
    warn_user(
        f"{int((~defined).sum())} judgement(s) have an undefined (NaN) BERTScore at some layer and are left out of "
        f"every correlation ({'line(s)' if rows.lines else 'index(es)'} {', '.join(map(str, bad))}"
        f"{', ...' if (~defined).sum() > 5 else ''})"
    )
    return rows.select(keep.tolist()), scores.select(keep), int((~defined).sum())


def check_scored(scores: LayerScores, pairs: int, judged: str, judgements: str) -> None:
    """Refuse `scores` of other than the `pairs` the `judgements` argument has (`judged` says which)."""
    if scores.f1.shape[1] != pairs:
        raise ArgumentValueError(
            f"the scores hold {scores.f1.shape[1]} pairs for {judged}",
            argument="scores",
            allowed=f"{pairs} pairs",
            value=scores.f1.shape[1],
            others=(judgements,),
        )


def _system_figures(rows: Judgements, scores: LayerScores) -> list[dict[str, GroupedCorrelation] | None]:
    """Per layer, the system-level correlation of each score; None without systems, or where no group names the
    3 systems a system-level correlation needs (with a warning)."""
    depth = scores.depth + 1
    if rows.systems is None:
        return [None] * depth
    systems: dict[str, set[str]] = {}
    for label, system in zip(rows.groups or ["all"] * len(rows), rows.systems, strict=True):
        systems.setdefault(label, set()).add(system)
    if max(len(names) for names in systems.values()) < MIN_ROWS:
        warn_user(f"no group has {MIN_ROWS} systems or more: the system-level correlation is left out")
        return [None] * depth
    columns = np.concatenate([scores.of(name) for name in SCORES])  # [3 (depth), pairs], score after score
    found = system_correlations(columns, rows.systems, rows.human, rows.groups)
    return [{name: found[k * depth + layer] for k, name in enumerate(SCORES)} for layer in range(depth)]


def layer_to_test(model: str, default_layer: int | None, depth: int, layer_table: LayerTable) -> int | None:
    """The layer to test the best against: `default_layer`, else the registry's, else None."""
    if default_layer is None:
        if not is_known_model(model, layer_table):
            return None
        default_layer = default_num_layers(model, layer_table)
    rules.integer(0, maximum=depth, why=" (a layer of the model)")("default_layer", default_layer)
    return int(default_layer)


def best_layer_by(layers: list[LayerResult], criterion: str, score: str) -> int:
    """The layer with the highest group-averaged `criterion` on `score` (the lowest such layer on a tie)."""
    means = np.array([result.figures[score][criterion].mean for result in layers])
    if np.isnan(means).all():
        raise JudgementsError(
            f"the {criterion} correlation of {score} is undefined at every layer: every layer scores the pairs "
            "alike (are the texts blank? a max_length, an ignore= rule or a prompt leaving them no token), so no "
            "layer can be chosen"
        )
    return int(np.nanargmax(means))


def tune_from_scores(
    rows: Judgements,
    scores: LayerScores,
    criterion: str = "pearson",
    score: str = "f1",
    bootstrap: int = 1000,
    seed: int = 0,
    default_layer: int | None = None,
    confidence: float = 0.95,
    alpha: float = 0.05,
    layer_table: LayerTable = None,
    progress: bool = False,
) -> LayerTuning:
    """`tune_layers` on `scores` from `score_all_layers`, so that scores made once can be analysed several ways."""
    choices = check_choices(criterion, score, bootstrap, confidence, alpha, seed, default_layer, layer_table, progress)
    rules.instance_of(rows, Judgements, "rows", "read_judgements or Judgements.from_columns")
    rules.instance_of(scores, LayerScores, "scores", "score_all_layers")
    rows, scores, dropped = _defined_pairs(rows, scores)
    check_variation(rows)
    # the resamples are drawn once and shared by every layer, score and correlation (and the paired test)
    boot = GroupedBootstrap(rows.human, rows.groups, max(choices.bootstrap, 1), choices.seed)

    def figures(column: np.ndarray, ci: bool) -> dict[str, Figures]:
        found = {}
        for method in METHODS:
            estimate = boot.estimate(column, method)
            interval = boot.interval(column, method, choices.confidence) if ci else None
            found[method] = Figures(estimate.mean, estimate.groups, interval)
        return found

    test = partial(boot.paired_test, method=criterion, confidence=choices.confidence, alpha=choices.alpha)
    return tuned(rows, scores, choices, boot, figures, test, dropped, _system_figures(rows, scores))


def tuned(
    rows: Judgements | RelativeRankings,
    scores: LayerScores,
    choices: Choices,
    boot: GroupedBootstrap | DarrBootstrap,
    figures: Callable[[np.ndarray, bool], dict[str, Figures]],
    test: Callable[[np.ndarray, np.ndarray], PairedTest],
    dropped: int,
    systems: list[dict[str, GroupedCorrelation] | None] | None = None,
) -> LayerTuning:
    """The result: each score's `figures(column, whether with an interval)` at every layer (an interval for the
    tuned score where `bootstrap` resamples), the best layer, and `test(default's scores, best's)` of it."""
    from tqdm.auto import tqdm

    default = layer_to_test(scores.model, choices.default_layer, scores.depth, choices.layer_table)
    score, bootstrap = choices.score, choices.bootstrap
    layers = [
        LayerResult(
            layer,
            {name: figures(scores.of(name)[layer], bootstrap > 0 and name == score) for name in SCORES},
            None if systems is None else systems[layer],
        )
        for layer in tqdm(
            range(scores.depth + 1), desc="correlating layers", unit="layer", disable=not choices.progress
        )
    ]
    best = best_layer_by(layers, choices.criterion, score)
    column = scores.of(score)
    return LayerTuning(
        model=scores.model,
        hash_code=scores.hash_code,
        idf=scores.idf,
        criterion=choices.criterion,
        score=score,
        layers=layers,
        best_layer=best,
        default_layer=default,
        test=None if not bootstrap or default is None else test(column[default], column[best]),
        segments=len(rows),
        groups=boot.index.sizes,
        left_out=dict(boot.index.left_out),
        dropped=dropped,
        skipped=rows.skipped,
        bootstrap=bootstrap,
        seed=choices.seed,
        confidence=choices.confidence,
        scores=scores,
    )


def tune_layers(
    rows: Judgements,
    model: str | os.PathLike[str],
    idf: bool = False,
    criterion: str = "pearson",
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
    """Correlate BERTScore at every layer of `model` with the human scores of `rows`, from one pass.

    The best layer has the highest `criterion` of `score`; `bootstrap` resamples (0: none) give intervals and
    the test against `default_layer` (default: the registry's). The test reuses the judgements that chose the
    best layer, which favours it: confirm a gain on held-out judgements. Options: docs/tuning.md.
    """
    check_choices(criterion, score, bootstrap, confidence, alpha, seed, default_layer, layer_table, progress)
    rules.instance_of(rows, Judgements, "rows", "read_judgements or Judgements.from_columns")
    check_variation(rows)  # all before the model runs
    scores = score_all_layers(rows, model, idf=idf, progress=progress, **metric_kwargs)
    return tune_from_scores(
        rows, scores, criterion, score, bootstrap, seed, default_layer, confidence, alpha, layer_table, progress
    )
