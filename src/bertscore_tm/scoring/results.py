"""`Scores`, the typed per-pair result: `compute()` returns what torchmetrics and Lightning expect (a union),
so callers inside the package take `compute_scores()` rather than narrow it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from bertscore_tm.settings.arguments import OUTPUTS


@dataclass(frozen=True)
class Scores:
    """Per-pair scores in input order: [pairs], or [layers + 1, pairs] with all_layers."""

    precision: Tensor
    recall: Tensor
    f1: Tensor
    hash_code: str
    #: per pair, the index among its references of the best one (the highest F; the lowest index on a tie),
    #: int64 and shaped as the scores; None where not computed (with `beta`: the highest F-beta)
    best_reference: Tensor | None = None
    #: F-beta (with the setting's `beta`), shaped as the others; None without `beta`
    f_beta: Tensor | None = None

    def as_tuple(self) -> tuple[Tensor, Tensor, Tensor]:
        """(P, R, F), in bert-score's order."""
        return self.precision, self.recall, self.f1

    def stacked(self) -> Tensor:
        """[3, ...] (P, R, F), or [4, ...] with F-beta: what `format_scores` takes."""
        return torch.stack(self.as_tuple() if self.f_beta is None else (*self.as_tuple(), self.f_beta))


def format_scores(per: Tensor, output: str | None, hash_code: str | None) -> dict[str, Tensor | str] | Tensor:
    """The tensor `output` names, else a dict of them (the hash code under ``"hash"`` where given): what the
    Metric and its twins return."""
    if output is not None:
        return per[OUTPUTS.index(output)]
    result: dict[str, Tensor | str] = dict(zip(OUTPUTS[: len(per)], per.unbind(0), strict=True))
    if hash_code is not None:
        result["hash"] = hash_code
    return result


@contextmanager
def progress_bar(show: bool, total: int, desc: str, unit: str) -> Iterator[Any]:
    """A tqdm bar of `total` steps when `show`, else None; closed however the work ends."""
    if not show:
        yield None
        return
    from tqdm.auto import tqdm

    bar = tqdm(total=total, desc=desc, unit=unit)
    try:
        yield bar
    finally:
        bar.close()


def scores_of(per_pair: Tensor, all_layers: bool, hash_code: str) -> Scores:
    """`Scores` from the paired engine's [pairs, rows, 4] (P, R, F, best reference), or [pairs, rows, 5] with
    F-beta before the best reference."""
    per = per_pair.permute(2, 1, 0)  # [4 or 5, rows, pairs]
    *scores, best = (per if all_layers else per[:, 0]).unbind(0)
    f_beta = scores[3] if len(scores) == 4 else None
    return Scores(scores[0], scores[1], scores[2], hash_code, best.round().long(), f_beta)
