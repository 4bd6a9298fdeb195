"""The public API: the root's `__all__` is the list below (the names a user types), the other public names live in
their folders, and every one is documented in docs/api.md. The names the root exported before still import from
it, with a warning naming their folder. A name added or dropped is a decision, made here."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

import bertscore_tm

REPO = Path(__file__).resolve().parents[2]
PACKAGE = Path(bertscore_tm.__file__).parent

EXPORTED = [
    "PACKAGED_MINILM",
    "BERTScore",
    "BERTScoreError",
    "BERTScorer",
    "BatchScorer",
    "Scores",
    "__version__",
    "bert_score",
    "score",
]


def test_the_exported_names_are_the_public_api() -> None:
    assert sorted(bertscore_tm.__all__) == sorted(EXPORTED)


def test_every_exported_name_imports_from_the_root_and_is_the_defining_object() -> None:
    for name in bertscore_tm.__all__:
        value = getattr(bertscore_tm, name)
        if callable(value) and hasattr(value, "__module__"):
            module = importlib.import_module(value.__module__)
            assert getattr(module, name) is value, name


def _documented() -> set[str]:
    """`module.name` for every name docs/api.md renders: a `::: module.name` line, or a `::: module` line (all of
    its public members, or those its `members:` option lists)."""
    lines = (REPO / "docs" / "api.md").read_text(encoding="utf-8").splitlines()
    documented: set[str] = set()
    for i, line in enumerate(lines):
        match = re.fullmatch(r"::: ([\w.]+)", line)
        if not match:
            continue
        target = match.group(1)
        members = []
        for follow in lines[i + 1 :]:
            if not follow.startswith(" "):
                break
            if re.fullmatch(r"\s+- \w+", follow):
                members.append(follow.split("- ")[1])
        try:
            module = importlib.import_module(target)
        except ModuleNotFoundError:
            documented.add(target)
            continue
        names = members or [n for n in vars(module) if not n.startswith("_")]
        documented.update(f"{target}.{n}" for n in names)
    return documented


def _public() -> dict[str, object]:
    """Every public name: the root's and those of the folders the moved names live in."""
    names = {name: getattr(bertscore_tm, name) for name in bertscore_tm.__all__ if name != "__version__"}
    for name, folder in bertscore_tm.MOVED.items():
        names[name] = getattr(importlib.import_module(f"bertscore_tm.{folder}"), name)
    return names


@pytest.mark.parametrize("name", sorted(bertscore_tm.MOVED))
def test_a_moved_name_still_imports_from_the_root_with_a_warning_naming_its_folder(name: str) -> None:
    folder = f"bertscore_tm.{bertscore_tm.MOVED[name]}"
    with pytest.warns(DeprecationWarning, match=rf"bertscore_tm\.{name} moved: import it from {folder}"):
        value = getattr(bertscore_tm, name)
    assert value is getattr(importlib.import_module(folder), name)
    assert name not in bertscore_tm.__all__


def test_every_public_name_is_documented_in_the_api_reference() -> None:
    documented = _documented()
    missing = []
    for name, value in _public().items():
        module = getattr(value, "__module__", None) if callable(value) else None
        homes = {f"{module}.{name}"} if module else {f"{m}.{name}" for m in _defining_modules(name)}
        if not homes & documented:
            missing.append(name)
    assert missing == []


def _defining_modules(name: str) -> list[str]:
    """The modules whose source assigns `name` at the top level (for constants, which carry no __module__)."""
    found = []
    for path in PACKAGE.rglob("*.py"):
        if re.search(rf"^{re.escape(name)}\b.*=", path.read_text(encoding="utf-8"), re.M):
            dotted = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
            found.append(dotted)
    return found


def _folders() -> list[str]:
    return sorted(
        ".".join(path.parent.relative_to(PACKAGE.parent).parts)
        for path in PACKAGE.rglob("__init__.py")
        if path.parent != PACKAGE
    )


@pytest.mark.parametrize("folder", _folders())
def test_each_folder_exports_what_its_all_lists(folder: str) -> None:
    package = importlib.import_module(folder)
    for name in getattr(package, "__all__", []):
        assert getattr(package, name) is not None, f"{folder}.{name}"


@pytest.mark.parametrize("folder", [f for f in _folders() if not f.startswith("bertscore_tm.cli")])
def test_no_folder_exports_a_name_that_is_also_one_of_its_modules(folder: str) -> None:
    # importing a submodule binds it on its package: a module named like a lazy export would replace it
    directory = PACKAGE.parent.joinpath(*folder.split("."))
    modules = {p.stem for p in directory.glob("*.py")} | {p.name for p in directory.iterdir() if p.is_dir()}
    assert sorted(set(importlib.import_module(folder).__all__) & modules) == []


def test_importing_the_package_and_the_correlations_loads_neither_torch_nor_transformers() -> None:
    code = (
        "import sys, bertscore_tm, bertscore_tm.tuning, bertscore_tm.tuning.correlation, "
        "bertscore_tm.tuning.judgements\n"
        "print(sorted(m for m in ('torch', 'transformers', 'numpy') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['numpy']"
