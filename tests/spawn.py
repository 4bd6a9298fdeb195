"""The harness the distributed tests share: a worker runs in several spawned processes joined in one gloo
group on the loopback interface, each saves what it saw, and the test reads every rank's result back.

A test module defines a top-level worker ``worker(rank, port, *args, out_dir)`` (spawned processes import it
by name), opens the group with `process_group` and ends with `save_rank`; `run_ranks` starts the processes,
waits for them within a deadline (a hung collective fails the test instead of hanging the suite) and returns
the saved results in rank order.
"""

from __future__ import annotations

import os
import socket
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import torch


def free_port() -> int:
    """A TCP port nothing listens on now (the group's rendezvous)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def process_group(rank: int, port: int, world: int, timeout_s: float = 90) -> Iterator[None]:
    """This process as `rank` of a gloo group of `world` on the loopback interface, one thread, offline."""
    import torch.distributed as dist

    os.environ["GLOO_SOCKET_IFNAME"] = "lo"
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    torch.set_num_threads(1)
    dist.init_process_group(
        "gloo",
        init_method=f"tcp://127.0.0.1:{port}",
        rank=rank,
        world_size=world,
        timeout=timedelta(seconds=timeout_s),
    )
    try:
        yield
    finally:
        dist.destroy_process_group()


def save_rank(out_dir: str, rank: int, result: Any) -> None:
    torch.save(result, Path(out_dir) / f"rank{rank}.pt")


def run_ranks(worker: Callable[..., None], *args: Any, world: int = 2, timeout_s: float = 240) -> list[Any]:
    """Run ``worker(rank, port, *args, out_dir)`` on `world` spawned processes and return what each saved."""
    import torch.multiprocessing as mp

    with tempfile.TemporaryDirectory() as out_dir:
        context = mp.start_processes(
            worker, args=(free_port(), *args, out_dir), nprocs=world, join=False, start_method="spawn"
        )
        deadline = time.monotonic() + timeout_s
        try:
            while not context.join(timeout=2):
                if time.monotonic() > deadline:
                    pytest.fail(f"distributed workers did not finish within {timeout_s} s")
        finally:
            for process in context.processes:
                if process.is_alive():
                    process.terminate()
                    process.join(5)
        return [torch.load(Path(out_dir) / f"rank{r}.pt", weights_only=False) for r in range(world)]
