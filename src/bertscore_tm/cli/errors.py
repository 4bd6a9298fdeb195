"""What the command line says when something goes wrong, and how it exits: a user error is one line and
exit code 2, with a hint spelling a library error's Python argument as the command line does. Anything else is a
bug, and keeps its traceback."""

from __future__ import annotations

import sys
from typing import TextIO

from bertscore_tm.errors import BERTScoreError

PROG = "bertscore-tm"
#: Exit codes: a torchrun peer lost; a user error; SIGINT and SIGTERM (128 + the signal, as a shell says).
LOST_PROCESS, USER_ERROR, INTERRUPTED, TERMINATED = 1, 2, 130, 143


class UsageError(Exception):
    """A problem with what the user asked for, in the command line's terms: reported in one line, exit code 2."""


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised as SIGINT raises KeyboardInterrupt, so that it unwinds the same way (temporary files
    removed) before its one line and exit code 143."""


def one_line(err: BaseException) -> str:
    """An error's message on one line (its type's name where it has none).

    >>> one_line(ValueError("two\\n  lines"))
    'two lines'
    >>> one_line(EOFError())
    'EOFError'
    """
    return " ".join((str(err) or type(err).__name__).split())


def lost_process(err: BaseException) -> bool:
    """Whether `err` is torch.distributed saying another process of the job went away or stopped
    answering. torch is not imported for this: without it there is no process group either."""
    dist_error = getattr(sys.modules.get("torch.distributed"), "DistError", None)
    if dist_error is not None and isinstance(err, dist_error):
        return True
    text = str(err)
    return isinstance(err, RuntimeError) and any(
        sign in text for sign in ("Connection closed by peer", "Connection reset by peer", "gloo/transport")
    )


#: The flags of the Python arguments, not settings, that the library's errors can name (settings have theirs).
OTHER_FLAGS = {
    "preds": "-c/--cand",
    "target": "-r/--ref",
    "checkpoint_dir": "--checkpoint",
    "shard_size": "--shard-size",
    "idf_references": "--idf-references",
    "threshold": "--threshold",
    "utility": "--utility",
}
#: What to do on the command line where the library's message ends with what to pass in Python.
ADVICE = {
    "model_name_or_path": "-m /path/to/local/model (with -l N where the model has no tuned default layer)",
    "rescale_with_baseline": "--baseline-path baseline.tsv, or leave out --rescale-with-baseline",
}


def flag(argument: str) -> str | None:
    """The command line's spelling of a Python argument, or None where no command takes it.

    >>> flag("num_layers"), flag("preds"), flag("model")
    ('-l/--num-layers', '-c/--cand', None)
    """
    from bertscore_tm.settings.arguments import SETTINGS

    setting = SETTINGS.get(argument)
    return (setting.flag or None) if setting is not None else OTHER_FLAGS.get(argument)


def hint(err: BaseException) -> str:
    """The command-line spelling of the Python argument a library error names in its `argument` field, built
    from the field, never from the message.

    >>> from bertscore_tm.errors import ModelSetupError
    >>> hint(ModelSetupError("num_layers must be between 0 and 6, got 9", argument="num_layers"))
    '. On the command line, num_layers is -l/--num-layers.'
    >>> hint(ValueError("num_layers"))
    ''
    """
    argument = getattr(err, "argument", None) if isinstance(err, BERTScoreError) else None
    if argument is None:
        return ""
    if argument in ADVICE:
        text = f"On the command line: {ADVICE[argument]}."
    else:
        named = [(name, flag(name)) for name in (argument, *getattr(err, "others", ()))]
        spelled = [f"{name} is {spelling}" for name, spelling in named if spelling is not None]
        if not spelled:
            return ""
        text = f"On the command line, {' and '.join(spelled)}."
    return ("" if one_line(err).endswith((".", "!", "?")) else ".") + " " + text


def show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
) -> None:
    """`warnings.showwarning` for the command line: ``bertscore-tm: warning: ...``, without the source line."""
    print(f"{PROG}: warning: {message}", file=sys.stderr if file is None else file)
