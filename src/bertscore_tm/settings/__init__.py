"""Every setting once: its type, default, range and help, and the checks of a combination.

Public names are imported on first use (`bertscore_tm.lazy`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bertscore_tm.lazy import exports

__all__ = [
    "SETTINGS",
    "Config",
    "settings_table",
    "validate_arguments",
]

__getattr__ = exports(
    __name__,
    {
        "SETTINGS": "arguments",
        "Config": "config",
        "settings_table": "arguments",
        "validate_arguments": "arguments",
    },
)

if TYPE_CHECKING:
    from bertscore_tm.settings.arguments import SETTINGS, settings_table, validate_arguments
    from bertscore_tm.settings.config import Config
