"""Several systems against the same references: bootstrap intervals and paired significance tests."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bertscore_tm.lazy import exports

__all__ = [
    "bootstrap_interval",
    "paired_test",
    "score_systems",
]

__getattr__ = exports(
    __name__,
    {
        "bootstrap_interval": "significance",
        "paired_test": "significance",
        "score_systems": "systems",
    },
)

if TYPE_CHECKING:
    from bertscore_tm.comparison.significance import bootstrap_interval, paired_test
    from bertscore_tm.comparison.systems import score_systems
