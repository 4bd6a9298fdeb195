"""The package stays made of small parts in folders that show its layers (docs/architecture.md): at most 5
modules at the root and about 10 in a folder, no module over 600 lines, no function over 60 (docstring, signature
and decorators included), the Metric's module at most 350, and no module reading another's private names."""

from __future__ import annotations

import ast
from pathlib import Path

import bertscore_tm

PACKAGE = Path(bertscore_tm.__file__).parent
MAX_MODULE_LINES, MAX_FUNCTION_LINES, MAX_METRIC_LINES = 600, 60, 350
MAX_ROOT_MODULES, MAX_FOLDER_MODULES = 5, 10


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


def test_no_folder_holds_more_than_about_ten_modules() -> None:
    folders = sorted({p.parent for p in _modules()} - {PACKAGE})
    assert len(folders) >= 10
    crowded = {_dotted(f / "__init__.py"): len(_own_modules(f)) for f in folders}
    assert {name: n for name, n in crowded.items() if n > MAX_FOLDER_MODULES} == {}
    assert all((f / "__init__.py").is_file() for f in folders)


def test_no_module_and_no_function_is_too_long() -> None:
    modules = _modules()
    assert len(modules) > 30
    too_long = []
    for module in modules:
        text = module.read_text(encoding="utf-8")
        name = _dotted(module)
        if text.count("\n") > MAX_MODULE_LINES:
            too_long.append(f"{name}: {text.count(chr(10))} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                length = (node.end_lineno or node.lineno) - first + 1
                if length > MAX_FUNCTION_LINES:
                    too_long.append(f"{name}: {node.name}() {length} lines")
    assert too_long == []


def test_the_metric_module_only_keeps_state_and_the_torchmetrics_protocol() -> None:
    assert (PACKAGE / "metric" / "bertscore.py").read_text(encoding="utf-8").count("\n") <= MAX_METRIC_LINES


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
    from bertscore_tm import explain, score

    assert callable(explain) and callable(score)
