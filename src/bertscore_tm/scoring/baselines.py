"""Rescale baselines: `LAYER,P,R,F` files and x' = (x - b) / (1 - b). A missing baseline is an error that
says how to make one, never a silent no-rescale."""

from __future__ import annotations

import csv
import os
from pathlib import Path

import torch
from torch import Tensor

from bertscore_tm.errors import BaselineFileError, BaselineNotFoundError
from bertscore_tm.resources import data_dir

HEADER = ["LAYER", "P", "R", "F"]


def packaged_baseline_path(lang: str, model_name: str) -> Path:
    """Where the packaged baseline for `model_name` on `lang` lives (it may not exist)."""
    return data_dir("baselines") / lang.lower() / f"{model_name}.tsv"


def find_baseline(lang: str | None, model_name: str, baseline_path: str | os.PathLike[str] | None) -> Path:
    """The baseline file to use: the user's file, or the packaged one for (lang, model)."""
    if baseline_path is not None:
        path = Path(baseline_path).expanduser()
        if path.is_dir():
            raise BaselineNotFoundError(
                f"Baseline file {path} is a folder, not a file: give the LAYER,P,R,F file itself "
                f"(e.g. {path / 'baseline.tsv'})",
                path=str(path),
            )
        if not path.is_file():
            raise BaselineNotFoundError(f"Baseline file {path} does not exist", path=str(path))
        return path
    if lang is None:
        raise ValueError("rescale_with_baseline needs lang=... (or baseline_path=...) to find the baseline")
    path = packaged_baseline_path(lang, model_name)
    if not path.is_file() or Path(model_name).is_absolute():  # a folder's name would replace the packaged folder
        where = (
            "none is packaged for a model given as a folder" if Path(model_name).is_absolute() else f"looked for {path}"
        )
        raise BaselineNotFoundError(
            f"No rescale baseline for model '{model_name}' and lang '{lang}': {where}. Make one with "
            f"`bertscore-tm baseline --corpus FILE -m {model_name} --lang {lang} -o baseline.tsv` (random pairs "
            "of a large monolingual corpus) and pass baseline_path='baseline.tsv', or turn rescaling off.",
            path=str(path),
            model=model_name,
            lang=lang,
            argument="rescale_with_baseline",
        )
    return path


def read_baseline(path: str | os.PathLike[str]) -> Tensor:
    """A baseline file's rows as float32 [layers, 3], checked for shape and order (UTF-8, with or without a
    byte order mark); raises BaselineFileError."""
    path = Path(path)
    try:
        with path.open(newline="", encoding="utf-8-sig") as fh:
            rows = [row for row in csv.reader(fh) if row and any(cell.strip() for cell in row)]
    except UnicodeDecodeError as err:
        raise BaselineFileError(
            f"Baseline file {path} is not UTF-8 text ({err.reason} at byte {err.start}): save it as UTF-8 "
            "(LAYER,P,R,F, then one row of numbers per layer)",
            path=str(path),
        ) from None
    if not rows or [c.strip() for c in rows[0]] != HEADER:
        raise BaselineFileError(f"Baseline file {path} must start with the header 'LAYER,P,R,F'", path=str(path))
    values = []
    for n, row in enumerate(rows[1:], start=1):
        if len(row) != 4:
            raise BaselineFileError(
                f"Baseline file {path}, data row {n}: expected 4 columns, got {len(row)}", path=str(path), row=n
            )
        cells = []
        for column, cell in zip(HEADER, row, strict=True):
            try:
                cells.append(float(cell))
            except ValueError:
                raise BaselineFileError(
                    f"Baseline file {path}, data row {n}, column {column}: {cell.strip()!r} is not a number",
                    path=str(path),
                    row=n,
                    column=column,
                ) from None
        if cells[0] != n - 1:
            raise BaselineFileError(
                f"Baseline file {path}: rows must be layers 0, 1, 2, ... in order; "
                f"data row {n} is layer {row[0].strip()}",
                path=str(path),
                row=n,
                column="LAYER",
            )
        values.append(cells[1:])
    if not values:
        raise BaselineFileError(f"Baseline file {path} has no data rows", path=str(path))
    return torch.tensor(values, dtype=torch.float32)


def baseline_rows(
    table: Tensor, num_layers: int, all_layers: bool, path: str | os.PathLike[str] = "", depth: int | None = None
) -> Tensor:
    """The rows a setting uses ([1, 3], or one per layer with `all_layers`), each value finite and below 1,
    as (x - b) / (1 - b) needs."""
    if all_layers:
        if depth is not None and table.shape[0] != depth + 1:
            raise BaselineFileError(
                f"Baseline {path} has {table.shape[0]} rows; all_layers needs one per layer ({depth + 1})",
                path=str(path),
            )
        first = 0
    else:
        if num_layers >= table.shape[0]:
            raise BaselineFileError(
                f"Baseline {path} has rows for layers 0..{table.shape[0] - 1}, not layer {num_layers}", path=str(path)
            )
        first, table = num_layers, table[num_layers : num_layers + 1]
    bad = ~(torch.isfinite(table) & (table < 1))
    if bool(bad.any()):
        row, col = (int(x) for x in torch.nonzero(bad)[0])
        layer = first + row
        raise BaselineFileError(
            f"Baseline file {path}, data row {layer + 1} (layer {layer}), column {HEADER[col + 1]}: "
            f"{float(table[row, col])!r} is not a finite number below 1, which rescaling needs ((x - b) / (1 - b)). "
            "Fix the file, or make a new one with `bertscore-tm baseline`.",
            path=str(path),
            row=layer + 1,
            column=HEADER[col + 1],
        )
    return table


def f_beta_baseline(baseline: Tensor, beta: float) -> Tensor:
    """F-beta's baseline [rows, 1]. A file has no F-beta column, so it is the F-beta of the file's P and
    R times the file's F over the F of its P and R (the mean of per-pair F lies below the F of the means); at
    beta = 1, the file's F."""
    p, r, f = baseline.double().unbind(-1)
    b2 = float(beta) ** 2
    ratio = f * (p + r) / (2 * p * r)
    return ((1 + b2) * p * r / (b2 * p + r) * ratio).to(baseline.dtype)[..., None]


def rescale(scores: Tensor, baseline: Tensor, in_place: bool = False) -> Tensor:
    """(x - b) / (1 - b), the one rescaling rule; `in_place` for the large matrices of all pairs."""
    b = baseline.to(scores.device, scores.dtype)
    if in_place:
        return scores.sub_(b).div_(1 - b)
    return (scores - b) / (1 - b)
