"""The folder holding mbrs's plug-in for this package: mbrs puts it on `sys.path` and imports the plug-in
(`bertscore_tm_mbrs`) by its own name, so nothing else may live here."""

from __future__ import annotations

__all__: list[str] = []
