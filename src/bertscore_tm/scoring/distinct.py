"""Distinct token sequences, found exactly (`distinct_texts`): the one rule by which every engine embeds each
distinct text once (the paired engine over a Metric's state, all pairs, MBR and explanations over their inputs).
Rows of one length are compared whole (each row's bytes as one value, sorted by numpy's `unique`: eight times
faster than `torch.unique` over rows), never hashed, so two texts are one only when their token ids are equal."""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from bertscore_tm.embedding.rows import TokenTexts, ragged_arange


def distinct_texts(
    sources: tuple[Tensor, ...], which: Tensor, start: Tensor, length: Tensor
) -> tuple[TokenTexts, Tensor]:
    """The distinct sequences among occurrences ``sources[which[i]][start[i] : start[i] + length[i]]``, numbered
    by first occurrence and held by reference into `sources` (no copy of an id), and each occurrence's text
    (int64).

    >>> ids = torch.tensor([7, 8, 9, 7, 8])
    >>> texts, text_of = distinct_texts((ids,), torch.zeros(3, dtype=torch.uint8), torch.tensor([0, 2, 3]),
    ...                                 torch.tensor([2, 1, 2]))
    >>> text_of.tolist(), [texts[t].tolist() for t in range(len(texts))]
    ([0, 1, 0], [[7, 8], [9]])
    """
    which, start, length = which.to(torch.uint8), start.long(), length.long()
    text_of, first = first_seen_ids(sources, which, start, length)
    return TokenTexts(sources, which[first], start[first], length[first].to(torch.int32)), text_of


def token_index(texts: TokenTexts, chosen: Tensor) -> Tensor:
    """Indices into their one source of the tokens of texts `chosen`, text after text (texts of one source, as
    all pairs and MBR hold them), so that per-token values made over that source are read text by text."""
    return ragged_arange(texts.start[chosen], texts.length[chosen])


def first_seen_ids(sources: tuple[Tensor, ...], which: Tensor, start: Tensor, length: Tensor) -> tuple[Tensor, Tensor]:
    """For occurrences of token sequences (``sources[which][start : start + length]``): each one's text index,
    texts numbered by first occurrence, and each text's first occurrence. Equal sequences are found exactly
    (rows of one length compared whole, `_equal_rows`), never by hashing."""
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
            inverse = _equal_rows(rows)
        group[members] = inverse + groups
        groups += int(inverse.max()) + 1
    first = torch.full((groups,), n, dtype=torch.long)
    first.scatter_reduce_(0, group, torch.arange(n), reduce="amin")
    order = torch.argsort(first)  # texts by first occurrence
    rank = torch.empty_like(order)
    rank[order] = torch.arange(groups)
    return rank[group], first[order]


def _equal_rows(rows: Tensor) -> Tensor:
    """A group number for each row of a [count, size] integer tensor, equal rows sharing theirs (int64): each
    row's bytes are viewed as one value, so rows are equal exactly when all their ids are.

    >>> _equal_rows(torch.tensor([[5, 1], [2, 3], [5, 1]], dtype=torch.int32)).tolist()
    [1, 0, 1]
    """
    whole = np.ascontiguousarray(rows.numpy())
    values = whole.view(np.dtype((np.void, whole.dtype.itemsize * whole.shape[1]))).ravel()
    return torch.from_numpy(np.unique(values, return_inverse=True)[1].reshape(-1).astype(np.int64))
