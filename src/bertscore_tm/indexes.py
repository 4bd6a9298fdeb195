"""Dataset indexes: one pair per index, so the repeats a distributed sampler pads in count once.

`DistributedSampler` gives every rank the same number of samples by repeating a few; with the dataset index
of each pair, `compute()` keeps the first pair of each index (in rank-major order, the order the ranks'
results are gathered in), orders the pairs by index, and leaves the repeats out of the IDF counts too. The
decision is a pure function of the gathered indexes, so every rank takes the same one without exchanging more.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor


@dataclass(frozen=True)
class Deduplication:
    """`keep`: positions, in the gathered (rank-major) order, of the pairs kept, in index order (int64).
    `dropped`: for this rank's own pairs, which ones repeat an earlier pair's index (bool)."""

    keep: Tensor
    dropped: Tensor


def deduplicate(indexes: Tensor, offset: int, num_local: int) -> Deduplication:
    """The first pair of each index, ordered by index, from every rank's `indexes` gathered rank-major;
    this rank's pairs are positions ``offset .. offset + num_local``.

    >>> d = deduplicate(torch.tensor([4, 0, 2, 1, 3, 4]), offset=3, num_local=3)
    >>> d.keep.tolist(), d.dropped.tolist()
    ([1, 3, 2, 4, 0], [False, False, True])
    """
    order = torch.argsort(indexes, stable=True)
    ordered = indexes[order]
    first = torch.ones_like(ordered, dtype=torch.bool)
    first[1:] = ordered[1:] != ordered[:-1]
    keep = order[first]
    repeated = torch.ones_like(indexes, dtype=torch.bool)
    repeated[keep] = False
    return Deduplication(keep, repeated[offset : offset + num_local])
