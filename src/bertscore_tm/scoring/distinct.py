"""Distinct token sequences, found exactly, so that every engine embeds each distinct text once. Rows of one
length are compared whole as bytes, never hashed: two texts are one only when their ids are equal."""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from bertscore_tm.embedding.rows import TokenTexts, ragged_arange
from bertscore_tm.models.prompts import MarkedIds


def distinct_texts(
    sources: tuple[Tensor, ...], which: Tensor, start: Tensor, length: Tensor, marked: tuple[Tensor, ...] | None
) -> tuple[TokenTexts, Tensor]:
    """The distinct sequences among occurrences ``sources[which[i]][start[i] : start[i] + length[i]]``,
    numbered by first occurrence and held by reference (no id copied), and each occurrence's text. Two texts
    are one only where their tokens' `marked` flags (each source's; None: none marked) are equal too.

    >>> ids = torch.tensor([7, 8, 9, 7, 8])
    >>> texts, text_of = distinct_texts((ids,), torch.zeros(3, dtype=torch.uint8), torch.tensor([0, 2, 3]),
    ...                                 torch.tensor([2, 1, 2]), None)
    >>> text_of.tolist(), [texts[t].tolist() for t in range(len(texts))]
    ([0, 1, 0], [[7, 8], [9]])
    >>> marked = (torch.tensor([True, False, False, False, False]),)
    >>> distinct_texts((ids,), torch.zeros(3, dtype=torch.uint8), torch.tensor([0, 2, 3]),
    ...                torch.tensor([2, 1, 2]), marked)[1].tolist()
    [0, 1, 2]
    """
    which, start, length = which.to(torch.uint8), start.long(), length.long()
    if marked is not None and not any(bool(m.any()) for m in marked):
        marked = None  # no token marked: the ids alone tell the texts apart
    keyed = sources if marked is None else tuple(s.long() * 2 + m for s, m in zip(sources, marked, strict=True))
    text_of, first = first_seen_ids(keyed, which, start, length)
    return TokenTexts(sources, which[first], start[first], length[first].to(torch.int32), marked), text_of


def distinct_of(side: MarkedIds) -> tuple[TokenTexts, Tensor]:
    """`distinct_texts` of one side's texts, end to end in its one source."""
    lens = side.lens.long()
    which = torch.zeros(len(lens), dtype=torch.uint8)
    return distinct_texts((side.ids,), which, torch.cumsum(lens, 0) - lens, lens, (side.marked,))


def token_index(texts: TokenTexts, chosen: Tensor) -> Tensor:
    """Indices into their one source of the tokens of texts `chosen`, text after text."""
    return ragged_arange(texts.start[chosen], texts.length[chosen])


def first_seen_ids(sources: tuple[Tensor, ...], which: Tensor, start: Tensor, length: Tensor) -> tuple[Tensor, Tensor]:
    """Each occurrence's text (numbered by first occurrence) and each text's first occurrence."""
    n = len(length)
    group = torch.empty(n, dtype=torch.long)  # equal sequences share a group, numbered length by length
    groups = 0
    for size in torch.unique(length).tolist():
        members = torch.nonzero(length == size).flatten()
        if size == 0:
            inverse = torch.zeros(len(members), dtype=torch.long)
        else:
            rows = torch.empty((len(members), size), dtype=sources[0].dtype)
            for source, flat in enumerate(sources):
                mine = which[members] == source
                if bool(mine.any()):
                    offsets = start[members[mine]][:, None] + torch.arange(size)
                    rows[mine] = flat[offsets]
            # a group number per row, equal rows sharing one: each row's bytes viewed as one value
            whole = np.ascontiguousarray(rows.numpy())
            values = whole.view(np.dtype((np.void, whole.dtype.itemsize * whole.shape[1]))).ravel()
            inverse = torch.from_numpy(np.unique(values, return_inverse=True)[1].reshape(-1).astype(np.int64))
        group[members] = inverse + groups
        groups += int(inverse.max()) + 1
    first = torch.full((groups,), n, dtype=torch.long)
    first.scatter_reduce_(0, group, torch.arange(n), reduce="amin")
    order = torch.argsort(first)  # texts by first occurrence
    rank = torch.empty_like(order)
    rank[order] = torch.arange(groups)
    return rank[group], first[order]
