"""The package's errors, importing nothing heavy: each message says what to do, and fields let a caller act
without reading it (`argument` names the Python argument at fault, so the command line can name its own flag).

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
    """Warn at the user's own line, past the frames of this package and of the libraries calling into it."""
    frame = sys._getframe(1)
    level = 2
    while frame is not None and str(frame.f_globals.get("__name__", "")).split(".")[0] in _PASSED_OVER:
        frame = frame.f_back  # type: ignore[assignment]
        level += 1
    warnings.warn(message, category, stacklevel=level if frame is not None else 2)


def warn_undefined(pairs: int) -> None:
    """Warn that `pairs` pairs score NaN as in the reference: their tokens' weights sum to 0 (docs/semantics.md)."""
    if pairs:
        warn_user(
            f"{pairs} pair(s) have tokens whose weights sum to 0 (with IDF: tokens found in every reference); "
            "their precision or recall is NaN, as in the reference."
        )


class BERTScoreError(Exception):
    """Base class; `argument` is the Python argument at fault (or None), for the command line's own spelling."""

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
    """An argument of the wrong type (``num_layers=5.5``, ``idf="no"``); `expected` says what it must be."""

    def __init__(self, message: str, *, argument: str, expected: str, value: object) -> None:
        super().__init__(message, argument=argument)
        self.expected = expected
        self.value = value


class ArgumentValueError(BERTScoreError, ValueError):
    """A value out of range or not among the choices (``batch_size=0``), or arguments that do not go together
    (`others`); `allowed` says what is allowed."""

    def __init__(
        self, message: str, *, argument: str, allowed: str, value: object, others: tuple[str, ...] = ()
    ) -> None:
        super().__init__(message, argument=argument)
        self.allowed = allowed
        self.value = value
        self.others = others


class ModelNotFoundError(BERTScoreError, FileNotFoundError):
    """The model is not a local folder, not cached and not on the Hub, or downloads are off; `argument` is
    ``"revision"`` where only the revision is missing."""

    def __init__(self, message: str, *, model: str, argument: str = "model_name_or_path") -> None:
        super().__init__(message, argument=argument)
        self.model = model


class ModelDownloadError(BERTScoreError, ConnectionError):
    """Fetching a model from the Hub failed; what it half-wrote to the cache is removed, never taken for the model."""

    def __init__(self, message: str, *, model: str, revision: str | None = None) -> None:
        super().__init__(message, argument="model_name_or_path")
        self.model = model
        self.revision = revision


class ModelSetupError(BERTScoreError, ValueError):
    """A model or tokenizer at hand that cannot be used as asked (missing files, a layer it lacks...)."""

    def __init__(self, message: str, *, path: str | None = None, argument: str | None = None) -> None:
        super().__init__(message, argument=argument)
        self.path = path


class DeviceMemoryError(BERTScoreError, MemoryError):
    """One text (`tokens` long) does not fit in accelerator memory, even with the token budget halved down to it."""

    def __init__(self, message: str, *, tokens: int) -> None:
        super().__init__(message, argument="max_length")
        self.tokens = tokens


class TableMemoryError(DeviceMemoryError):
    """No room for a table of token vectors (`tokens`: its rows); matching plans a smaller one where it can."""


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
    """A baseline file that cannot be used; `row` counts data rows from 1 (None: the header), `column` names
    the bad cell's column where there is one."""

    def __init__(self, message: str, *, path: str, row: int | None = None, column: str | None = None) -> None:
        super().__init__(message, argument="baseline_path")
        self.path = path
        self.row = row
        self.column = column


class SettingsMismatchError(BERTScoreError, RuntimeError):
    """Ranks of one distributed job set up differently, so their scores cannot be combined; raised on every rank."""

    def __init__(self, message: str, *, setting: str, values: list[object]) -> None:
        super().__init__(message, argument=setting)
        self.setting = setting
        self.values = values


class InputFileError(BERTScoreError, ValueError):
    """An input text file that cannot be scored; `what` is its role ("candidate", "reference", "corpus")."""

    def __init__(self, message: str, *, path: str, what: str, argument: str | None = None) -> None:
        super().__init__(message, argument=argument)
        self.path = path
        self.what = what


class ColumnDataError(BERTScoreError, ValueError):
    """Rows given as columns (a data engine's batch, a DataFrame, a file) that cannot be scored; `column` and
    `row` name the place (None: the whole batch or column). It pickles whole, so a worker hands it back.

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
    """A judgement file that cannot be used (`line`: 1 is the header); `remedy` keys `JUDGEMENT_REMEDIES`, so the
    command line can say the fix with its own flags."""

    def __init__(self, problem: str, *, path: str, line: int | None = None, remedy: str | None = None) -> None:
        hint = f" ({JUDGEMENT_REMEDIES[remedy]})" if remedy else ""
        # `argument`: the path argument of `read_judgements` and `read_relative_rankings`
        super().__init__(problem + hint, path=path, what="judgements", argument="path")
        self.problem, self.line, self.remedy = problem, line, remedy


class JudgementsError(BERTScoreError, ValueError):
    """Judgements that cannot be correlated: constant human scores in a group, or no group large enough."""
