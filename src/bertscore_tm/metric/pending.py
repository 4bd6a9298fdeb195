"""The per-token best similarities a `BERTScore` keeps between compute()s: which pairs are scored already, and
the embedding and matching of the others. A mixin, so that the Metric's module holds the torchmetrics protocol.

Pairs join the state in order, and a compute() scores every pair not scored yet, so the scored pairs are
nearly always the state's first ones and the new ones its last (`_new_entries`). Then only the new entries are
read, embedded, matched and appended: a compute() that scores a chunk while later pairs are still being
tokenised (`QueuedUpdates._score_queued`) costs the chunk's pairs, not the state's. Where scored and new pairs
alternate (after `merge_state`, or a checkpoint whose similarities another embedding made), the whole state
is read and the two parts interleaved.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor
from torchmetrics.utilities.data import dim_zero_cat

from bertscore_tm.engines.paired import PairTokens, interleave, match_pairs

#: The Metric's list states: each update() appends one entry to the first six (and to `indexes` with indexes).
STATES = ("cand_ids", "cand_lens", "ref_ids", "ref_lens", "ref_counts", "scored", "cand_best", "ref_best", "indexes")
TOKEN_STATES = STATES[:5]  # the pairs' token ids, lengths and references per candidate


def cat_state(items: list[Tensor] | Tensor, dtype: torch.dtype, device: torch.device) -> Tensor:
    """A list state as one tensor on `device` (an empty one of `dtype` for no entries)."""
    if isinstance(items, Tensor):
        return items.to(device)
    if not items:
        return torch.zeros(0, dtype=dtype, device=device)
    return dim_zero_cat([x.to(device) for x in items])


class PendingScores:
    """`_score_pending` and `_pairs` over the Metric's list states (`STATES`)."""

    if TYPE_CHECKING:
        scorer: Any
        verbose: bool
        scored: list[Tensor]
        cand_ids: list[Tensor]
        cand_lens: list[Tensor]
        cand_best: list[Tensor]
        ref_best: list[Tensor]

        @property
        def device(self) -> Any: ...

    def _pairs(self, device: torch.device, entries: slice = slice(None)) -> PairTokens:
        """The state's pairs (of the list `entries`) as one set of tensors on `device` (ids int32, lengths and
        counts int64)."""
        ids, lens, r_ids, r_lens, counts = (
            cat_state(getattr(self, name)[entries], torch.int32, device) for name in TOKEN_STATES
        )
        return PairTokens(ids, lens.long(), r_ids, r_lens.long(), counts.long())

    def _score_pending(self) -> None:
        """Embed and match the pairs no earlier compute() scored; keep their per-token best similarities."""
        self.scorer.follow(self.device)  # clones share a loaded model: it goes where this one computes
        scored = cat_state(self.scored, torch.bool, torch.device("cpu"))  # one read from the device
        if scored.numel() == 0 or bool(scored.all()):
            return
        home = self.cand_ids[0].device  # where the states live
        first = _new_entries(self.cand_lens, scored)
        if first is None:
            self._score_interleaved(~scored, home)
        else:
            self._score_new_entries(first, home)
        self.scored = [torch.ones(len(scored), dtype=torch.bool, device=home)]

    def _score_new_entries(self, first: int, home: torch.device) -> None:
        """Score the pairs of the list entries from `first` on (all new, all before them scored) and append
        their best similarities; the new entries become one per state (so they are freed, not held twice)."""
        for name in TOKEN_STATES:
            entries = getattr(self, name)
            setattr(self, name, [*entries[:first], cat_state(entries[first:], torch.int32, home)])
        pairs = self._pairs(torch.device("cpu"), slice(first, None))
        new = match_pairs(self.scorer, pairs, torch.ones(len(pairs.ref_counts), dtype=torch.bool), self.verbose)
        self.cand_best = [*self.cand_best, new.cand_best.to(home)]
        self.ref_best = [*self.ref_best, new.ref_best.to(home)]

    def _score_interleaved(self, is_new: Tensor, home: torch.device) -> None:
        """Score the pairs marked `is_new` where scored ones come between them: the whole state is read, and
        the best similarities of the old and the new pairs interleaved in pair order."""
        for name in TOKEN_STATES:  # one tensor per state from now on (the chunks freed, not held twice)
            setattr(self, name, [cat_state(getattr(self, name), torch.int32, home)])
        pairs = self._pairs(torch.device("cpu"))
        new = match_pairs(self.scorer, pairs, is_new, verbose=self.verbose)
        old_c, old_r = (cat_state(getattr(self, n), torch.float32, self.device) for n in ("cand_best", "ref_best"))
        self.cand_best = [interleave(old_c, new.cand_best, is_new, pairs.cand_lens * pairs.ref_counts).to(home)]
        ref_tokens = torch.repeat_interleave(is_new, pairs.ref_counts)
        self.ref_best = [interleave(old_r, new.ref_best, ref_tokens, pairs.ref_lens).to(home)]


def _new_entries(cand_lens: list[Tensor], scored: Tensor) -> int | None:
    """The index of the first list entry (of every token state: `cand_lens` has a length a pair) whose pairs are
    all new, where every pair before it is scored and every pair from it on new (at least one is); None where
    scored and new pairs alternate, or an entry holds both."""
    done = int(scored.logical_not().nonzero()[0])  # the first new pair
    if bool(scored[done:].any()):
        return None
    start = 0
    for k, entry in enumerate(cand_lens):
        if start == done:
            return k
        start += len(entry)
    return None
