"""The per-token best similarities a `BERTScore` keeps between compute()s: which pairs are scored already, and
the embedding and matching of the others. A mixin, so that the Metric's module holds the torchmetrics protocol.

Pairs join the state in order, and a compute() scores every pair not scored yet, so the scored pairs are
nearly always the state's first ones and the new ones its last (`_new_entries`). Then only the new entries are
read, embedded, matched and appended: a compute() that scores a chunk while later pairs are still being
tokenised (`QueuedUpdates._score_queued`) costs the chunk's pairs, not the state's. Where scored and new pairs
alternate (after `merge_state`, or a checkpoint whose similarities another embedding made), the whole state
is read and the two parts interleaved.

On an accelerator the states live on the device, but planning the embedding and the matching is the host's
work: the metric keeps host copies of the entries it sent and has not scored yet (`HostCopies`), so that a
compute() (or a chunk of one) starts without a copy back from the device, which would wait for everything the
device was given before.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor
from torchmetrics.utilities.data import dim_zero_cat

from bertscore_tm.embedding.packing import send
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


class HostCopies:
    """Host copies of state entries sent to an accelerator, read in their place wherever the host needs the
    entries (`cat`): a copy back from the device waits for all the work the device was given, and the host
    would plan the next chunk while the device idles. An entry is known by its identity, so one that torchmetrics
    moved, merged into a new tensor or replaced is read from the device, as before. The copies are dropped once
    their pairs are scored (they are needed to plan the scoring only)."""

    def __init__(self) -> None:
        self._held: dict[int, tuple[Tensor, Tensor]] = {}  # id(sent) -> (sent, host): `sent` held, so ids stay unique

    def keep(self, sent: Tensor, host: Tensor) -> Tensor:
        """Note `host` as the copy of `sent` (a state entry, `host` sent to the device); return `sent`."""
        if needs_copy(sent.device):
            self._held[id(sent)] = (sent, host)
        return sent

    def cat(self, items: list[Tensor], dtype: torch.dtype, device: torch.device) -> Tensor:
        """`cat_state(items, dtype, device)`; on the host, each entry from its copy where one is held."""
        if device.type == "cpu":
            items = [self._copy_of(x) for x in items]
        return cat_state(items, dtype, device)

    def _copy_of(self, item: Tensor) -> Tensor:
        sent, host = self._held.get(id(item), (None, item))
        return host if sent is item else item

    def clear(self) -> None:
        self._held.clear()


def needs_copy(device: torch.device) -> bool:
    """Whether a state entry on `device` is worth a host copy: reading it back to the host costs a wait."""
    return device.type != "cpu"


class PendingScores:
    """`_score_pending` and `_pairs` over the Metric's list states (`STATES`), with host copies of the entries
    not scored yet (`_host_copies`)."""

    if TYPE_CHECKING:
        scorer: Any
        verbose: bool
        scored: list[Tensor]
        cand_ids: list[Tensor]
        cand_lens: list[Tensor]
        cand_best: list[Tensor]
        ref_best: list[Tensor]
        _host_copies: HostCopies

        @property
        def device(self) -> Any: ...

    def reset(self) -> None:
        self._host_copies.clear()
        super().reset()  # type: ignore[misc]

    def __getstate__(self) -> dict[str, Any]:
        """A copy or a pickle holds no host copies: they are known by the identity of this metric's entries."""
        state: dict[str, Any] = super().__getstate__()  # type: ignore[assignment]
        return {**state, "_host_copies": HostCopies()}

    def _pairs(self, device: torch.device, entries: slice = slice(None)) -> PairTokens:
        """The state's pairs (of the list `entries`) as one set of tensors on `device` (ids int32, lengths and
        counts int64); on the host, from the copies where they are held."""
        ids, lens, r_ids, r_lens, counts = (
            self._host_copies.cat(getattr(self, name)[entries], torch.int32, device) for name in TOKEN_STATES
        )
        return PairTokens(ids, lens.long(), r_ids, r_lens.long(), counts.long())

    def _score_pending(self) -> None:
        """Embed and match the pairs no earlier compute() scored; keep their per-token best similarities."""
        self.scorer.follow(self.device)  # clones share a loaded model: it goes where this one computes
        scored = self._host_copies.cat(self.scored, torch.bool, torch.device("cpu"))
        if scored.numel() == 0 or bool(scored.all()):
            return
        home = self.cand_ids[0].device  # where the states live
        first = _new_entries(self.cand_lens, scored)
        if first is None:
            self._score_interleaved(~scored, home)
        else:
            self._score_new_entries(first, home)
        self._host_copies.clear()  # every pair is scored: no copy is needed again
        done = torch.ones(len(scored), dtype=torch.bool)
        self.scored = [self._host_copies.keep(send(done, home), done)]

    def _score_new_entries(self, first: int, home: torch.device) -> None:
        """Score the pairs of the list entries from `first` on (all new, all before them scored) and append
        their best similarities; the new entries become one per state (so they are freed, not held twice)."""
        pairs = self._pairs(torch.device("cpu"), slice(first, None))
        for name in TOKEN_STATES:
            entries = getattr(self, name)
            setattr(self, name, [*entries[:first], cat_state(entries[first:], torch.int32, home)])
        new = match_pairs(self.scorer, pairs, torch.ones(len(pairs.ref_counts), dtype=torch.bool), self.verbose)
        self.cand_best = [*self.cand_best, new.cand_best.to(home)]
        self.ref_best = [*self.ref_best, new.ref_best.to(home)]

    def _score_interleaved(self, is_new: Tensor, home: torch.device) -> None:
        """Score the pairs marked `is_new` where scored ones come between them: the whole state is read, and
        the best similarities of the old and the new pairs interleaved in pair order."""
        pairs = self._pairs(torch.device("cpu"))
        for name in TOKEN_STATES:  # one tensor per state from now on (the chunks freed, not held twice)
            setattr(self, name, [cat_state(getattr(self, name), torch.int32, home)])
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
