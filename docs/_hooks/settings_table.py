"""MkDocs hook: the table of the Metric's arguments in docs/metric.md is made from `bertscore_tm.settings.arguments.SETTINGS`
(each setting's default, what it does and where to read more, declared once in the code), in place of the marker
``<!-- settings-table -->``. A page without the marker is left as it is."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

MARKER = "<!-- settings-table -->"


def on_page_markdown(markdown: str, page: Any, **kwargs: Any) -> str:
    if MARKER not in markdown:
        return markdown
    source = str(Path(__file__).resolve().parents[2] / "src")
    if source not in sys.path:
        sys.path.insert(0, source)
    from bertscore_tm.settings.arguments import settings_table

    return markdown.replace(MARKER, settings_table())
