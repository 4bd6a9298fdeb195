"""Several systems scored in one `compute()`, so the references and shared lines are embedded once, not per system."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import torch
from torch import Tensor

from bertscore_tm.settings.arguments import OUTPUTS

if TYPE_CHECKING:
    from bertscore_tm.metric.bertscore import BERTScore


def score_systems(
    metric: BERTScore,
    systems: Sequence[Sequence[str]],
    target: Sequence[str] | Sequence[Sequence[str]],
    shard_sizes: Sequence[int] | None = None,
) -> dict[str, Tensor]:
    """Per-pair P, R, F1 of the k `systems`, each ``[k, N]`` (``[L + 1, k, N]`` with ``all_layers``), row i as
    ``systems[i]`` alone; `metric` fresh, ``reduction="none"``, ``output=None``. `shard_sizes`: under DDP, every
    rank's line count in rank order (each rank passes its contiguous shard and gets all the lines).

    >>> from bertscore_tm import PACKAGED_MINILM, BERTScore
    >>> metric = BERTScore(PACKAGED_MINILM)
    >>> refs = ["The cat sat on the mat.", "It rained all day."]
    >>> scores = score_systems(metric, [["A cat sat on a mat.", "Rain all day."], ["The cat sat.", "It rained."]], refs)
    >>> tuple(scores["f1"].shape), metric.embedder.rows_embedded   # 2 systems x 2 pairs; 6 distinct texts
    ((2, 2), 6)
    """
    size = len(target)
    _check_systems(metric, systems, size)
    idf_counts = None
    for cands in systems:
        metric.update(list(cands), list(target))
        if not metric.idf:
            continue
        # k updates would count the references' document frequencies k times, which changes the IDF (+1
        # smoothing): the counts of the first system's update are kept, the IDF of a run over one system
        if idf_counts is None:
            idf_counts = (metric.doc_freq.clone(), metric.num_refs.clone())
        else:
            metric.doc_freq, metric.num_refs = idf_counts[0].clone(), idf_counts[1].clone()
    result = metric.compute()
    assert isinstance(result, dict)
    k = len(systems)
    out: dict[str, Tensor] = {}
    for key in (k for k in OUTPUTS if k in result):  # f_beta only with beta
        value = result[key]
        assert isinstance(value, Tensor)
        out[key] = _per_system(value, k, size, shard_sizes)
    return out


def _check_systems(metric: BERTScore, systems: Sequence[Sequence[str]], size: int) -> None:
    if metric.reduction != "none" or metric.output is not None:
        raise ValueError(
            "score_systems needs per-pair scores of every output: create the metric with reduction='none' and "
            f"output=None (got reduction={metric.reduction!r}, output={metric.output!r})"
        )
    if metric.update_count:
        raise ValueError("score_systems needs a fresh metric: it already holds pairs; call metric.reset() first")
    if not systems:
        raise ValueError("score_systems needs at least one system")
    for i, cands in enumerate(systems):
        if len(cands) != size:
            raise ValueError(
                f"system {i} has {len(cands)} candidates but there are {size} reference entries: every system "
                "must have one candidate per reference entry, in the same order"
            )


def _per_system(value: Tensor, k: int, size: int, shard_sizes: Sequence[int] | None) -> Tensor:
    """[..., k, N] from compute()'s system-major pairs (under DDP, a system-major block per rank)."""
    if shard_sizes is None:
        return value.reshape(*value.shape[:-1], k, size)
    blocks = value.split([k * n for n in shard_sizes], dim=-1)
    parts = [b.reshape(*value.shape[:-1], k, n) for b, n in zip(blocks, shard_sizes, strict=True)]
    return torch.cat(parts, dim=-1)
