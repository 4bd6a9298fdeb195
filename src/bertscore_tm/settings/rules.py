"""The rules that check one argument each. Types are strict (``idf="no"`` is truthy and would turn IDF on;
``num_layers=5.5`` is refused, not rounded); torch is imported only for dtypes and devices."""

from __future__ import annotations

import math
import numbers
import os
import sys
from collections.abc import Callable, Mapping
from typing import TypeVar

from bertscore_tm.errors import ArgumentTypeError, ArgumentValueError
from bertscore_tm.settings.texts import argument_of as _argument
from bertscore_tm.settings.texts import check_text, check_texts

_Kind = TypeVar("_Kind")

#: The compute dtypes of the model, by name: float32 is exact, the others run under autocast.
MODEL_DTYPES = ("float32", "bfloat16", "float16")

#: A rule: check one argument's value, raising ArgumentTypeError or ArgumentValueError naming `name`.
Rule = Callable[[str, object], None]

#: The largest integer an integer setting takes: counts and sizes past it mean nothing and would overflow the
#: 32-bit and 64-bit arithmetic of the tensors they size.
MAX_INTEGER = 2**31 - 1
#: Numbers squared in the scores (F-beta's beta) stay below this, so that their square is a finite float.
SQUARE_ROOT_OF_MAX = math.sqrt(sys.float_info.max)


def _shown(value: object) -> str:
    return f"{type(value).__name__} {value!r:.60}"


def _or_none(optional: bool) -> str:
    return " or None" if optional else ""


def wrong_type(name: str, what: str, expected: str, value: object, argument: str | None = None) -> ArgumentTypeError:
    """`name` must be `what` (`expected` as the error holds it), and `value` is of another type."""
    return ArgumentTypeError(
        f"{name} must be {what}, got {_shown(value)}",
        argument=argument or _argument(name),
        expected=expected,
        value=value,
    )


def _out_of_range(name: str, allowed: str, value: object, why: str = "") -> ArgumentValueError:
    """`name` must be `allowed` (`why` says why), and `value` is not."""
    return ArgumentValueError(
        f"{name} must be {allowed}{why}, got {value}", argument=_argument(name), allowed=allowed, value=value
    )


def boolean(name: str, value: object) -> None:
    """True or False, nothing else (not 0/1, not "yes")."""
    if not isinstance(value, bool):
        raise wrong_type(name, "True or False", "bool", value)


def integer(minimum: int, *, optional: bool = False, why: str = "", maximum: int = MAX_INTEGER) -> Rule:
    """An int (a numpy integer too; not a bool, float or string) from `minimum` to `maximum`."""

    def check(name: str, value: object) -> None:
        if value is None and optional:
            return
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise wrong_type(name, f"an integer{_or_none(optional)}", f"int{_or_none(optional)}", value)
        if int(value) < minimum:
            raise _out_of_range(name, f"an integer >= {minimum}{_or_none(optional)}", value, why)
        if int(value) > maximum:
            raise _out_of_range(name, f"an integer from {minimum} to {maximum:,}{_or_none(optional)}", value)

    return check


