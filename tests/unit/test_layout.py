"""The package keeps its folders as its layers (docs/architecture.md): a small root (the public face and the
foundations), every folder a package, and no module reading another's private names. Sizes are not capped: a class
or a module is as long as its one concept needs (the import contracts in pyproject.toml guard the layers)."""

from __future__ import annotations

import ast
from pathlib import Path

import bertscore_tm

PACKAGE = Path(bertscore_tm.__file__).parent
MAX_ROOT_MODULES = 5


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _dotted(path: Path) -> str:
    """`bertscore_tm.scoring.matching` for `.../bertscore_tm/scoring/matching.py` (a folder's `__init__`: the
    folder's name)."""
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _own_modules(folder: Path) -> list[str]:
    """A folder's modules, its `__init__` and `__main__` not counted."""
    return sorted(p.stem for p in folder.glob("*.py") if p.stem not in {"__init__", "__main__"})


def test_the_root_keeps_the_public_face_and_the_foundations() -> None:
    assert len(_own_modules(PACKAGE)) <= MAX_ROOT_MODULES - 1, _own_modules(PACKAGE)  # __init__ is the fifth


def test_every_folder_is_a_package() -> None:
    folders = sorted({p.parent for p in _modules()} - {PACKAGE})
    assert len(folders) >= 10
    assert all((f / "__init__.py").is_file() for f in folders)


def test_no_module_reads_the_private_names_of_a_metric_or_a_scorer() -> None:
    """Engines use the scoring core's public interface: ``metric._x`` or ``scorer._x`` outside their own class."""
    readers = []
    for module in _modules():
        for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")):
                continue
            if isinstance(node.value, ast.Name) and node.value.id in ("metric", "scorer", "built"):
                readers.append(f"{_dotted(module)}:{node.lineno} {node.value.id}.{node.attr}")
    assert readers == []


def test_exports_stay_functions_after_every_module_is_imported() -> None:
    import importlib

    for path in _modules():
        if path.stem != "__main__":
            importlib.import_module(_dotted(path))
    from bertscore_tm import score
    from bertscore_tm.explanations import explain

    assert callable(explain) and callable(score)
