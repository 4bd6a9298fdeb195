"""Every `*.py` file a docstring or a comment of src/ names exists: a name left behind by a move or a rename
misleads the next reader. A path (`embedding/rows.py`) must be the end of a file's path in the repository, a bare
name (`rows.py`) the name of one of its files."""

from __future__ import annotations

import ast
import io
import os
import re
import tokenize
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SOURCE = REPO / "src" / "bertscore_tm"
NAME = re.compile(r"(?<![\w./-])((?:[\w-]+/)*[\w-]+\.py)\b")
SKIPPED = {".git", ".venv", ".venv-peers", "site", "build", "dist", "node_modules", "__pycache__"}


def repository_files() -> list[str]:
    found = []
    for folder, folders, files in os.walk(REPO):
        folders[:] = [name for name in folders if name not in SKIPPED and not name.startswith(".")]
        base = Path(folder).relative_to(REPO).as_posix()
        found += [name if base == "." else f"{base}/{name}" for name in files if name.endswith(".py")]
    return found


def prose(path: Path) -> list[tuple[int, str]]:
    """The docstrings and comments of one module, with their first line."""
    text = path.read_text(encoding="utf-8")
    found = [
        (token.start[0], token.string)
        for token in tokenize.generate_tokens(io.StringIO(text).readline)
        if token.type == tokenize.COMMENT
    ]
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            docstring = ast.get_docstring(node, clean=False)
            if docstring is not None:
                found.append((node.body[0].lineno, docstring))
    return found


def named_files() -> list[tuple[str, int, str]]:
    """(module, line, name) for every `*.py` name in the prose of src/."""
    found = []
    for path in sorted(SOURCE.rglob("*.py")):
        for line, text in prose(path):
            for match in NAME.finditer(text):
                found.append((str(path.relative_to(REPO)), line, match.group(1)))
    return found


def exists(name: str, files: list[str]) -> bool:
    return any(file == name or file.endswith("/" + name) for file in files)


def stale_names() -> list[str]:
    """'module: name' for each name no file has (the line of its docstring or comment in the failure message)."""
    files = repository_files()
    return sorted({f"{module}: {name}" for module, _, name in named_files() if not exists(name, files)})


@pytest.mark.slow
def test_the_pattern_finds_paths_and_bare_names_and_src_has_some() -> None:
    text = "see `embedding/rows.py` and rows.py, not rows.pyc or a.b.py.txt"
    assert [match.group(1) for match in NAME.finditer(text)] == ["embedding/rows.py", "rows.py"]
    assert named_files()


@pytest.mark.slow
def test_every_file_named_in_the_prose_of_src_exists() -> None:
    stale = stale_names()
    lines = [f"{module}:{line}: {name}" for module, line, name in named_files() if f"{module}: {name}" in stale]
    assert not lines, "\n".join(lines)
