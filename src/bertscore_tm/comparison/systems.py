"""Several systems scored in one `compute()`, so the references and shared lines are embedded once, not per system."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import torch
from torch import Tensor

from bertscore_tm.distributed.ranks import job_place
from bertscore_tm.errors import ArgumentValueError
from bertscore_tm.settings import rules
from bertscore_tm.settings.arguments import OUTPUTS
from bertscore_tm.settings.texts import check_pairs, sequence_of

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
    lines, refs, sizes = _checked(metric, systems, target, shard_sizes)
    size = len(refs)
    idf_counts = None
    for cands in lines:
        metric.update(cands, refs)
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
    k = len(lines)
    out: dict[str, Tensor] = {}
    for key in (k for k in OUTPUTS if k in result):  # f_beta only with beta
        value = result[key]
        assert isinstance(value, Tensor)
        out[key] = _per_system(value, k, size, sizes)
    return out


def _checked(
    metric: object, systems: object, target: object, shard_sizes: object
) -> tuple[list[list[str]], list[str | list[str]], list[int] | None]:
    """The arguments by the package's rules: a fresh per-pair metric, systems of one candidate per target."""
    from bertscore_tm.metric.bertscore import BERTScore

    metric = rules.instance_of(metric, BERTScore, "metric", "BERTScore(..., reduction='none')")
    if metric.reduction != "none" or metric.output is not None:
        raise ArgumentValueError(
            "score_systems needs per-pair scores of every output: create the metric with reduction='none' and "
            f"output=None (got reduction={metric.reduction!r}, output={metric.output!r})",
            argument="metric",
            allowed="reduction='none', output=None",
            value=(metric.reduction, metric.output),
        )
    if metric.update_count:
        raise ArgumentValueError(
            "score_systems needs a fresh metric: it already holds pairs; call metric.reset() first",
            argument="metric",
            allowed="a metric without pairs",
            value=metric.update_count,
        )
    given = sequence_of(systems, "systems", "a sequence of systems, each a sequence of candidates")
    if not given:
        raise ArgumentValueError(
            "score_systems needs at least one system", argument="systems", allowed="one system or more", value=[]
        )
    checked = [check_pairs(cands, target, names=(f"systems[{i}]", "target"))[0] for i, cands in enumerate(given)]
    # the references as given (checked above): a text, or a list of texts, per line
    entries = [target] if isinstance(target, str) else target
    refs = [entry if isinstance(entry, str) else list(entry) for entry in entries]  # type: ignore[attr-defined]
    sizes = None if shard_sizes is None else rules.indexes("shard_sizes", shard_sizes)
    if sizes is not None:
        rank, world = job_place()
        if len(sizes) != world or sizes[rank] != len(refs):
            raise ArgumentValueError(
                f"shard_sizes must give the lines of each of the {world} process(es), in rank order, this one's "
                f"({rank}) being its {len(refs)}: got {sizes}",
                argument="shard_sizes",
                allowed=f"{world} line counts, the {rank}th {len(refs)}",
                value=sizes,
            )
    return checked, refs, sizes


def _per_system(value: Tensor, k: int, size: int, shard_sizes: Sequence[int] | None) -> Tensor:
    """[..., k, N] from compute()'s system-major pairs (under DDP, a system-major block per rank)."""
    if shard_sizes is None:
        return value.reshape(*value.shape[:-1], k, size)
    blocks = value.split([k * n for n in shard_sizes], dim=-1)
    parts = [b.reshape(*value.shape[:-1], k, n) for b, n in zip(blocks, shard_sizes, strict=True)]
    return torch.cat(parts, dim=-1)