def probability(name: str, value: object) -> None:
    """A number strictly between 0 and 1 (a confidence level, a significance level), a numpy number too."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise wrong_type(name, "a number between 0 and 1, e.g. 0.95", "float", value)
    if not 0 < float(value) < 1:  # NaN fails too
        raise ArgumentValueError(
            f"{name} must be between 0 and 1 (exclusive), e.g. 0.95, got {value}",
            argument=name,
            allowed="a number in (0, 1)",
            value=value,
        )


#: A seed of resampling: numpy's and torch's generators take any integer in [0, 2**64).
SEED = integer(0, maximum=2**64 - 1)


def real_numbers(name: str, value: object, *, finite: bool = True) -> list[float]:
    """A list, tuple, 1-d array or tensor of real numbers (not bools), as floats."""
    items = _sequence(name, value, "a sequence of numbers")
    for i, item in enumerate(items):
        if isinstance(item, bool) or not isinstance(item, numbers.Real):
            raise wrong_type(f"{name}[{i}]", "a number", "float", item)
        if finite and not math.isfinite(float(item)):
            raise _out_of_range(f"{name}[{i}]", "a finite number", item)
    return [float(item) for item in items]  # type: ignore[arg-type]


def indexes(name: str, value: object, *, below: int | None = None) -> list[int]:
    """Integers from 0 to `below` (exclusive; else the largest int64), as ints: dataset indexes, rows to pick."""
    items = _sequence(name, value, "a sequence of integers")
    top = (2**63 if below is None else below) - 1
    for i, item in enumerate(items):
        integer(0, maximum=top)(f"{name}[{i}]", item)
    return [int(item) for item in items]  # type: ignore[call-overload]


def _sequence(name: str, value: object, expected: str) -> list[object]:
    """Never a string, mapping, set or iterator: their order or one-time reading would give something else."""
    if type(value).__module__ in ("numpy", "torch") and hasattr(value, "tolist"):
        if getattr(value, "ndim", None) != 1:
            raise ArgumentValueError(
                f"{name} must be one-dimensional, got shape {tuple(value.shape)}",  # type: ignore[attr-defined]
                argument=name,
                allowed=expected,
                value=value,
            )
        return list(value.tolist())
    if not isinstance(value, (list, tuple)):
        raise wrong_type(name, f"{expected} (a list or a tuple)", expected, value)
    return list(value)


def finite_number(*, optional: bool = False, positive: bool = False, why: str = "", below: float = math.inf) -> Rule:
    """A finite real number (a numpy number too; not a bool or a string); with `positive` above 0 and below `below`
    (`why` says why)."""
    finite = f"a finite number > 0{_or_none(optional)}" if positive else "a finite number"

    def check(name: str, value: object) -> None:
        if value is None and optional:
            return
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise wrong_type(name, f"a number{_or_none(optional)}", f"float{_or_none(optional)}", value)
        if not math.isfinite(float(value)) or (positive and float(value) <= 0):
            raise _out_of_range(name, finite, value, why)
        if float(value) >= below:
            squared = " (the scores square it, and its square must be a finite float)"
            raise _out_of_range(name, f"a number > 0 and below {below:.4g}{_or_none(optional)}", value, squared)

    return check


def choice(allowed: tuple[str, ...], *, optional: bool = False) -> Rule:
    """One of the strings `allowed`; None too where `optional`."""
    listed = ", ".join(repr(a) for a in allowed) + _or_none(optional)

    def check(name: str, value: object) -> None:
        if value is None and optional:
            return
        if not isinstance(value, str):
            raise wrong_type(name, f"one of {listed}", listed, value)
        if value not in allowed:
            raise ArgumentValueError(
                f"{name} must be one of {listed}, got {value!r}", argument=name, allowed=listed, value=value
            )

    return check


def text(*, optional: bool = False, blank: bool = False) -> Rule:
    """A string (non-blank unless `blank`) that UTF-8 can hold: a name, a prompt, a column."""

    def check(name: str, value: object) -> None:
        if value is None and optional:
            return
        if not isinstance(value, str):
            raise wrong_type(name, f"a string{_or_none(optional)}", f"str{_or_none(optional)}", value)
        if not (blank or value.strip()):
            raise ArgumentValueError(
                f"{name} must not be blank", argument=name, allowed="a non-blank string", value=value
            )
        check_text(value, name)

    return check


def column_names(name: str, value: object) -> list[str]:
    """One column's name, or a non-empty list (or tuple) of names: each a non-blank string."""
    if isinstance(value, str):
        value = [value]
    elif not isinstance(value, (list, tuple)):
        raise wrong_type(name, "a column name or a list of them", "str | list[str]", value)
    if not value:
        raise ArgumentValueError(
            f"{name} is an empty list: name at least one column",
            argument=name,
            allowed="a column name or a non-empty list of them",
            value=value,
        )
    for item in value:
        text()(name, item)
    return list(value)


def path(*, optional: bool = False) -> Rule:
    """A non-blank string or os.PathLike (a path, or a model name) that the file system can encode."""

    def check(name: str, value: object) -> None:
        if value is None and optional:
            return
        if not isinstance(value, (str, os.PathLike)):
            what = f"a string or a path{_or_none(optional)}"
            raise wrong_type(name, what, f"str | os.PathLike{_or_none(optional)}", value)
        _path_name(name, value)

    return check


def _path_name(name: str, value: str | os.PathLike[str]) -> None:
    """A lone surrogate is no file name; the surrogates Python decodes undecodable file-name bytes to are."""
    text = os.fspath(value)
    if not str(text).strip():
        raise ArgumentValueError(f"{name} must not be blank", argument=name, allowed="a non-blank path", value=value)
    try:
        os.fsencode(text)
    except UnicodeEncodeError as err:
        raise ArgumentValueError(
            f"{name} cannot be a file name: {err.reason} at character {err.start} of {text!a:.60}",
            argument=name,
            allowed="a path the file system can encode",
            value=value,
        ) from None


def file_argument(name: str, value: object) -> None:
    """A path or an open file object; never an integer, which ``open`` would take as a descriptor (and close)."""
    if isinstance(value, (str, os.PathLike)):
        _path_name(name, value)
        return
    if not callable(getattr(value, "read", None)):
        what = "a path (str or os.PathLike) or an open file"
        raise wrong_type(name, what, "str | os.PathLike | a file object", value)


def model_dtype(name: str, value: object) -> None:
    """torch.float32 (exact), torch.bfloat16 or torch.float16."""
    import torch

    allowed = ", ".join(f"torch.{d}" for d in MODEL_DTYPES)
    if not isinstance(value, torch.dtype):
        raise wrong_type(name, f"a torch.dtype ({allowed})", allowed, value)
    if value not in tuple(getattr(torch, d) for d in MODEL_DTYPES):
        raise ArgumentValueError(
            f"{name} must be one of {allowed}, got {value}", argument=name, allowed=allowed, value=value
        )


