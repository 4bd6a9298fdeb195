"""Plotting one pair: the token-by-token cosine similarity matrix as an annotated heatmap.

The matrix comes from the metric's own tokenizer and embedder (normalised token vectors, so a dot product is
the cosine similarity BERTScore matches on); P, R and F1 in the title come from the metric itself, so they are
exactly the scores `score` gives. As in bert-score's `plot_example`, the special tokens ([CLS], [SEP], <s>,
...) are left out of the picture (they still take part in the matching), and with rescaling every cell is
rescaled with the F baseline of the layer. Long pairs stay quick to draw: past 40 tokens a side the cells carry
no values, the figure is bounded and the tick labels thinned. Needs matplotlib; pyplot is not used, so no
display is needed.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from torch import Tensor

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from bertscore_tm.metric import BERTScore


@dataclass(frozen=True)
class PairPlot:
    """What `plot_similarity` drew: the scores of the pair and the matrix shown."""

    precision: float
    recall: float
    f1: float
    hash_code: str
    similarity: Tensor  # [candidate tokens, reference tokens], special tokens left out, rescaled if asked
    cand_tokens: list[str]
    ref_tokens: list[str]


def _token_ids(metric: BERTScore, text: str) -> Tensor:
    return metric.token_ids(text).long()


def _labels(metric: BERTScore, ids: Tensor) -> tuple[list[int], list[str]]:
    """Positions of the ordinary (non-special) tokens and their decoded word pieces."""
    tokenizer = metric.tokenizer
    special = set(tokenizer.all_special_ids)
    keep = [i for i, t in enumerate(ids.tolist()) if t not in special]
    labels = []
    for i in keep:
        piece = tokenizer.decode([int(ids[i])]).strip()
        labels.append(piece if piece else tokenizer.convert_ids_to_tokens(int(ids[i])))
    return keep, labels


def similarity_matrix(metric: BERTScore, candidate: str, reference: str) -> tuple[Tensor, list[str], list[str]]:
    """Cosine similarity of every candidate token with every reference token at the metric's layer:
    ([candidate tokens, reference tokens] float32 on the CPU, candidate labels, reference labels), special
    tokens left out."""
    if metric.all_layers:
        raise ValueError("similarity_matrix needs a metric for one layer (all_layers=False)")
    c_ids, r_ids = _token_ids(metric, candidate), _token_ids(metric, reference)
    vectors, starts = metric.embedder.embed([c_ids, r_ids])
    c_vec = vectors[int(starts[0]) : int(starts[0]) + len(c_ids)]
    r_vec = vectors[int(starts[1]) : int(starts[1]) + len(r_ids)]
    sim = (c_vec @ r_vec.T).float().cpu()
    c_keep, c_labels = _labels(metric, c_ids)
    r_keep, r_labels = _labels(metric, r_ids)
    return sim[c_keep][:, r_keep], c_labels, r_labels


def plot_similarity(
    metric: BERTScore, candidate: str, reference: str, path: str | os.PathLike[str], format: str | None = None
) -> PairPlot:
    """Score one pair with `metric` and save its similarity heatmap to `path` (format: `format`, else the
    extension, as matplotlib's `savefig` decides)."""
    metric.reset()
    metric.update([candidate], [reference])
    p, r, f = (float(x.reshape(-1)[0]) for x in metric.compute_scores().as_tuple())

    sim, c_labels, r_labels = similarity_matrix(metric, candidate, reference)
    baseline = metric.baseline  # [1, 3]: the layer's row when the metric rescales
    rescaled = baseline is not None
    if baseline is not None:
        b = float(baseline[0, 2])
        sim = (sim - b) / (1 - b)

    title = f"P = {p:.4f}   R = {r:.4f}   F1 = {f:.4f}" + ("   (rescaled)" if rescaled else "")
    fig = draw_heatmap(
        sim,
        c_labels,
        r_labels,
        f"{title}\n{metric.model_name}, layer {metric.num_layers}",
        "cosine similarity" + (" (rescaled)" if rescaled else ""),
    )
    fig.savefig(Path(path), format=format, dpi=DPI, bbox_inches="tight", pad_inches=0.15)
    return PairPlot(p, r, f, metric.hash_code, sim, c_labels, r_labels)


#: Up to this many tokens a side, every cell shows its value and grid lines part the cells. Past it the values
#: would be unreadable and slow to draw: one text per cell made a 512-token pair take 10 minutes and 7.7 GB.
LABELLED_CELLS_MAX = 40
#: The figure's longest side in inches, so a pair at a 512-token window is a picture of about 2400 pixels.
MAX_FIGURE_INCHES = 24.0
DPI = 100
#: Tick labels are at least this many points apart: past that, every k-th token is labelled.
_TICK_SPACING_PT = 9.0


def draw_heatmap(sim: Tensor, cand_labels: list[str], ref_labels: list[str], title: str, value_label: str) -> Figure:
    """The heatmap of `sim` ([candidate tokens, reference tokens]) as a matplotlib Figure (no pyplot, so no
    display and no global state). Small matrices get a value in every cell; large ones a bounded figure, a
    raster image and thinned tick labels, so drawing stays fast and small whatever the length."""
    from matplotlib.figure import Figure

    n_c, n_r = sim.shape
    labelled = max(n_c, n_r) <= LABELLED_CELLS_MAX
    cell = _cell_inches(max(n_c, n_r), labelled)
    fig = Figure(figsize=(max(6.0, 2.6 + cell * n_r), max(4.5, 2.4 + cell * n_c)), layout="constrained")
    ax = fig.add_subplot()
    low = min(0.0, float(sim.min())) if sim.numel() else 0.0
    image = ax.imshow(
        sim.numpy(), cmap="Blues", vmin=low, vmax=1.0, aspect="equal", interpolation="nearest", rasterized=True
    )
    _tick_labels(ax, cand_labels, ref_labels, cell, labelled)
    ax.set_xlabel("Reference tokens", fontsize=12)
    ax.set_ylabel("Candidate tokens", fontsize=12)
    for spine in ax.spines.values():
        spine.set_visible(False)
    if labelled:
        _cell_values(ax, sim, low, cell)
    ax.set_title(title, fontsize=12)
    colorbar = fig.colorbar(image, ax=ax, fraction=0.035, pad=0.02)
    colorbar.set_label(value_label)
    return fig


def _cell_inches(longest: int, labelled: bool) -> float:
    """The side of one cell: room for a value when labelled, else as large as the bounded figure allows."""
    if labelled:
        return 0.62
    return min(0.4, (MAX_FIGURE_INCHES - 2.6) / longest)


def _tick_labels(ax: Axes, cand_labels: list[str], ref_labels: list[str], cell: float, labelled: bool) -> None:
    """Every token's label where they fit; past that every k-th, far enough apart to read. Grid lines part
    the cells only where the cells are large enough to see them."""
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
    """The value of every cell, white on dark cells (only for small matrices: one text per cell)."""
    middle = (low + 1.0) / 2
    for i in range(sim.shape[0]):
        for j in range(sim.shape[1]):
            value = float(sim[i, j])
            ax.text(
                j, i, f"{value:.3f}", ha="center", va="center", fontsize=8, color="white" if value > middle else "black"
            )
