"""Dataset indexes: one pair per index, so the repeats a distributed sampler pads in count once.

`DistributedSampler` gives every rank the same number of samples by repeating a few; with the dataset index
of each pair, `compute()` keeps the first pair of each index (in rank-major order, the order the ranks'
results are gathered in), orders the pairs by index, and leaves the repeats out of the IDF counts too. The
decision is a pure function of the gathered indexes, so every rank takes the same one without exchanging more.

A repeat is meant to be the very same pair, which scores as the pair kept: `conflicting_indexes` finds, from
the gathered per-pair scores alone, the indexes whose repeats score otherwise by more than `SAME_PAIR_ATOL`
(another pair under the index, a user's mistake that `compute()` warns about), again without exchanging more.
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


#: How far a repeat's P, R or F may be from the kept pair's and still be the same pair. On a CPU the very same
#: pair scores bit for bit alike (a text's vectors do not depend on the batch or process it runs in); the margin
#: keeps an accelerator's matrix kernels, which may round a row by the batch's shape, from raising false alarms.
SAME_PAIR_ATOL = 1e-3


def conflicting_indexes(indexes: Tensor, keep: Tensor, scores: Tensor) -> Tensor:
    """The indexes, in increasing order, with a repeat whose `scores` (per pair, gathered as `indexes` are)
    differ from those of the pair kept (`keep`, from `deduplicate`) by more than `SAME_PAIR_ATOL`: such a repeat
    holds another candidate or reference. A different pair that scores within that margin is not found.

    >>> scores = torch.tensor([[0.9], [0.8], [0.9], [0.7]])
    >>> conflicting_indexes(torch.tensor([4, 0, 4, 0]), keep=torch.tensor([1, 0]), scores=scores).tolist()
    [0]
    """
    order = torch.argsort(indexes, stable=True)
    ordered = indexes[order]
    first = torch.ones_like(ordered, dtype=torch.bool)
    first[1:] = ordered[1:] != ordered[:-1]
    group = torch.cumsum(first.long(), 0) - 1  # each ordered pair's index, numbered in order
    mine, kept = scores[order].flatten(1), scores[keep][group].flatten(1)
    same = torch.isclose(mine, kept, rtol=0.0, atol=SAME_PAIR_ATOL, equal_nan=True)
    return torch.unique(ordered[~same.all(dim=1)])
