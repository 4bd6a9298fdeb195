"""One pair's token-by-token cosine similarity matrix as an annotated heatmap, from the metric's own
tokenizer and embedder, with P, R and F1 from `BERTScore.explain`, so exactly the scores `score` gives. Special
tokens are drawn: they weigh 0 but take part in the matching. Needs matplotlib (no pyplot, so no display)."""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from torch import Tensor

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from bertscore_tm.explanations.types import TokenExplanation
    from bertscore_tm.metric.bertscore import BERTScore


@dataclass(frozen=True)
class PairPlot:
    precision: float
    recall: float
    f1: float
    hash_code: str
    similarity: Tensor  # [candidate tokens, reference tokens], special tokens included, rescaled if asked
    cand_tokens: list[str]
    ref_tokens: list[str]
    cand_weights: tuple[float, ...] = ()
    ref_weights: tuple[float, ...] = ()


def _labels(metric: BERTScore, ids: Tensor) -> list[str]:
    tokenizer = metric.tokenizer
    special = set(tokenizer.all_special_ids)
    labels = []
    for token in ids.tolist():
        piece = "" if token in special else tokenizer.decode([int(token)]).strip()
        labels.append(piece if piece else tokenizer.convert_ids_to_tokens(int(token)))
    return labels


def similarity_matrix(metric: BERTScore, candidate: str, reference: str) -> tuple[Tensor, list[str], list[str]]:
    """Cosine similarity of every candidate token with every reference token at the metric's
    layer, special tokens included, with both sides' labels."""
    if metric.all_layers:
        raise ValueError("similarity_matrix needs a metric for one layer (all_layers=False)")
    c_ids, r_ids = metric.token_ids(candidate).long(), metric.token_ids(reference).long()
    vectors, starts = metric.embedder.embed([c_ids, r_ids])
    c_vec = vectors[int(starts[0]) : int(starts[0]) + len(c_ids)]
    r_vec = vectors[int(starts[1]) : int(starts[1]) + len(r_ids)]
    sim = (c_vec @ r_vec.T).float().cpu()
    return sim, _labels(metric, c_ids), _labels(metric, r_ids)


def plot_similarity(
    metric: BERTScore,
    candidate: str,
    reference: str,
    path: str | os.PathLike[str],
    format: str | None = None,
    idf_references: Sequence[str] | None = None,
) -> PairPlot:
    """Explain one pair with `metric` (its state left alone) and save its similarity heatmap to `path`."""
    why = metric.explain(candidate, reference, idf_references=idf_references)
    sim, c_labels, r_labels = similarity_matrix(metric, candidate, reference)
    baseline = metric.baseline  # [1, 3]: the layer's row when the metric rescales
    rescaled = baseline is not None
    if baseline is not None:
        b = float(baseline[0, 2])
        sim = (sim - b) / (1 - b)
    title = f"P = {why.precision:.4f}   R = {why.recall:.4f}   F1 = {why.f1:.4f}" + "   (rescaled)" * rescaled
    fig = draw_heatmap(
        sim,
        _weighed(c_labels, why.candidate_tokens, metric.idf),
        _weighed(r_labels, why.reference_tokens, metric.idf),
        f"{title}\n{metric.model_name}, layer {metric.num_layers}" + (", IDF weights" if metric.idf else ""),
        "cosine similarity" + (" (rescaled)" if rescaled else ""),
        best=[t.match for t in why.candidate_tokens],
        faint=[t.weight == 0 for t in why.candidate_tokens] + [t.weight == 0 for t in why.reference_tokens],
    )
    fig.savefig(Path(path), format=format, dpi=DPI, bbox_inches="tight", pad_inches=0.15)
    weights = [tuple(t.weight for t in tokens) for tokens in (why.candidate_tokens, why.reference_tokens)]
    return PairPlot(why.precision, why.recall, why.f1, metric.hash_code, sim, c_labels, r_labels, *weights)


def _weighed(labels: list[str], tokens: Sequence[TokenExplanation], idf: bool) -> list[str]:
    if not idf:
        return labels
    return [f"{label} ({t.weight:.2f})" for label, t in zip(labels, tokens, strict=True)]


#: Up to this many tokens a side, every cell shows its value (past it, one text per cell is unreadable and slow).
LABELLED_CELLS_MAX = 40
#: The figure's longest side in inches.
MAX_FIGURE_INCHES = 24.0
DPI = 100
#: Tick labels are at least this many points apart: past that, every k-th token is labelled.
_TICK_SPACING_PT = 9.0


