"""An ignored token (``ignore=``) is encoded with its text, which it shapes, but is no match, keeps 0 as its own
best and weighs 0. The rules read a flag per token id from ids alone, so they apply wherever ids are."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from bertscore_tm.models.prompts import unmarked


def kept(ids: Tensor, ignored: Tensor | None) -> Tensor | None:
    """Which tokens take part in the matching: not a prompt's (marked), not ignored; None where `ignored` is None."""
    if ignored is None:
        return None
    return (ids >= 0) & ~ignored.to(ids.device)[unmarked(ids).long()]


def scored_weights(weights: Tensor, ids: Tensor, ignored: Tensor | None) -> Tensor:
    """The weight of each token of `ids`: its id's weight, or 0 where it is ignored or a prompt's."""
    w = weights[ids.long() if ignored is None else unmarked(ids).long()]
    keep = kept(ids, ignored)
    return w if keep is None else w.masked_fill(~keep.to(w.device), 0.0)


def left_blank(ids: Tensor, lens: Tensor, ignored: Tensor | None, special_ids: Sequence[int]) -> Tensor:
    """Per text, whether the mask left it no token but the special ones (it then scores as a blank text); all
    False where nothing is ignored."""
    if ignored is None:
        return torch.zeros(len(lens), dtype=torch.bool, device=lens.device)
    keep = kept(ids, ignored)
    assert keep is not None
    for special in special_ids:
        keep &= ids != special
    owner = torch.repeat_interleave(torch.arange(len(lens), device=lens.device), lens.long().to(lens.device))
    counts = torch.zeros(len(lens), dtype=torch.long, device=lens.device)
    counts.index_add_(0, owner, keep.long().to(lens.device))
    return counts == 0