def device(name: str, value: object) -> None:
    """None (follow the metric), or a torch.device or a string torch can parse ("cpu", "cuda:1")."""
    if value is None:
        return
    import torch

    if not isinstance(value, (str, torch.device)):
        what = "a torch.device, a string such as 'cpu' or 'cuda:0', or None"
        raise wrong_type(name, what, "torch.device | str | None", value)
    try:
        parsed = torch.device(value)
    except (RuntimeError, ValueError) as err:
        raise ArgumentValueError(
            f"{name}={value!r} is not a torch device ({err})", argument=name, allowed="a torch device", value=value
        ) from None
    missing = None
    if parsed.type == "cuda" and not torch.cuda.is_available():
        missing = f"CUDA is not available on this machine (torch {torch.__version__})"
    elif parsed.type == "cuda" and parsed.index is not None and parsed.index >= torch.cuda.device_count():
        missing = f"this machine has {torch.cuda.device_count()} CUDA device(s)"
    if missing is not None:  # said here, before any model loads, rather than by torch when the model moves
        raise ArgumentValueError(
            f"{name}={value!r}: {missing}", argument=name, allowed="a device of this machine", value=value
        )


def module(name: str, value: object) -> None:
    """None, or a torch.nn.Module (a model object of the user's own)."""
    if value is None:
        return
    import torch

    if not isinstance(value, torch.nn.Module):
        what = "a torch.nn.Module (e.g. a transformers model) or None"
        raise wrong_type(name, what, "torch.nn.Module | None", value)


def tokenizer_object(name: str, value: object) -> None:
    """None, or a Hugging Face tokenizer object (transformers' PreTrainedTokenizerBase)."""
    if value is None:
        return
    from transformers import PreTrainedTokenizerBase

    if not isinstance(value, PreTrainedTokenizerBase):
        what = "a transformers tokenizer (e.g. AutoTokenizer.from_pretrained(...)) or None"
        raise wrong_type(name, what, "transformers.PreTrainedTokenizerBase | None", value)


def function(name: str, value: object) -> None:
    if value is not None and not callable(value):
        raise wrong_type(name, "a function or None", "callable | None", value)


def texts(name: str, value: object) -> None:
    """None, or at least one text (one string is one text: `bertscore_tm.settings.texts`)."""
    if value is not None:
        check_texts(value, name, empty=False)


def token_mask(name: str, value: object) -> None:
    """None, ``"punctuation"``, a regular expression that compiles, or a callable asked about each piece."""
    import re

    if value is None or value == "punctuation" or isinstance(value, re.Pattern) or callable(value):
        return
    if not isinstance(value, str):
        what = "'punctuation', a regular expression or a callable"
        raise wrong_type(name, what, "str, re.Pattern, callable or None", value)
    text()(name, value)  # a blank expression matches no piece: a mistake, not a mask
    try:
        re.compile(value)
    except re.error as err:
        raise ArgumentValueError(
            f"{name}={value!r} is not 'punctuation' and not a valid regular expression: {err}",
            argument=name,
            allowed="'punctuation', a regular expression over the pieces, or a callable",
            value=value,
        ) from None


def _weight(name: str, where: str, weight: object) -> None:
    if isinstance(weight, bool) or not isinstance(weight, numbers.Real):
        raise wrong_type(f"{name}{where}", "a number", "float", weight, argument=name)
    if not math.isfinite(weight) or weight < 0:
        raise ArgumentValueError(
            f"{name}{where} must be a finite weight >= 0, got {weight}",
            argument=name,
            allowed="finite numbers >= 0",
            value=weight,
        )


def weight_mapping(name: str, value: object) -> None:
    """None, or a non-empty mapping token id -> finite weight >= 0 (a defaultdict's default too)."""
    if value is None:
        return
    if not isinstance(value, Mapping):
        what = "a mapping token id -> weight (e.g. metric.idf_weights() of another metric) or None"
        raise wrong_type(name, what, "Mapping[int, float] | None", value)
    if len(value) == 0:
        raise ArgumentValueError(
            f"{name} is empty: pass a weight per token id (or leave it out)",
            argument=name,
            allowed="a non-empty mapping token id -> weight, or None",
            value=value,
        )
    for token, weight in value.items():
        if isinstance(token, bool) or not isinstance(token, numbers.Integral):
            hint = " (JSON gives keys back as strings: convert them with int())" if isinstance(token, str) else ""
            raise ArgumentTypeError(
                f"{name} keys must be token ids (int), got {_shown(token)}{hint}",
                argument=name,
                expected="int",
                value=token,
            )
        if token < 0:
            raise ArgumentValueError(
                f"{name} keys must be token ids >= 0, got {token}", argument=name, allowed="int >= 0", value=token
            )
        _weight(name, f"[{token}]", weight)
    factory = getattr(value, "default_factory", None)
    if callable(factory):
        _weight(name, "'s default", factory())


def instance_of(value: object, kind: type[_Kind], name: str, made_by: str) -> _Kind:
    """`value`, typed as the `kind` it was checked to be; an error naming `name` and what makes a `kind` else."""
    if not isinstance(value, kind):
        raise wrong_type(name, f"{kind.__name__} (from {made_by})", kind.__name__, value)
    return value
