"""Making a rescale baseline: the mean P, R, F per layer of random pairs of distinct lines of a monolingual corpus
(the `bertscore-tm baseline` command). Reading and applying baselines is `scoring.baselines`'."""

from __future__ import annotations

import csv
import os
import random
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import torch
from torch import Tensor

from bertscore_tm.scoring.baselines import HEADER

if TYPE_CHECKING:
    from bertscore_tm.metric.bertscore import BERTScore


def distinct_lines(lines: Sequence[str]) -> list[str]:
    """The corpus as it is sampled: each line stripped, blank lines dropped, duplicates kept once (first seen)."""
    return list(dict.fromkeys(s for s in (line.strip() for line in lines) if s))


def sample_pairs(lines: Sequence[str], pairs: int, seed: int = 0) -> tuple[list[str], list[str]]:
    """`pairs` (candidates, references; at least 1, as `bertscore-tm baseline --pairs` checks) of distinct lines,
    none used twice; ``random.Random(seed).random()`` is stable across Python versions, so a corpus and a seed give
    the same pairs everywhere."""
    pool = distinct_lines(lines)
    need = 2 * pairs
    if len(pool) < need:
        raise ValueError(
            f"the corpus has {len(pool)} distinct non-blank lines, but {pairs} pairs need {need} "
            "(every line is used at most once): use a larger corpus or fewer pairs"
        )
    rng = random.Random(seed)
    order = list(range(len(pool)))
    for i in range(need):
        j = i + int(rng.random() * (len(pool) - i))
        order[i], order[j] = order[j], order[i]
    return [pool[k] for k in order[:pairs]], [pool[k] for k in order[pairs:need]]


def layer_means(metric: BERTScore, cands: Sequence[str], refs: Sequence[str]) -> Tensor:
    """Mean P, R, F per layer ([layers + 1, 3], float64) with an all-layers, no-IDF, unrescaled metric."""
    if not metric.all_layers or metric.idf or metric.baseline is not None:
        raise ValueError("a baseline needs a metric with all_layers=True, idf=False and no rescaling")
    metric.reset()
    metric.update(list(cands), list(refs))
    scores = metric.compute_scores()
    columns = [x.to(torch.float64).mean(dim=-1) for x in scores.as_tuple()]
    return torch.stack(columns, dim=-1).cpu()


def write_baseline(path: str | os.PathLike[str], table: Tensor) -> None:
    """Write [layers, 3] means as a `LAYER,P,R,F` file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(HEADER)
        for layer, (p, r, f) in enumerate(table.tolist()):
            writer.writerow([layer, repr(float(p)), repr(float(r)), repr(float(f))])
