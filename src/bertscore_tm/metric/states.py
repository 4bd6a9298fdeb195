"""The Metric's list states. Pairs join in order and compute() scores all new ones, so the scored pairs are
nearly always the first entries (`new_entries`). Best similarities are kept as their int32 bits, so that a
dtype conversion of the module (Lightning's "16-true") cannot round them."""

from __future__ import annotations

import weakref
from typing import Any

import torch
from torch import Tensor
from torchmetrics.utilities.data import dim_zero_cat

#: The Metric's list states: each update() appends an entry to the pairs' (`TOKEN_STATES`: ids, lengths and the
#: marks of a prompt's or a context's tokens), `scored`, `has_context` (and `indexes` with indexes); a compute()
#: appends the new pairs' best similarities.
TOKEN_STATES = ("cand_ids", "cand_lens", "cand_marked", "ref_ids", "ref_lens", "ref_marked", "ref_counts")
STATES = (*TOKEN_STATES, "scored", "cand_best", "ref_best", "indexes", "has_context")


def token_dtype(name: str) -> torch.dtype:
    """The dtype of a `TOKEN_STATES` state: bool marks, int32 ids and counts."""
    return torch.bool if name.endswith("_marked") else torch.int32


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
    """A list state of similarities' bits as one float32 tensor (a float entry, saved before the bits, as it is)."""
    parts = [x if x.is_floating_point() else x.view(torch.float32) for x in items]
    return cat_state(parts, torch.float32, device).float()


def pair_count(scored: Any) -> int:
    """How many pairs a `scored` state (a list of flags, or one tensor) holds."""
    return sum(len(x) for x in scored) if isinstance(scored, list) else len(scored)


def new_entries(cand_lens: list[Tensor], scored: Tensor) -> int | None:
    """The first list entry from which every pair is new, where every pair before it is scored; None where
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
    """Host copies of entries sent to an accelerator, read in their place on the host: reading back waits for
    all the device's work, and the host would plan while the device idles. Entries are known by identity (held
    weakly), so one torchmetrics moved or replaced is read from the device; copies are never pickled."""

    def __init__(self) -> None:
        self._held: dict[int, tuple[weakref.ref[Tensor], Tensor]] = {}  # id(sent) -> (sent, host)

    def keep(self, sent: Tensor, host: Tensor) -> Tensor:
        """Note `host` as the copy of the entry `sent`; return `sent`."""
        if needs_copy(sent.device):
            self._held[id(sent)] = (weakref.ref(sent), host)
        return sent

    def cat(self, items: list[Tensor], dtype: torch.dtype, device: torch.device) -> Tensor:
        """`cat_state`, on the host from the copies where held."""
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


def needs_copy(device: torch.device) -> bool:
    """Whether an entry on `device` is worth a host copy: reading it back costs a wait."""
    return device.type != "cpu"
