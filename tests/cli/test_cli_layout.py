"""The command line stays a package of small parts: one module per command, each declaring its own options, the
shared parts once each (the size limits, for the whole package, are tests/unit/test_layout.py's)."""

from __future__ import annotations

from bertscore_tm.cli import app


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
