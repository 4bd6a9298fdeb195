"""Rescale baselines: reading the `LAYER,P,R,F` files and rescaling scores with them.

x' = (x - b) / (1 - b), per P, R and F, after the maximum over several references. The published baselines
ship inside the package under `baselines/<lang>/<model>.tsv` (CSV text despite the name, one row per layer
from 0). A missing baseline is an error that says how to make one, never a silent no-rescale. New baselines
are made by the `bertscore-tm baseline` command (`sample_pairs`, then `layer_means`): the mean scores of
random pairs of distinct lines of a monolingual corpus, per layer.
"""

from __future__ import annotations

import csv
import os
import random
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import torch
from torch import Tensor

from bertscore_tm.errors import BaselineNotFoundError
from bertscore_tm.resources import data_dir

if TYPE_CHECKING:
    from bertscore_tm.metric import BERTScore

HEADER = ["LAYER", "P", "R", "F"]


def packaged_baseline_path(lang: str, model_name: str) -> Path:
    """Where the packaged baseline for `model_name` on `lang` lives (it may not exist)."""
    return data_dir("baselines") / lang.lower() / f"{model_name}.tsv"


def find_baseline(lang: str | None, model_name: str, baseline_path: str | os.PathLike[str] | None) -> Path:
    """The baseline file to use: the user's file, or the packaged one for (lang, model)."""
    if baseline_path is not None:
        path = Path(baseline_path).expanduser()
        if not path.is_file():
            raise BaselineNotFoundError(f"Baseline file {path} does not exist", path=str(path))
        return path
    if lang is None:
        raise ValueError("rescale_with_baseline needs lang=... (or baseline_path=...) to find the baseline")
    path = packaged_baseline_path(lang, model_name)
    if not path.is_file():
        raise BaselineNotFoundError(
            f"No rescale baseline for model '{model_name}' and lang '{lang}': looked for {path}. Make one with "
            f"`bertscore-tm baseline --corpus FILE -m {model_name} --lang {lang} -o baseline.tsv` (random pairs "
            "of a large monolingual corpus) and pass baseline_path='baseline.tsv', or turn rescaling off.",
            path=str(path),
            model=model_name,
            lang=lang,
            argument="rescale_with_baseline",
        )
    return path


def read_baseline(path: str | os.PathLike[str]) -> Tensor:
    """The rows of a baseline file as float32 [layers, 3] (P, R, F), checked for shape and order."""
    path = Path(path)
    with path.open(newline="", encoding="utf-8") as fh:
        rows = [row for row in csv.reader(fh) if row and any(cell.strip() for cell in row)]
    if not rows or [c.strip() for c in rows[0]] != HEADER:
        raise ValueError(f"Baseline file {path} must start with the header 'LAYER,P,R,F'")
    values = []
    for n, row in enumerate(rows[1:]):
        if len(row) != 4:
            raise ValueError(f"Baseline file {path}, data row {n + 1}: expected 4 columns, got {len(row)}")
        try:
            layer = int(float(row[0]))
            values.append([float(x) for x in row[1:]])
        except ValueError as err:
            raise ValueError(f"Baseline file {path}, data row {n + 1}: not a number ({err})") from None
        if layer != n:
            raise ValueError(f"Baseline file {path}: rows must be layers 0, 1, 2, ... in order; row {n + 1} is layer {layer}")
    if not values:
        raise ValueError(f"Baseline file {path} has no data rows")
    return torch.tensor(values, dtype=torch.float32)


def baseline_rows(table: Tensor, num_layers: int, all_layers: bool, path: str | os.PathLike[str] = "") -> Tensor:
    """The rows of `table` a setting uses: [1, 3] for layer num_layers, or all [layers, 3]."""
    if all_layers:
        return table
    if num_layers >= table.shape[0]:
        raise ValueError(f"Baseline {path} has rows for layers 0..{table.shape[0] - 1}, not layer {num_layers}")
    return table[num_layers : num_layers + 1]


def rescale(scores: Tensor, baseline: Tensor) -> Tensor:
    """(x - b) / (1 - b) with `scores` [..., rows, 3] and `baseline` [rows, 3] (broadcast)."""
    b = baseline.to(scores.device, scores.dtype)
    return (scores - b) / (1 - b)


def write_baseline(path: str | os.PathLike[str], table: Tensor) -> None:
    """Write [layers, 3] means as a `LAYER,P,R,F` file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(HEADER)
        for layer, (p, r, f) in enumerate(table.tolist()):
            writer.writerow([layer, repr(float(p)), repr(float(r)), repr(float(f))])


# -- making a baseline: random pairs of distinct corpus lines, scored at every layer --------------------------


def distinct_lines(lines: Sequence[str]) -> list[str]:
    """The corpus as it is sampled: each line stripped, blank lines dropped, duplicates kept once (first seen)."""
    return list(dict.fromkeys(s for s in (line.strip() for line in lines) if s))


def sample_pairs(lines: Sequence[str], pairs: int, seed: int = 0) -> tuple[list[str], list[str]]:
    """`pairs` candidate/reference pairs of distinct lines, no line used twice: (candidates, references).

    The lines are first made distinct (:func:`distinct_lines`); 2 x `pairs` of them are drawn without
    replacement by a partial Fisher-Yates shuffle driven by ``random.Random(seed).random()``, whose sequence
    Python keeps stable across versions, so the same corpus and seed give the same pairs everywhere. The
    first `pairs` drawn are the candidates and the next `pairs` their references.
    """
    if not isinstance(pairs, int) or pairs < 1:
        raise ValueError(f"pairs must be a positive integer, got {pairs!r}")
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


def layer_means(metric: "BERTScore", cands: Sequence[str], refs: Sequence[str]) -> Tensor:
    """Mean P, R, F per layer of `cands` against `refs` with an ``all_layers=True``, no-IDF, unrescaled
    metric: float64 [layers + 1, 3] on the CPU. The metric is reset first."""
    if not metric.all_layers or metric.idf or metric.baseline is not None:
        raise ValueError("a baseline needs a metric with all_layers=True, idf=False and no rescaling")
    if metric.output is not None or metric.reduction != "none":
        raise ValueError("a baseline needs a metric with reduction='none' and output=None")
    metric.reset()
    metric.update(list(cands), list(refs))
    result = metric.compute()
    assert isinstance(result, dict)
    columns = [result[name].to(torch.float64).mean(dim=-1) for name in ("precision", "recall", "f1")]
    return torch.stack(columns, dim=-1).cpu()
