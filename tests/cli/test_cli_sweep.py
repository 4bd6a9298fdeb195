"""The command line's sweep: every option that takes one value, of every command, fed each awkward value (blank,
nan, inf, 1e200, a negative, 0, 2**63, a lone surrogate) with the command's other arguments valid. Each run
ends in one ``bertscore-tm: error:`` line and exit 2, or gets as far as building the metric (stopped there:
no model loads) with a value the setting's own rule accepts. The options are found, not listed."""

from __future__ import annotations

import pytest

import bertscore_tm
from bertscore_tm.cli import build_parser, main, outputs
from bertscore_tm.errors import BERTScoreError
from bertscore_tm.settings.arguments import RULES
from tests.cli.test_cli import fewest, small, subcommands  # noqa: F401 (small: the fixture of files)
from tests.conftest import MINILM

#: A lone surrogate is left out in-process: pytest's captured stderr cannot write one (a real process's stderr
#: escapes it), so it would fail here for the capture's sake.
VALUES = ("", "nan", "inf", "1e200", "-1", "0", str(2**63))


class Reached(Exception):
    """The command built its metric: every check before the model passed."""


@pytest.fixture()
def stopped(monkeypatch: pytest.MonkeyPatch) -> None:
    def stop(*args: object, **kwargs: object) -> None:
        raise Reached

    monkeypatch.setattr(bertscore_tm.metric.bertscore.BERTScore, "from_config", classmethod(stop))


def options(command: str) -> list[tuple[str, str]]:
    """The command's options that take one value (flag, dest), but files (their own tests) and the model."""
    return [
        (a.option_strings[0], a.dest)
        for a in subcommands()[command]._actions
        if a.option_strings
        and a.nargs is None
        and a.dest not in outputs.READS
        and a.dest not in outputs.WRITES
        and "-m" not in a.option_strings
    ]


#: Defects found in files another change owns (src/bertscore_tm/cli/), by ``command flag value``.
KNOWN: dict[str, str] = {}


def outcome(capsys: pytest.CaptureFixture[str], argv: list[str], dest: str) -> str | None:
    """None where the run ends as it should, else what went wrong."""
    shown = " ".join(argv).encode("utf-8", "backslashreplace").decode()
    try:
        code = main(argv)
    except Reached:
        capsys.readouterr()
        value = getattr(build_parser().parse_args(argv), dest)
        try:
            RULES[dest](dest, value) if dest in RULES else None
        except BERTScoreError:
            return f"{shown}: {dest} reached the model, but its rule refuses {value!r}"
        return None
    except SystemExit as exc:  # argparse's own refusal: its usage, then one error line
        err = capsys.readouterr().err
        if exc.code == 2 and ": error: " in err.strip().split("\n")[-1]:
            return None
        return f"{shown}: exit {exc.code}, stderr {err[-300:]!r}"
    except Exception as err:
        capsys.readouterr()
        return f"{shown}: raw {type(err).__name__}: {err}"
    _out, err = capsys.readouterr()
    lines = err.strip().split("\n")
    if code == 2 and len(lines) == 1 and lines[0].startswith("bertscore-tm: error: "):
        return None
    return f"{shown}: exit {code}, stderr {err[-300:]!r}"


@pytest.mark.parametrize("command", sorted(subcommands()))
def test_every_option_of_every_command(capsys, stopped, small: dict[str, str], command: str) -> None:  # noqa: F811
    problems = []
    for flag, dest in options(command):
        for value in VALUES:
            argv = [*fewest(command, small, {flag: [value]}), "-m", MINILM]
            if (problem := outcome(capsys, argv, dest)) is not None:
                problems.append(problem)
    print("\n".join(problems).encode("utf-8", "backslashreplace").decode())
    new = [p for p in problems if not any(k in p for k in KNOWN)]
    assert not new, f"{len(new)} problem(s):\n" + "\n".join(new).encode("utf-8", "backslashreplace").decode()
