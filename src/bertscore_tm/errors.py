"""The package's errors: plain exception classes with structured fields, importing nothing heavy.

Each error says in its message what went wrong and what to do, in Python terms. It also carries the fields
a caller needs to act on it without reading the message: `argument` names the Python argument at fault
(``"num_layers"``, ``"baseline_path"``...), so the command line can name its own flag instead (``-l N``,
``--baseline-path FILE``); the subclasses add what they are about (a model name, a file, a row).
The command line imports this module without importing torch or transformers. `warn_user` issues the
package's warnings at the user's own line, however deep inside torchmetrics or torch the call was made.

>>> err = ModelNotFoundError("Model 'x' is not on this machine", model="x")
>>> (err.model, err.argument, isinstance(err, FileNotFoundError))
('x', 'model_name_or_path', True)
"""

from __future__ import annotations

import sys
import warnings

#: Top-level packages whose frames a warning passes over to reach the user's line: ours, and those that call
#: into it on the user's behalf (torchmetrics' wrappers of update/compute/forward, torch's module call,
#: Lightning's loops).
_PASSED_OVER = frozenset({"bertscore_tm", "torchmetrics", "torch", "lightning", "pytorch_lightning"})


def warn_user(message: str, category: type[Warning] = UserWarning) -> None:
    """Warn at the first frame outside this package and the libraries calling into it, so the warning names the
    user's line (not torchmetrics' wrapper); where every frame is one of theirs, at the immediate caller."""
    frame = sys._getframe(1)
    level = 2
    while frame is not None and str(frame.f_globals.get("__name__", "")).split(".")[0] in _PASSED_OVER:
        frame = frame.f_back  # type: ignore[assignment]
        level += 1
    warnings.warn(message, category, stacklevel=level if frame is not None else 2)


def warn_undefined(pairs: int) -> None:
    """Warn (once per call, nothing when `pairs` is 0) that `pairs` pairs have a NaN precision or recall: the
    weights of a text's tokens sum to 0, as the reference gives it (docs/semantics.md)."""
    if pairs:
        warn_user(
            f"{pairs} pair(s) have tokens whose weights sum to 0 (with IDF: tokens found in every reference); "
            "their precision or recall is NaN, as in the reference."
        )


class BERTScoreError(Exception):
    """Base class: a problem with what the user asked for, reported with an actionable message.

    Attributes:
        argument: the Python argument at fault (for the command line's own spelling of the hint), or None.
    """

    def __init__(self, message: str, *, argument: str | None = None) -> None:
        super().__init__(message)
        self.argument = argument

    def __reduce__(self) -> tuple[object, ...]:
        # the message and every field travel (to a Ray actor's caller, a datasets worker's, another rank), so
        # no subclass needs its own rule and none is rebuilt through an __init__ of keyword-only fields
        return (_rebuilt, (type(self), self.args, self.__dict__))


def _rebuilt(kind: type[BERTScoreError], args: tuple[object, ...], fields: dict[str, object]) -> BERTScoreError:
    try:
        err = kind.__new__(kind)
    except TypeError:  # MemoryError's __new__ refuses to make a subclass directly (DeviceMemoryError)
        err = BaseException.__new__(kind)
    Exception.__init__(err, *args)
    err.__dict__.update(fields)
    return err


class ArgumentTypeError(BERTScoreError, TypeError):
    """An argument of the wrong type (``num_layers=5.5``, ``idf="no"``...). `expected` says what it must be,
    `value` is what was passed."""

    def __init__(self, message: str, *, argument: str, expected: str, value: object) -> None:
        super().__init__(message, argument=argument)
        self.expected = expected
        self.value = value


class ArgumentValueError(BERTScoreError, ValueError):
    """An argument of the right type but out of range or not one of the allowed choices (``batch_size=0``,
    ``reduction="sum"``), or arguments that do not go together. `allowed` says what is allowed; `value` is what
    was passed; `others` names the other arguments involved where the problem is a combination."""

    def __init__(
        self, message: str, *, argument: str, allowed: str, value: object, others: tuple[str, ...] = ()
    ) -> None:
        super().__init__(message, argument=argument)
        self.allowed = allowed
        self.value = value
        self.others = others


class ModelNotFoundError(BERTScoreError, FileNotFoundError):
    """The model asked for is nowhere to be had: not a local folder, not in the Hugging Face cache, and not on the
    Hub (no such name or revision), or not downloaded because downloads are off (``HF_HUB_OFFLINE``,
    ``local_files_only``). `argument` is ``"revision"`` where the name exists but the revision does not."""

    def __init__(self, message: str, *, model: str, argument: str = "model_name_or_path") -> None:
        super().__init__(message, argument=argument)
        self.model = model


class ModelDownloadError(BERTScoreError, ConnectionError):
    """A model could not be fetched from the Hugging Face Hub: the Hub unreachable, a server error, a file cut short
    or a connection dropped mid-file. What the attempt had written to the cache is removed again, so that nothing
    half-written is later taken for the model. `model` and `revision` say what was asked."""

    def __init__(self, message: str, *, model: str, revision: str | None = None) -> None:
        super().__init__(message, argument="model_name_or_path")
        self.model = model
        self.revision = revision


