"""Plotting one pair: the token-by-token cosine similarity matrix as an annotated heatmap.

The matrix comes from the metric's own tokenizer and embedder (normalised token vectors, so a dot product is
the cosine similarity BERTScore matches on); P, R and F1 in the title come from the metric itself, so they are
exactly the scores `score` gives. As in bert-score's `plot_example`, the special tokens ([CLS], [SEP], <s>,
...) are left out of the picture (they still take part in the matching), and with rescaling every cell is
rescaled with the F baseline of the layer. Needs matplotlib; the Agg backend is used, so no display is needed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from torch import Tensor

if TYPE_CHECKING:
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


def plot_similarity(metric: BERTScore, candidate: str, reference: str, path: str | os.PathLike[str]) -> PairPlot:
    """Score one pair with `metric` and save its similarity heatmap to `path` (format from the extension)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    metric.reset()
    metric.update([candidate], [reference])
    p, r, f = (float(x.reshape(-1)[0]) for x in metric.compute_scores().as_tuple())

    sim, c_labels, r_labels = similarity_matrix(metric, candidate, reference)
    baseline = metric.baseline  # [1, 3]: the layer's row when the metric rescales
    rescaled = baseline is not None
    if rescaled:
        b = float(baseline[0, 2])
        sim = (sim - b) / (1 - b)

    n_c, n_r = len(c_labels), len(r_labels)
    cell = 0.62 if max(n_c, n_r) <= 40 else 0.4
    width = min(max(6.0, 2.6 + cell * n_r), 120.0)
    height = min(max(4.5, 2.4 + cell * n_c), 120.0)
    fig, ax = plt.subplots(figsize=(width, height), layout="constrained")
    low = min(0.0, float(sim.min())) if sim.numel() else 0.0
    image = ax.imshow(sim.numpy(), cmap="Blues", vmin=low, vmax=1.0, aspect="equal")
    ax.set_xticks(range(n_r), labels=r_labels, rotation=45, ha="right", rotation_mode="anchor", fontsize=10)
    ax.set_yticks(range(n_c), labels=c_labels, fontsize=10)
    ax.set_xlabel("Reference tokens", fontsize=12)
    ax.set_ylabel("Candidate tokens", fontsize=12)
    ax.tick_params(length=0)
    ax.set_xticks([x - 0.5 for x in range(1, n_r)], minor=True)
    ax.set_yticks([y - 0.5 for y in range(1, n_c)], minor=True)
    ax.grid(which="minor", color="white", linewidth=0.6)
    ax.tick_params(which="minor", length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)

    middle = (low + 1.0) / 2
    font = 8 if cell >= 0.6 else 6
    for i in range(n_c):
        for j in range(n_r):
            value = float(sim[i, j])
            ax.text(j, i, f"{value:.2f}" if cell < 0.6 else f"{value:.3f}", ha="center", va="center",
                    fontsize=font, color="white" if value > middle else "black")

    layer = f"layer {metric.num_layers}"
    title = f"P = {p:.4f}   R = {r:.4f}   F1 = {f:.4f}" + ("   (rescaled)" if rescaled else "")
    ax.set_title(f"{title}\n{metric.model_name}, {layer}", fontsize=12)
    colorbar = fig.colorbar(image, ax=ax, fraction=0.035, pad=0.02)
    colorbar.set_label("cosine similarity" + (" (rescaled)" if rescaled else ""))
    fig.savefig(Path(path), dpi=100, bbox_inches="tight", pad_inches=0.15)
    plt.close(fig)
    return PairPlot(p, r, f, metric.hash_code, sim, c_labels, r_labels)
