"""The command line stays a package of small parts: one module per command, each declaring its own options, the
shared parts once each, no module over 600 lines and no function over 60 (parser declarations included)."""

from __future__ import annotations

import ast
from pathlib import Path

import bertscore_tm.cli
from bertscore_tm.cli import app

PACKAGE = Path(bertscore_tm.cli.__file__).parent
MAX_MODULE_LINES, MAX_FUNCTION_LINES = 600, 60


def test_no_module_and_no_function_is_too_long() -> None:
    modules = sorted(PACKAGE.glob("*.py"))
    assert len(modules) > 10
    too_long = []
    for module in modules:
        text = module.read_text(encoding="utf-8")
        if text.count("\n") > MAX_MODULE_LINES:
            too_long.append(f"{module.name}: {text.count(chr(10))} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                length = (node.end_lineno or node.lineno) - first + 1
                if length > MAX_FUNCTION_LINES:
                    too_long.append(f"{module.name}: {node.name}() {length} lines")
    assert too_long == []


def test_each_command_is_a_module_with_its_parser_and_its_run() -> None:
    names = [command.__name__.rsplit(".", 1)[1] for command in app.COMMANDS]
    assert names == ["score", "compare", "show", "explain", "baseline", "pairwise", "mbr", "tune_layers"]
    for command in app.COMMANDS:
        assert callable(command.add_parser) and callable(command.run)
    parser = app.build_parser()
    for name, command in zip(names, app.COMMANDS, strict=True):
        assert parser.parse_args(_minimal(name)).run is command.run


def _minimal(name: str) -> list[str]:
    """The fewest arguments each command parses with."""
    return {
        "score": ["score", "-c", "c", "-r", "r"],
        "compare": ["compare", "-c", "a", "b", "-r", "r"],
        "show": ["show", "-c", "a", "-r", "b", "-f", "x.png"],
        "explain": ["explain", "-c", "c", "-r", "r"],
        "baseline": ["baseline", "--corpus", "c", "-o", "b.tsv"],
        "pairwise": ["pairwise", "-c", "c", "-r", "r"],
        "mbr": ["mbr", "-i", "h", "--group-size", "2"],
        "tune_layers": ["tune-layers", "--data", "judged.tsv"],
    }[name]
