"""Dataset indexes: one pair per index, so the repeats a distributed sampler pads in count once. Every
decision is a pure function of the gathered indexes and scores, so every rank takes the same one without
exchanging more."""

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
    """`keep`: gathered positions of the pairs kept, in index order; `dropped`: which of this rank's pairs
    repeat an earlier index."""

    keep: Tensor
    dropped: Tensor


def _sorted(indexes: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """The stable sort of `indexes` (order, ordered) and which ordered entries are the first of their index."""
    order = torch.argsort(indexes, stable=True)
    ordered = indexes[order]
    first = torch.ones_like(ordered, dtype=torch.bool)
    first[1:] = ordered[1:] != ordered[:-1]
    return order, ordered, first


def deduplicate(indexes: Tensor, offset: int, num_local: int) -> Deduplication:
    """The first pair of each index, ordered by index, from indexes gathered rank-major (this rank's are
    ``offset .. offset + num_local``).

    >>> d = deduplicate(torch.tensor([4, 0, 2, 1, 3, 4]), offset=3, num_local=3)
    >>> d.keep.tolist(), d.dropped.tolist()
    ([1, 3, 2, 4, 0], [False, False, True])
    """
    order, _, first = _sorted(indexes)
    keep = order[first]
    repeated = torch.ones_like(indexes, dtype=torch.bool)
    repeated[keep] = False
    return Deduplication(keep, repeated[offset : offset + num_local])


#: How far a repeat's P, R or F may be from the kept pair's and still be the same pair. On a CPU the very same
#: pair scores bit for bit alike (a text's vectors do not depend on the batch or process it runs in); the margin
#: keeps an accelerator's matrix kernels, which may round a row by the batch's shape, from raising false alarms.
SAME_PAIR_ATOL = 1e-3


def conflicting_indexes(indexes: Tensor, keep: Tensor, scores: Tensor) -> Tensor:
    """The indexes whose repeats score otherwise than the pair kept by more than `SAME_PAIR_ATOL`: they
    hold another candidate or reference, a user's mistake (a different pair scoring within it is not found)."""
    order, ordered, first = _sorted(indexes)
    group = torch.cumsum(first.long(), 0) - 1  # each ordered pair's index, numbered in order
    mine, kept = scores[order].flatten(1), scores[keep][group].flatten(1)
    same = torch.isclose(mine, kept, rtol=0.0, atol=SAME_PAIR_ATOL, equal_nan=True)
    return torch.unique(ordered[~same.all(dim=1)])


def checked_indexes(indexes: object, count: int) -> Tensor:
    """`indexes` as int64, one dataset index per candidate, by the settings' rule; an error otherwise."""
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
    """Which pairs of every rank count at compute(): exchanged with the other ranks when `collective`, one pair
    kept per dataset index; `any_context` says whether any rank's pair had a context, from the same exchange."""

    def __init__(
        self,
        num_local: int,
        indexes: Tensor,
        contexts: int,
        collective: bool,
        group: Any,
        gather_fn: GatherFn | None = None,
    ) -> None:
        counts = torch.tensor([[num_local, len(indexes), contexts]])  # per rank, read on the host
        offset = 0  # where this rank's pairs start among the gathered ones
        if collective:
            counts = torch.stack(gather(counts[0].to(indexes.device), group, gather_fn)).cpu()
            indexes = torch.cat(gather(indexes, group, gather_fn))
            offset = int(counts[: torch.distributed.get_rank(group), 0].sum())
        self.indexes = indexes
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
        #: This rank's pairs whose index repeats an earlier pair's (None without indexes).
        self.dropped = None if self.dedup is None else self.dedup.dropped

    def kept(self, scores: Tensor) -> Tensor:
        """The gathered scores of the pairs kept, warning where an index was repeated with another pair."""
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
