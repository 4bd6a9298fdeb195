"""An ignored token (``ignore=``) is encoded with its text, which it shapes, but is no match, keeps 0 as its own
best and weighs 0; so does a marked token (a prompt's, a context's: `MarkedIds`). The rules read a flag per token
id and a mark per token, so they apply wherever ids are; each takes the marks, so none can leave them out."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor


def kept(ids: Tensor, marked: Tensor | None, ignored: Tensor | None) -> Tensor | None:
    """Which tokens take part in the matching: not `marked` (None: none is), not ignored; None where `ignored`
    is None (`Scorer.token_flags` gives a table wherever a token is marked)."""
    if ignored is None:
        return None
    keep = ~ignored.to(ids.device)[ids.long()]
    return keep if marked is None else keep & ~marked.to(ids.device)


def scored_weights(weights: Tensor, ids: Tensor, marked: Tensor | None, ignored: Tensor | None) -> Tensor:
    """The weight of each token of `ids`: its id's weight, or 0 where it is ignored or marked."""
    w = weights[ids.long()]
    keep = kept(ids, marked, ignored)
    return w if keep is None else w.masked_fill(~keep.to(w.device), 0.0)


def left_blank(
    ids: Tensor, marked: Tensor | None, lens: Tensor, ignored: Tensor | None, special_ids: Sequence[int]
) -> Tensor:
    """Per text, whether the mask left it no token but the special ones (it then scores as a blank text); all
    False where nothing is ignored."""
    if ignored is None:
        return torch.zeros(len(lens), dtype=torch.bool, device=lens.device)
    keep = kept(ids, marked, ignored)
    assert keep is not None
    for special in special_ids:
        keep &= ids != special
    owner = torch.repeat_interleave(torch.arange(len(lens), device=lens.device), lens.long().to(lens.device))
    counts = torch.zeros(len(lens), dtype=torch.long, device=lens.device)
    counts.index_add_(0, owner, keep.long().to(lens.device))
    return counts == 0
