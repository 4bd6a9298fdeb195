"""A griffe extension for the API reference (mkdocs.yml loads it; the site does not include this folder).

The package's docstrings are Google style (`Args:`, `Returns:`) but keep their `>>>` examples in the text,
as doctests, and name other objects with reST roles (:class:`BERTScore`). Markdown would read the examples as
nested block quotes (and `[0.9, 0.8]` in an output line as a link), and print the roles as they are. This
wraps each run of `>>>` lines and their output in a ```pycon fence and turns a role into a code span. It
changes what the site shows only; the source and its doctests are untouched.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:py:)?(?:class|func|meth|attr|mod|obj|exc|data|const):`~?([^`]+)`")


def fence_doctests(text: str) -> str:
    """Fence every doctest block: from a `>>>` line to the next blank line (or a line less indented)."""
    out: list[str] = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.lstrip()
        if not stripped.startswith(">>>"):
            out.append(line)
            i += 1
            continue
        indent = line[: len(line) - len(stripped)]
        block = []
        while i < len(lines) and lines[i].strip() and lines[i].startswith(indent):
            block.append(lines[i][len(indent) :])
            i += 1
        if out and out[-1].strip():
            out.append("")  # a fence needs a blank line before it inside a paragraph
        out.extend([f"{indent}```pycon", *(f"{indent}{b}" for b in block), f"{indent}```"])
    return "\n".join(out)


class DoctestFences(griffe.Extension):
    """Rewrite each docstring once it is loaded: doctests fenced, reST roles as code spans."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = ROLE.sub(r"`\1`", fence_doctests(obj.docstring.value))
