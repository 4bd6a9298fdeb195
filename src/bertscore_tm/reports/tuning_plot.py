"""A picture of a layer tuning: the correlation per layer with its interval band, each group's as a thin
line, the best and default layers marked; it shows how flat the curve is around the best layer. Needs
matplotlib (no pyplot, so no display)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bertscore_tm.tuning.layer_tuning import LayerTuning

#: The names the figures use for the correlations and the scores.
_METHOD_NAMES = {"pearson": "Pearson's r", "spearman": "Spearman's rho", "kendall": "Kendall's tau-b"}
_SCORE_NAMES = {"precision": "P", "recall": "R", "f1": "F1"}


def plot_layers(
    result: LayerTuning, path: str | os.PathLike[str], format: str | None = None, method: str | None = None
) -> None:
    """Draw `result`'s correlation per layer (`method`, default: its criterion) into `path`."""
    from matplotlib.figure import Figure

    method = method or result.criterion
    layers = [layer.layer for layer in result.layers]
    figures = [result.figures(k, method) for k in layers]
    figure = Figure(figsize=(7.0, 4.2), layout="constrained")
    axes = figure.add_subplot()
    for group in figures[0].groups:
        axes.plot(layers, [f.groups[group] for f in figures], linewidth=0.8, alpha=0.55, label=group)
    if all(f.ci is not None for f in figures):
        low, high = zip(*(f.ci for f in figures if f.ci is not None), strict=True)
        axes.fill_between(layers, low, high, color="C0", alpha=0.18, label=f"{result.confidence:.0%} interval")
    axes.plot(layers, [f.mean for f in figures], color="black", marker="o", linewidth=2, label="mean over groups")
    axes.axvline(result.best_layer, color="C2", linestyle="--", linewidth=1, label=f"best: {result.best_layer}")
    if result.default_layer is not None:
        axes.axvline(
            result.default_layer, color="C3", linestyle=":", linewidth=1, label=f"default: {result.default_layer}"
        )
    axes.set_xticks(layers)
    axes.set_xlabel("layer (0 = the embeddings)")
    axes.set_ylabel(f"{_METHOD_NAMES.get(method, method)} of {_SCORE_NAMES.get(result.score, result.score)}")
    axes.set_title(f"{result.model}\ncorrelation with human judgements, {result.segments} segments", fontsize=10)
    axes.grid(alpha=0.3)
    axes.legend(fontsize="small", ncols=2)
    figure.savefig(path, format=format, dpi=150)