class ModelSetupError(BERTScoreError, ValueError):
    """A model or tokenizer that is on disk (or passed in) but cannot be used as asked: missing tokenizer
    files, a vocabulary that does not fit the model, a layer the model does not have, blocks that cannot be
    found. `path` is the model's directory where there is one."""

    def __init__(self, message: str, *, path: str | None = None, argument: str | None = None) -> None:
        super().__init__(message, argument=argument)
        self.path = path


class DeviceMemoryError(BERTScoreError, MemoryError):
    """One text alone does not fit in the accelerator's memory, even after the token budget was halved down to
    that text (`Embedder.embed_into`). `tokens` is its length in the forward pass."""

    def __init__(self, message: str, *, tokens: int) -> None:
        super().__init__(message, argument="max_length")
        self.tokens = tokens


class TableMemoryError(DeviceMemoryError):
    """The accelerator has no room for a table of token vectors (`Embedder.new_table`); `tokens` is its rows.
    Matching plans again with a smaller table where it can (`matching.greedy_match`)."""


class BaselineNotFoundError(BERTScoreError, FileNotFoundError):
    """No rescale baseline for this model and language, or the baseline file given does not exist."""

    def __init__(
        self,
        message: str,
        *,
        path: str,
        model: str | None = None,
        lang: str | None = None,
        argument: str | None = "baseline_path",
    ) -> None:
        super().__init__(message, argument=argument)
        self.path = path
        self.model = model
        self.lang = lang


class BaselineFileError(BERTScoreError, ValueError):
    """A baseline file that exists but cannot be used: bad header, a row out of order, a value that is not
    a finite number below 1. `row` counts data rows from 1 (None for the header), `column` is the header
    name of the bad cell where there is one."""

    def __init__(self, message: str, *, path: str, row: int | None = None, column: str | None = None) -> None:
        super().__init__(message, argument="baseline_path")
        self.path = path
        self.row = row
        self.column = column


class SettingsMismatchError(BERTScoreError, RuntimeError):
    """Processes of one distributed job were set up differently (model, layer, idf...): their scores could
    not be combined. Raised on every rank, naming the setting and each rank's value."""

    def __init__(self, message: str, *, setting: str, values: list[object]) -> None:
        super().__init__(message, argument=setting)
        self.setting = setting
        self.values = values


class InputFileError(BERTScoreError, ValueError):
    """An input text file that cannot be scored: missing, not a file, unreadable, not UTF-8, empty, or with
    another number of lines than the files it goes with. `path` is the file at fault, `what` its role
    ("candidate", "reference", "corpus")."""

    def __init__(self, message: str, *, path: str, what: str) -> None:
        super().__init__(message)
        self.path = path
        self.what = what


class ColumnDataError(BERTScoreError, ValueError):
    """Rows given as columns (a batch of a data engine, a DataFrame, a Parquet or JSONL file) that cannot be
    scored: a missing column, a null, NaN or non-text cell, an empty list of references. `column` and `row`
    name the place (None where the problem is the whole batch or column). It pickles whole, so a Ray or
    ``datasets`` worker hands it back with its message.

    >>> import pickle
    >>> err = pickle.loads(pickle.dumps(ColumnDataError("row 3 is empty", column="reference", row=3)))
    >>> (str(err), err.column, err.row)
    ('row 3 is empty', 'reference', 3)
    """

    def __init__(self, message: str, *, column: str | None, row: int | None) -> None:
        super().__init__(message, argument="data")
        self.column = column
        self.row = row


class LayerTableError(BERTScoreError, ValueError):
    """A user layer table that cannot be used; `path` is the file."""

    def __init__(self, message: str, *, path: str) -> None:
        super().__init__(message, argument="layer_table")
        self.path = path


#: What fixes a `JudgementFileError`, in Python's terms (the command line says it in its own).
JUDGEMENT_REMEDIES = {
    "skip_bad": "pass skip_bad=True to leave bad lines out",
    "columns": "name the right ones with the column arguments",
    "context_column": "name the right one with context=",
}


class JudgementFileError(InputFileError):
    """A judgement file that cannot be used: missing columns, a bad line (`line`, 1 = the header), too few rows.
    `problem` is what is wrong and `remedy` the key in `JUDGEMENT_REMEDIES` of what fixes it (None: nothing to
    pass), so that the command line can say it with its own flags."""

    def __init__(self, problem: str, *, path: str, line: int | None = None, remedy: str | None = None) -> None:
        hint = f" ({JUDGEMENT_REMEDIES[remedy]})" if remedy else ""
        super().__init__(problem + hint, path=path, what="judgements")
        self.argument = "path"  # `read_judgements`' and `read_relative_rankings`' argument
        self.problem, self.line, self.remedy = problem, line, remedy


class JudgementsError(BERTScoreError, ValueError):
    """Judgements that cannot be correlated as they are: human scores constant within a group, or no group
    of enough segments."""
