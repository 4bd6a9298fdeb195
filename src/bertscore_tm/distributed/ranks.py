"""The exchanges between ranks. Ranks set up differently would exchange tensors of different shapes and hang
until the timeout, so every collective compute() first exchanges one fixed-size digest of the settings."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch
import torch.distributed as dist
from torch import Tensor

from bertscore_tm.errors import SettingsMismatchError

#: How a tensor is gathered from every rank: ``fn(tensor, group=group)`` -> one tensor per rank, in rank order.
GatherFn = Callable[..., Sequence[Tensor]]


def job_place() -> tuple[int, int]:
    """(rank, world size) of this process, (0, 1) without a process group."""
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def settings_digest(settings: Mapping[str, object]) -> int:
    """A signed 64-bit digest of the settings, order-independent.

    >>> settings_digest({"idf": True, "num_layers": 5}) == settings_digest({"num_layers": 5, "idf": True})
    True
    >>> settings_digest({"idf": True}) == settings_digest({"idf": False})
    False
    """
    text = repr(sorted((name, repr(value)) for name, value in settings.items()))
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "little", signed=True)


def first_difference(per_rank: list[Mapping[str, object]]) -> tuple[str, list[object]] | None:
    """The first setting whose value differs between ranks, with each rank's value; None where all agree.

    >>> first_difference([{"model": "m", "idf": False}, {"model": "m", "idf": True}])
    ('idf', [False, True])
    """
    for name in dict.fromkeys(name for settings in per_rank for name in settings):
        values = [settings.get(name) for settings in per_rank]
        if any(repr(v) != repr(values[0]) for v in values[1:]):
            return name, values
    return None


def check_same_settings(
    settings: Mapping[str, object], group: Any, device: torch.device, gather_fn: GatherFn | None = None
) -> None:
    """Raise `SettingsMismatchError` on every rank unless all have the same `settings`. Collective: call it on every
    rank before any other exchange; the settings themselves are gathered only where the digests differ."""
    world = dist.get_world_size(group)
    mine = torch.tensor([settings_digest(settings)], dtype=torch.int64, device=device)
    digests = gather(mine, group, gather_fn)
    if all(bool((d == mine).all()) for d in digests):
        return
    per_rank: list[Any] = [None] * world
    dist.all_gather_object(per_rank, dict(settings), group=group)
    name, values = first_difference(per_rank) or ("settings", [settings_digest(s) for s in per_rank])
    listed = ", ".join(f"{_short(v)} on rank {rank}" for rank, v in enumerate(values))
    raise SettingsMismatchError(
        f"The {world} processes of this distributed job set up BERTScore differently, so their scores cannot be "
        f"combined: {name} is {listed}. Create the metric with the same arguments on every rank.",
        setting=name,
        values=values,
    )


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def gather(tensor: Tensor, group: Any, gather_fn: GatherFn | None = None) -> list[Tensor]:
    """Every rank's `tensor` (first dimensions may differ), in rank order, through `gather_fn` (a Metric's
    ``dist_sync_fn``) where given, else torchmetrics' `gather_all_tensors`."""
    if gather_fn is None:
        from torchmetrics.utilities.distributed import gather_all_tensors

        gather_fn = gather_all_tensors
    return list(gather_fn(tensor.contiguous(), group=group))
