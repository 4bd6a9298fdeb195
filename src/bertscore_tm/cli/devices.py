"""The device a command runs on, checked before any model loads; under torchrun each process
takes the GPU of its ``LOCAL_RANK``."""

from __future__ import annotations

import contextlib
import warnings

from bertscore_tm.cli.errors import UsageError, one_line
from bertscore_tm.distributed.launch import launched, local_device


def device(name: str | None) -> str:
    """The device asked for, checked to hold tensors (before any model loads); else cuda if available, else cpu."""
    import torch

    if name is None:
        return "cuda" if torch.cuda.is_available() else "cpu"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch warns that some names ('mkldnn') are going away
        try:
            parsed = torch.device(name)
        except (RuntimeError, ValueError) as err:
            raise UsageError(f"--device {name} is not a torch device ({one_line(err)})") from None
    if parsed.type == "meta":
        raise UsageError(
            f"--device {name}: meta tensors have shapes but no values, so nothing can be scored there; "
            f"use {_usable_devices()}"
        )
    if parsed.type == "cuda" and not torch.cuda.is_available():
        raise UsageError(f"--device {name}: CUDA is not available on this machine (torch {torch.__version__})")
    if parsed.type == "cuda" and parsed.index is not None and parsed.index >= torch.cuda.device_count():
        raise UsageError(f"--device {name}: this machine has {torch.cuda.device_count()} CUDA device(s)")
    if parsed.type != "cpu":
        try:
            torch.empty(1, device=parsed)
        except Exception:
            raise UsageError(
                f"--device {name} is not available on this machine (torch {torch.__version__} cannot put a tensor "
                f"there); use {_usable_devices()}"
            ) from None
    return name


def process_device(name: str | None) -> str:
    """`device`; under torchrun a bare ``cuda`` becomes this process's GPU, and a GPU named by index is
    refused, since every process would take that one GPU."""
    import torch

    _, world, local_rank = launched()
    if world <= 1:
        return device(name)
    parsed = None
    with contextlib.suppress(RuntimeError, ValueError):  # a bad name: `device` reports it
        parsed = None if name is None else torch.device(name)
    if parsed is not None and parsed.type == "cuda" and parsed.index is not None:
        raise UsageError(
            f"--device {name}: torchrun started {world} processes, and each uses the GPU of its LOCAL_RANK; "
            "pass --device cuda (or choose the GPUs with CUDA_VISIBLE_DEVICES)"
        )
    return device(local_device(device(None) if name is None else name, local_rank))


def one_process(command: str) -> None:
    """Refuse a command that does not split its work when torchrun started several processes."""
    world = launched()[1]
    if world > 1:
        raise UsageError(
            f"{command} runs in one process; torchrun started {world} (WORLD_SIZE={world}): run it without torchrun "
            "(score, compare, pairwise and baseline run on several processes)"
        )


def _usable_devices() -> str:
    import torch

    return "cpu or cuda" if torch.cuda.is_available() else "cpu (this machine has no CUDA device)"
