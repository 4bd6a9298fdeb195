"""Command-line jobs on many processes, launched by torch's own launcher:

    torchrun --nproc-per-node 8 -m bertscore_tm score -c cands.txt -r refs.txt ...

Each process scores a contiguous shard of the lines (`Processes.shard`) on its own device (the GPU of its
`LOCAL_RANK` where there is one, else the CPU), the metric sums the IDF counts and gathers the per-pair scores
across processes in compute(), and only rank 0 writes the output, which is the output of one process: a
text's vectors do not depend on the batch it runs in (`bertscore_tm.embedding.embedder`), so every score is bit for
bit the same however the lines are split. Several nodes work the same way (`torchrun --nnodes N --node-rank
K --rdzv-endpoint HOST:PORT ...` on each node, the files at the same path on every node).

A process group is set up only when torchrun started the process with ``WORLD_SIZE`` > 1 (NCCL between GPUs,
gloo between CPUs) and torn down at the end; otherwise `processes()` is one process and sets up nothing. The
subcommands that score lines (``score``, ``compare``, ``pairwise``, ``baseline``) run the same way: open
`processes()`, score `shard(len(lines))`, write on `writes_output`; ``pairwise`` shards its candidate rows and
gathers the rows on rank 0.
"""

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
        """Whether this process writes the job's output (rank 0 alone)."""
        return self.rank == 0

    def shard(self, lines: int) -> tuple[int, int]:
        """This process's contiguous range of `lines`: (start, stop), earlier ranks one line more where the
        lines do not divide evenly; a process may get none.

        >>> [Processes(rank, 3).shard(10) for rank in range(3)]
        [(0, 4), (4, 7), (7, 10)]
        >>> Processes(3, 4).shard(2)
        (2, 2)
        """
        base, extra = divmod(lines, self.world_size)
        start = self.rank * base + min(self.rank, extra)
        return start, start + base + (self.rank < extra)


def launched() -> tuple[int, int, int]:
    """(rank, world size, local rank) as torchrun sets them in the environment; (0, 1, 0) when it did not."""
    world = int(os.environ.get("WORLD_SIZE", "1") or 1)
    if world <= 1:
        return 0, 1, 0
    return int(os.environ.get("RANK", "0")), world, int(os.environ.get("LOCAL_RANK", "0"))


def reports_errors() -> bool:
    """Whether this process reports user errors: every process finds the same mistake in its input, so only
    rank 0 prints it, once (the others just exit with the same code)."""
    return launched()[0] == 0


def local_device(device: str, local_rank: int) -> str:
    """The device of a process: a bare "cuda" means the GPU of its `LOCAL_RANK`; anything else as given.

    >>> local_device("cuda", 3), local_device("cuda:0", 3), local_device("cpu", 3)
    ('cuda:3', 'cuda:0', 'cpu')
    """
    return f"cuda:{local_rank}" if device == "cuda" else device


def import_collectives_first() -> None:
    """Import `torch.distributed.nn` while no process group is up, so that it never holds one.

    Its functions take the default group as a default argument (``group=group.WORLD``), evaluated when the
    module is first imported; loading a transformers model imports it (through torch's FSDP). First imported
    inside a process group, it holds that group after ``destroy_process_group()``: the group's gloo threads
    then run until the interpreter's teardown destroys the group with them (where PyTorch's own reports place
    aborts with "terminate called without an active exception"). The model loader imports it with itself, and
    `processes` before it sets up a group (docs/corpus-scale.md). Importing it inside a group is what would
    hold the group, so then it is left to whoever imports it.
    """
    import torch.distributed as dist

    if dist.is_available() and not dist.is_initialized():
        with suppress(ImportError):
            import torch.distributed.nn  # noqa: F401


@contextmanager
def processes(device: str) -> Iterator[Processes]:
    """This process's part of the job, in a process group while inside when torchrun launched several.

    `device` is the device asked for (already checked to exist): ``"cuda"`` becomes this process's own GPU.
    A process group that is already set up (by a program that runs several jobs) is used as it is and left up.
    """
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
