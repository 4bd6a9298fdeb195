"""Many processes: torch's launcher (torchrun) and what ranks exchange; names imported on first use."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bertscore_tm.lazy import exports

__all__ = [
    "check_same_settings",
    "gather",
    "launched",
    "local_device",
]

__getattr__ = exports(
    __name__,
    {
        "launched": "launch",
        "local_device": "launch",
        "check_same_settings": "ranks",
        "gather": "ranks",
    },
)

if TYPE_CHECKING:
    from bertscore_tm.distributed.launch import launched, local_device
    from bertscore_tm.distributed.ranks import check_same_settings, gather
