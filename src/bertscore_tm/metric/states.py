"""The Metric's list states: their names, one tensor from a list state, the kept similarities as their bits, and
the host's copies of entries sent to an accelerator.

Pairs join the state in order and a compute() scores every pair not scored yet, so the scored pairs are nearly
always the state's first entries and the new ones its last (`new_entries`): then only those are read, embedded,
matched and appended. The per-token best similarities are float32 kept as their int32 bits: a dtype conversion of
the module (`.to(torch.float16)`, as Lightning's "16-true" makes it) casts floating tensors only, so no conversion
can round them; the token ids and flags are integers and booleans already.
"""

from __future__ import annotations

import weakref
from typing import Any

import torch
from torch import Tensor
from torchmetrics.utilities.data import dim_zero_cat

#: The Metric's list states: each update() appends one entry to the first six and to `has_context` (and to
#: `indexes` with indexes); a compute() appends the new pairs' best similarities.
STATES = (
    "cand_ids",
    "cand_lens",
    "ref_ids",
    "ref_lens",
    "ref_counts",
    "scored",
    "cand_best",
    "ref_best",
    "indexes",
    "has_context",
)
TOKEN_STATES = STATES[:5]  # the pairs' token ids, lengths and references per candidate


def cat_state(items: list[Tensor] | Tensor, dtype: torch.dtype, device: torch.device) -> Tensor:
    """A list state as one tensor on `device` (an empty one of `dtype` for no entries)."""
    if isinstance(items, Tensor):
        return items.to(device)
    if not items:
        return torch.zeros(0, dtype=dtype, device=device)
    return dim_zero_cat([x.to(device) for x in items])


def as_bits(similarities: Tensor) -> Tensor:
    """Float32 similarities as the int32 tensor of their bits (the state's form)."""
    return similarities.to(torch.float32).contiguous().view(torch.int32)


def similarities(items: list[Tensor], device: torch.device) -> Tensor:
    """A list state of similarities' bits as one float32 tensor on `device` (a float entry, saved before the
    bits, as it is)."""
    parts = [x if x.is_floating_point() else x.view(torch.float32) for x in items]
    return cat_state(parts, torch.float32, device).float()


def pair_count(scored: Any) -> int:
    """How many pairs a `scored` state (a list of flags, or one tensor) holds."""
    return sum(len(x) for x in scored) if isinstance(scored, list) else len(scored)


def new_entries(cand_lens: list[Tensor], scored: Tensor) -> int | None:
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


class HostCopies:
    """Host copies of state entries sent to an accelerator, read in their place wherever the host needs the
    entries (`cat`): a copy back from the device waits for all the work the device was given, and the host
    would plan the next scoring while the device idles. An entry is known by its identity (held weakly), so one
    that torchmetrics moved, merged into a new tensor or replaced is read from the device, as before. The copies
    are dropped once their pairs are scored (they are needed to plan the scoring only), and never copied or
    pickled with the metric (they are known by this metric's entries)."""

    def __init__(self) -> None:
        self._held: dict[int, tuple[weakref.ref[Tensor], Tensor]] = {}  # id(sent) -> (sent, host)

    def keep(self, sent: Tensor, host: Tensor) -> Tensor:
        """Note `host` as the copy of `sent` (a state entry, `host` sent to the device); return `sent`."""
        if needs_copy(sent.device):
            self._held[id(sent)] = (weakref.ref(sent), host)
        return sent

    def cat(self, items: list[Tensor], dtype: torch.dtype, device: torch.device) -> Tensor:
        """`cat_state(items, dtype, device)`; on the host, each entry from its copy where one is held."""
        if device.type == "cpu":
            items = [self._copy_of(x) for x in items]
        return cat_state(items, dtype, device)

    def _copy_of(self, item: Tensor) -> Tensor:
        sent, host = self._held.get(id(item), (None, item))
        return host if sent is not None and sent() is item else item

    def clear(self) -> None:
        self._held.clear()

    def __len__(self) -> int:
        return sum(sent() is not None for sent, _ in self._held.values())

    def __getstate__(self) -> dict[str, Any]:
        return {"_held": {}}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._held = {}


def needs_copy(device: torch.device) -> bool:
    """Whether a state entry on `device` is worth a host copy: reading it back to the host costs a wait."""
    return device.type != "cpu"
