"""Distinct token sequences, found exactly: the one rule by which every engine embeds each distinct text once
(the paired engine over a Metric's state, all pairs and MBR over their inputs). Rows of one length are compared
whole by `torch.unique`, never hashed, so two texts are one only when their token ids are equal."""

from __future__ import annotations

import torch
from torch import Tensor


def first_seen_ids(sources: tuple[Tensor, ...], which: Tensor, start: Tensor, length: Tensor) -> tuple[Tensor, Tensor]:
    """For occurrences of token sequences (``sources[which][start : start + length]``): each one's text index,
    texts numbered by first occurrence, and each text's first occurrence. Equal sequences are found exactly
    (rows of one length compared by `torch.unique`), never by hashing."""
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
            _, inverse = torch.unique(rows, dim=0, return_inverse=True)
        group[members] = inverse + groups
        groups += int(inverse.max()) + 1
    first = torch.full((groups,), n, dtype=torch.long)
    first.scatter_reduce_(0, group, torch.arange(n), reduce="amin")
    order = torch.argsort(first)  # texts by first occurrence
    rank = torch.empty_like(order)
    rank[order] = torch.arange(groups)
    return rank[group], first[order]
