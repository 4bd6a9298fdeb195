"""Rescale baselines: reading the `LAYER,P,R,F` files and rescaling scores with them.

x' = (x - b) / (1 - b), per P, R and F, after the maximum over several references. The published baselines
ship inside the package under `baselines/<lang>/<model>.tsv` (CSV text despite the name, one row per layer
from 0). A missing baseline is an error that says how to make one, never a silent no-rescale. New baselines
are made by the `bertscore-tm baseline` command (`baseline_building.py`).
"""

from __future__ import annotations

import csv
import os
from pathlib import Path

import torch
from torch import Tensor

from bertscore_tm.errors import BaselineNotFoundError
from bertscore_tm.resources import data_dir

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
