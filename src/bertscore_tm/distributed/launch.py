"""Command-line jobs on many processes launched by torchrun: each process scores a contiguous shard of the
lines on its own device, and rank 0 alone writes the output. A text's vectors do not depend on its batch, so
the output is one process's bit for bit. Docs: docs/corpus-scale.md."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import timedelta

#: How long a collective waits for the other processes (loading a large model on a slow disk included).
TIMEOUT = timedelta(minutes=30)


@dataclass(frozen=True)
class Processes:
    """This process's place in the job: its rank among `world_size` processes, and the device it scores on."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    device: str = "cpu"

    @property
    def writes_output(self) -> bool:
        return self.rank == 0

    def shard(self, lines: int) -> tuple[int, int]:
        """This process's contiguous (start, stop) of `lines`, earlier ranks one more where they do not divide evenly.

        >>> [Processes(rank, 3).shard(10) for rank in range(3)]
        [(0, 4), (4, 7), (7, 10)]
        >>> Processes(3, 4).shard(2)
        (2, 2)
        """
        base, extra = divmod(lines, self.world_size)
        start = self.rank * base + min(self.rank, extra)
        return start, start + base + (self.rank < extra)


def launched() -> tuple[int, int, int]:
    """(rank, world size, local rank) as torchrun sets them; (0, 1, 0) when it did not."""
    world = int(os.environ.get("WORLD_SIZE", "1") or 1)
    if world <= 1:
        return 0, 1, 0
    return int(os.environ.get("RANK", "0")), world, int(os.environ.get("LOCAL_RANK", "0"))


def reports_errors() -> bool:
    """Every process finds the same mistake in its input, so only rank 0 reports it."""
    return launched()[0] == 0


def local_device(device: str, local_rank: int) -> str:
    """A bare ``"cuda"`` means the GPU of the process's `LOCAL_RANK`.

    >>> local_device("cuda", 3), local_device("cuda:0", 3), local_device("cpu", 3)
    ('cuda:3', 'cuda:0', 'cpu')
    """
    return f"cuda:{local_rank}" if device == "cuda" else device


def import_collectives_first() -> None:
    """Import `torch.distributed.nn` (loading a model imports it) while no process group is up: it binds the
    default group when first imported, and would hold a group after ``destroy_process_group()``, its threads
    aborting at teardown. Docs: docs/corpus-scale.md."""
    import torch.distributed as dist

    if dist.is_available() and not dist.is_initialized():
        with suppress(ImportError):
            import torch.distributed.nn  # noqa: F401


@contextmanager
def processes(device: str) -> Iterator[Processes]:
    """This process's part of the job, in a process group while inside where torchrun launched several; a group
    already set up (by a program running several jobs) is used as it is and left up."""
    rank, world, local_rank = launched()
    device = local_device(device, local_rank) if world > 1 else device
    if world == 1:
        yield Processes(device=device)
        return
    import torch
    import torch.distributed as dist

    gpu = device.startswith("cuda")
    if gpu:
        torch.cuda.set_device(torch.device(device))
    if dist.is_initialized():
        yield Processes(dist.get_rank(), dist.get_world_size(), local_rank, device)
        return
    import_collectives_first()  # so that destroy_process_group() below really ends the group
    dist.init_process_group("nccl" if gpu else "gloo", rank=rank, world_size=world, timeout=TIMEOUT)
    try:
        yield Processes(rank, world, local_rank, device)
        dist.barrier()  # every process done before any tears down its connections
    finally:
        dist.destroy_process_group()
