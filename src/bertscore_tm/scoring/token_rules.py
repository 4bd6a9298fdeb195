"""What an ignored token (``ignore=``) does in the scores: it is encoded with its text (it shapes the other
tokens' vectors), but it is no match for any token of the other side, its own best similarity is not kept (0),
and it weighs 0 in P and R; a text left with no token but the special ones scores as a blank text does. Which
tokens are ignored is a table of one flag per token id (`bertscore_tm.models.masks`); the rules here read it
from token ids alone, so they apply wherever ids are (the Metric's state, a shard, a function call).
Semantics: docs/semantics.md, "Token masks".
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from bertscore_tm.models.prompts import unmarked


def kept(ids: Tensor, ignored: Tensor | None) -> Tensor | None:
    """Which tokens of `ids` take part in the matching (bool, shaped as `ids`): not a prompt's (marked), not
    ignored; None where neither rule is set (`ignored` None)."""
    if ignored is None:
        return None
    return (ids >= 0) & ~ignored.to(ids.device)[unmarked(ids).long()]


def scored_weights(weights: Tensor, ids: Tensor, ignored: Tensor | None) -> Tensor:
    """The weight of each token of `ids`: its id's weight, or 0 where it is ignored or a prompt's."""
    w = weights[ids.long() if ignored is None else unmarked(ids).long()]
    keep = kept(ids, ignored)
    return w if keep is None else w.masked_fill(~keep.to(w.device), 0.0)


def left_blank(ids: Tensor, lens: Tensor, ignored: Tensor | None, special_ids: Sequence[int]) -> Tensor:
    """Per text (`lens` over the flat `ids`), whether the mask left it no token but the special ones (the
    `special_ids`, CLS and SEP): such a text is scored as a blank one. All False where nothing is ignored."""
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