def draw_heatmap(
    sim: Tensor,
    cand_labels: list[str],
    ref_labels: list[str],
    title: str,
    value_label: str,
    best: Sequence[int | None] | None = None,
    faint: Sequence[bool] | None = None,
) -> Figure:
    """The heatmap of `sim` as a Figure: small matrices get a value in every cell, large ones a bounded
    figure and thinned labels, so drawing stays fast. `best` outlines each row's best match; `faint` (candidate
    flags, then reference flags) greys the labels of tokens that weigh nothing."""
    from matplotlib.figure import Figure

    n_c, n_r = sim.shape
    labelled = max(n_c, n_r) <= LABELLED_CELLS_MAX
    cell = 0.62 if labelled else min(0.4, (MAX_FIGURE_INCHES - 2.6) / max(n_c, n_r))
    fig = Figure(figsize=(max(6.0, 2.6 + cell * n_r), max(4.5, 2.4 + cell * n_c)), layout="constrained")
    ax = fig.add_subplot()
    low = min(0.0, float(sim.min())) if sim.numel() else 0.0
    image = ax.imshow(
        sim.numpy(), cmap="Blues", vmin=low, vmax=1.0, aspect="equal", interpolation="nearest", rasterized=True
    )
    _tick_labels(ax, cand_labels, ref_labels, cell, labelled)
    ax.set_xlabel("Reference tokens", fontsize=12)
    ax.set_ylabel("Candidate tokens", fontsize=12)
    ax.spines[:].set_visible(False)
    if labelled:
        _cell_values(ax, sim, low, cell)
    if best is not None:
        cells = [(j, i) for i, j in enumerate(best) if j is not None]
        side = cell * 72 * (0.92 if labelled else 1.0)
        xs, ys = [j for j, _ in cells], [i for _, i in cells]
        ax.scatter(xs, ys, s=side * side, marker="s", facecolors="none", edgecolors="#f57c00")
    if faint is not None:
        _faint_labels(ax, faint[: len(cand_labels)], faint[len(cand_labels) :])
    ax.set_title(title, fontsize=12)
    fig.colorbar(image, ax=ax, fraction=0.035, pad=0.02).set_label(value_label)
    return fig


def _faint_labels(ax: Axes, cand: Sequence[bool], ref: Sequence[bool]) -> None:
    for ticks, labels, flags in (
        (ax.get_yticks(), ax.get_yticklabels(), cand),
        (ax.get_xticks(), ax.get_xticklabels(), ref),
    ):
        for tick, label in zip(ticks, labels, strict=True):
            if 0 <= round(tick) < len(flags) and flags[round(tick)]:
                label.set_color("#9e9e9e")


def _tick_labels(ax: Axes, cand_labels: list[str], ref_labels: list[str], cell: float, labelled: bool) -> None:
    """Every token's label where they fit, else every k-th; grid lines only where cells are large."""
    step = max(1, math.ceil(_TICK_SPACING_PT / (cell * 72)))
    font = 10 if step == 1 and cell >= 0.3 else max(5.0, min(10.0, 0.8 * step * cell * 72))
    xs, ys = range(0, len(ref_labels), step), range(0, len(cand_labels), step)
    ax.set_xticks(
        xs,
        labels=[ref_labels[j] for j in xs],
        rotation=45 if labelled else 90,
        ha="right",
        rotation_mode="anchor",
        fontsize=font,
    )
    ax.set_yticks(ys, labels=[cand_labels[i] for i in ys], fontsize=font)
    ax.tick_params(length=0)
    if labelled:
        ax.set_xticks([x - 0.5 for x in range(1, len(ref_labels))], minor=True)
        ax.set_yticks([y - 0.5 for y in range(1, len(cand_labels))], minor=True)
        ax.grid(which="minor", color="white", linewidth=0.6)
        ax.tick_params(which="minor", length=0)


def _cell_values(ax: Axes, sim: Tensor, low: float, cell: float) -> None:
    middle = (low + 1.0) / 2
    for i in range(sim.shape[0]):
        for j in range(sim.shape[1]):
            value = float(sim[i, j])
            ax.text(
                j, i, f"{value:.3f}", ha="center", va="center", fontsize=8, color="white" if value > middle else "black"
            )
