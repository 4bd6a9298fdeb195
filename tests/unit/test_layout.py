"""The package stays made of small parts (docs/architecture.md): no module over 600 lines, no function over 60
(docstring, signature and decorators included), the Metric's module at most 350, and no module reading another's
private names."""

from __future__ import annotations

import ast
from pathlib import Path

import bertscore_tm

PACKAGE = Path(bertscore_tm.__file__).parent
MAX_MODULE_LINES, MAX_FUNCTION_LINES, MAX_METRIC_LINES = 600, 60, 350


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_no_module_and_no_function_is_too_long() -> None:
    modules = _modules()
    assert len(modules) > 30
    too_long = []
    for module in modules:
        text = module.read_text(encoding="utf-8")
        name = module.relative_to(PACKAGE)
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
    assert (PACKAGE / "metric.py").read_text(encoding="utf-8").count("\n") <= MAX_METRIC_LINES


def test_no_module_reads_the_private_names_of_a_metric_or_a_scorer() -> None:
    """Engines use the scoring core's public interface: ``metric._x`` or ``scorer._x`` outside their own class."""
    readers = []
    for module in _modules():
        for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")):
                continue
            if isinstance(node.value, ast.Name) and node.value.id in ("metric", "scorer", "built"):
                readers.append(f"{module.relative_to(PACKAGE)}:{node.lineno} {node.value.id}.{node.attr}")
    assert readers == []


def test_no_exported_name_is_also_a_module_name() -> None:
    # importing a submodule binds it on the package: one named like a lazy export would replace the function
    # for every later `from bertscore_tm import name` (CI saw `explain` turn into a module this way)
    modules = {path.stem for path in PACKAGE.glob("*.py")} | {path.name for path in PACKAGE.iterdir() if path.is_dir()}
    assert sorted(set(bertscore_tm.__all__) & modules) == []


def test_exports_stay_functions_after_every_module_is_imported() -> None:
    import importlib

    for path in PACKAGE.glob("*.py"):
        if path.stem not in {"__init__", "__main__"}:
            importlib.import_module(f"bertscore_tm.{path.stem}")
    from bertscore_tm import explain, score

    assert callable(explain) and callable(score)
