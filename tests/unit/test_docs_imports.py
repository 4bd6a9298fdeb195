"""Every import the documentation shows works as shown: each `from bertscore_tm... import ...` or
`import bertscore_tm...` line of README.md and docs/*.md is run, and each dotted name `bertscore_tm.x.y` the pages
mention resolves to a module or an attribute. A page that still names a module from before a move fails here."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
IMPORT = re.compile(r"^\s*(?:>>> )?((?:from bertscore_tm[\w.]* import [\w, ]+)|(?:import bertscore_tm[\w.]*))", re.M)
DOTTED = re.compile(r"\bbertscore_tm(?:\.\w+)+")


def _imports() -> list[tuple[str, str]]:
    found = set()
    for page in PAGES:
        for match in IMPORT.finditer(page.read_text(encoding="utf-8")):
            found.add((page.name, match.group(1).strip().rstrip(",")))
    return sorted(found)


def _dotted_names() -> list[tuple[str, str]]:
    found = set()
    for page in PAGES:
        for match in DOTTED.finditer(page.read_text(encoding="utf-8")):
            found.add((page.name, match.group(0)))
    return sorted(found)


def test_the_pages_show_imports() -> None:
    assert len(_imports()) >= 10 and len(_dotted_names()) >= 20


@pytest.mark.parametrize(("page", "statement"), _imports())
def test_every_import_shown_runs(page: str, statement: str) -> None:
    exec(statement, {})  # a failure names the page and the statement in the test's id


def _resolves(dotted: str) -> bool:
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            value = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        try:
            for attribute in parts[cut:]:
                value = getattr(value, attribute)
        except AttributeError:
            return False
        return True
    return False


@pytest.mark.parametrize(("page", "dotted"), _dotted_names())
def test_every_dotted_name_mentioned_resolves(page: str, dotted: str) -> None:
    assert _resolves(dotted), f"{page} names {dotted}, which is neither a module nor an attribute"
