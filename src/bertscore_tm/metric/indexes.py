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
from typing import Any

import torch
from torch import Tensor

from bertscore_tm.distributed.ranks import GatherFn, gather
from bertscore_tm.errors import ArgumentValueError, warn_user
from bertscore_tm.settings import rules


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


def checked_indexes(indexes: object, count: int) -> Tensor:
    """`indexes` as an int64 tensor of one dataset index per candidate (`count`), by the settings' rule for
    indexes (a sequence, an integer array or tensor, of integers from 0): an error naming ``indexes`` otherwise."""
    index_list = rules.indexes("indexes", indexes)
    if len(index_list) != count:
        raise ArgumentValueError(
            f"indexes has {len(index_list)} entries for {count} predictions: give one dataset index per pair",
            argument="indexes",
            allowed=f"{count} indexes",
            value=len(index_list),
            others=("preds",),
        )
    return torch.tensor(index_list, dtype=torch.long)


class PairPlan:
    """Which pairs of every rank count at compute(): this rank's `num_local` pairs and their dataset `indexes`
    (empty where none were passed), exchanged with the other ranks when `collective` (through `gather_fn`, a
    Metric's ``dist_sync_fn``); one pair kept per dataset index (the repeats a distributed sampler pads in leave
    the scores and the IDF counts). `contexts` is how many of this rank's pairs had a context: `any_context`
    says whether any rank's did (the hash code names it), from the same exchange."""

    def __init__(
        self,
        num_local: int,
        indexes: Tensor,
        contexts: int,
        collective: bool,
        group: Any,
        gather_fn: GatherFn | None = None,
    ) -> None:
        self.indexes = indexes
        offset, total = 0, num_local
        has_indexes = len(indexes) == num_local
        mixed = len(indexes) > 0 and not has_indexes
        self.any_context = contexts > 0
        if collective:
            mine = torch.tensor([num_local, len(indexes), contexts], device=indexes.device)
            counts = torch.stack(gather(mine, group, gather_fn))
            self.indexes = torch.cat(gather(indexes, group, gather_fn))
            offset = int(counts[: torch.distributed.get_rank(group), 0].sum())
            total = int(counts[:, 0].sum())
            has_indexes = bool((counts[:, 1] == counts[:, 0]).all())
            mixed = bool((counts[:, 1] > 0).any()) and not has_indexes
            self.any_context = bool((counts[:, 2] > 0).any())
        if mixed:
            raise ArgumentValueError(
                "indexes must be passed to every update() or to none of them",
                argument="indexes",
                allowed="indexes in every update(), or in none",
                value=len(self.indexes),
            )
        if total == 0:  # no pairs is an error at every door (docs/semantics.md, "No pairs")
            raise ArgumentValueError(
                "BERTScore.compute() has no pairs to score: call update(preds, target) with at least one pair first",
                argument="preds",
                allowed="at least one pair",
                value=0,
            )
        self.dedup = deduplicate(self.indexes, offset, num_local) if has_indexes else None

    @property
    def dropped(self) -> Tensor | None:
        """This rank's pairs whose index repeats an earlier pair's (None without indexes)."""
        return None if self.dedup is None else self.dedup.dropped

    def kept(self, scores: Tensor) -> Tensor:
        """The gathered scores of the pairs kept; a repeat scoring otherwise than the pair kept is another pair
        passed with the same index, warned about (from the gathered scores alone, so alike on every rank)."""
        if self.dedup is None:
            return scores
        conflicting = conflicting_indexes(self.indexes, self.dedup.keep, scores)
        if len(conflicting):
            shown = ", ".join(str(i) for i in conflicting[:5].tolist()) + (", ..." if len(conflicting) > 5 else "")
            warn_user(
                f"{len(conflicting)} dataset index(es) ({shown}) were passed with different pairs (another "
                "candidate or reference): each index keeps the first pair passed with it (in update() order; "
                "across processes, the lowest rank's first) and its other pairs are left out. Only the very same "
                "pair may repeat an index (a distributed sampler's padding): give every pair of the dataset its "
                "own index."
            )
        return scores[self.dedup.keep]
