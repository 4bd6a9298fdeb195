"""The torchmetrics Metric: its states, update and compute, checkpoints and dataset indexes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bertscore_tm.lazy import exports

__all__ = ["BERTScore"]

__getattr__ = exports(__name__, {"BERTScore": "bertscore"})

if TYPE_CHECKING:
    from bertscore_tm.metric.bertscore import BERTScore
