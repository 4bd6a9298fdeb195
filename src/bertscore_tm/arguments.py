"""Argument validation in one place: every constructor argument of `BERTScore` (and so of `bert_score` and
`score`, which build one) is checked here before any model is loaded, so that a wrong setting fails at once
with an error naming the argument, instead of deep inside transformers or, worse, as a silently odd score.

Types are strict: booleans must be `bool` (``idf="no"`` is truthy, so it would turn IDF on) and integers
must be integers (``num_layers=5.5``, ``True`` or ``"5"`` are refused, not rounded or parsed): a wrong type is
an `ArgumentTypeError` (a TypeError), a value out of range or not among the choices an `ArgumentValueError`
(a ValueError), each naming the argument and what is allowed.

Each argument has one rule in `RULES`, so a new argument is one more line there (and a test checks that no
constructor argument lacks one); rules about several arguments together are the functions of `COMBINATIONS`.
Only limits that need the model (the model's depth, its window) are checked later, when it is loaded.
This module imports nothing heavy: torch only when a dtype or a device is checked.
"""

from __future__ import annotations

import numbers
import os
from collections.abc import Callable, Mapping
from typing import Literal, get_args

from bertscore_tm.errors import ArgumentTypeError, ArgumentValueError

#: The values of ``reduction``: per-pair scores, or their means.
Reduction = Literal["none", "mean"]
#: The values of ``output``: which score to return alone.
OutputName = Literal["precision", "recall", "f1"]

REDUCTIONS: tuple[str, ...] = get_args(Reduction)
OUTPUTS: tuple[str, ...] = get_args(OutputName)
#: The compute dtypes of the model, by name: float32 is exact, the others run under autocast.
MODEL_DTYPES = ("float32", "bfloat16", "float16")

#: A rule: check one argument's value, raising ArgumentTypeError or ArgumentValueError naming `name`.
Rule = Callable[[str, object], None]


def _shown(value: object) -> str:
    return f"{type(value).__name__} {value!r:.60}"


def _or_none(optional: bool) -> str:
    return " or None" if optional else ""


def boolean(name: str, value: object) -> None:
    """True or False, nothing else (not 0/1, not "yes")."""
    if not isinstance(value, bool):
        raise ArgumentTypeError(
            f"{name} must be True or False, got {_shown(value)}", argument=name, expected="bool", value=value
        )


def integer(minimum: int, *, optional: bool = False, why: str = "") -> Rule:
    """An int (not a bool, float or string) of at least `minimum`; None too where `optional`."""

    def check(name: str, value: object) -> None:
        if value is None and optional:
            return
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise ArgumentTypeError(
                f"{name} must be an integer{_or_none(optional)}, got {_shown(value)}",
                argument=name, expected=f"int{_or_none(optional)}", value=value,
            )
        if value < minimum:
            allowed = f"an integer >= {minimum}{_or_none(optional)}"
            raise ArgumentValueError(
                f"{name} must be {allowed}{why}, got {value}", argument=name, allowed=allowed, value=value
            )

    return check


def choice(allowed: tuple[str, ...], *, optional: bool = False) -> Rule:
    """One of the strings `allowed`; None too where `optional`."""
    listed = ", ".join(repr(a) for a in allowed) + _or_none(optional)

    def check(name: str, value: object) -> None:
        if value is None and optional:
            return
        if not isinstance(value, str):
            raise ArgumentTypeError(
                f"{name} must be one of {listed}, got {_shown(value)}", argument=name, expected=listed, value=value
            )
        if value not in allowed:
            raise ArgumentValueError(f"{name} must be one of {listed}, got {value!r}", argument=name, allowed=listed, value=value)

    return check


def text(*, optional: bool = False) -> Rule:
    """A non-blank string; None too where `optional`."""

    def check(name: str, value: object) -> None:
        if value is None and optional:
            return
        if not isinstance(value, str):
            raise ArgumentTypeError(
                f"{name} must be a string{_or_none(optional)}, got {_shown(value)}",
                argument=name, expected=f"str{_or_none(optional)}", value=value,
            )
        if not value.strip():
            raise ArgumentValueError(f"{name} must not be blank", argument=name, allowed="a non-blank string", value=value)

    return check


def path(*, optional: bool = False) -> Rule:
    """A non-blank string or os.PathLike (a path, or a model name); None too where `optional`."""

    def check(name: str, value: object) -> None:
        if value is None and optional:
            return
        if not isinstance(value, (str, os.PathLike)):
            raise ArgumentTypeError(
                f"{name} must be a string or a path{_or_none(optional)}, got {_shown(value)}",
                argument=name, expected=f"str | os.PathLike{_or_none(optional)}", value=value,
            )
        if not str(os.fspath(value)).strip():
            raise ArgumentValueError(f"{name} must not be blank", argument=name, allowed="a non-blank path", value=value)

    return check


def model_dtype(name: str, value: object) -> None:
    """torch.float32 (exact), torch.bfloat16 or torch.float16."""
    import torch

    allowed = ", ".join(f"torch.{d}" for d in MODEL_DTYPES)
    if not isinstance(value, torch.dtype):
        raise ArgumentTypeError(f"{name} must be a torch.dtype ({allowed}), got {_shown(value)}", argument=name, expected=allowed, value=value)
    if value not in tuple(getattr(torch, d) for d in MODEL_DTYPES):
        raise ArgumentValueError(f"{name} must be one of {allowed}, got {value}", argument=name, allowed=allowed, value=value)


def device(name: str, value: object) -> None:
    """None (follow the metric), or a torch.device or a string torch can parse ("cpu", "cuda:1")."""
    if value is None:
        return
    import torch

    if not isinstance(value, (str, torch.device)):
        raise ArgumentTypeError(
            f"{name} must be a torch.device, a string such as 'cpu' or 'cuda:0', or None, got {_shown(value)}",
            argument=name, expected="torch.device | str | None", value=value,
        )
    try:
        torch.device(value)
    except (RuntimeError, ValueError) as err:
        raise ArgumentValueError(
            f"{name}={value!r} is not a torch device ({err})", argument=name, allowed="a torch device", value=value
        ) from None


#: One rule per constructor argument of BERTScore (torchmetrics' own keyword arguments are left to it).
RULES: dict[str, Rule] = {
    "model_name_or_path": path(optional=True),
    "num_layers": integer(0, optional=True, why=" (0 is the embedding layer)"),
    "all_layers": boolean,
    "lang": text(optional=True),
    "idf": boolean,
    "rescale_with_baseline": boolean,
    "baseline_path": path(optional=True),
    "batch_size": integer(1, optional=True),
    "max_length": integer(2, optional=True, why=" (room for the special tokens)"),
    "device": device,
    "model_dtype": model_dtype,
    "reduction": choice(REDUCTIONS),
    "output": choice(OUTPUTS, optional=True),
    "return_hash": boolean,
    "verbose": boolean,
    "embedding_cache_mb": integer(0, why=" (MiB of cached vectors; 0 turns the cache off)"),
}


def _model_or_lang(arguments: Mapping[str, object]) -> None:
    both_given = "model_name_or_path" in arguments and "lang" in arguments
    if both_given and arguments["model_name_or_path"] is None and arguments["lang"] is None:
        raise ArgumentValueError(
            "Pass model_name_or_path or lang (which picks the language's default model)",
            argument="model_name_or_path", allowed="a model, or lang", value=None, others=("lang",),
        )


def _hash_needs_the_dict(arguments: Mapping[str, object]) -> None:
    if arguments.get("output") is not None and arguments.get("return_hash"):
        raise ArgumentValueError(
            "return_hash needs the dict output (output=None); the code is also at metric.hash_code",
            argument="return_hash", allowed="False when output is given", value=True, others=("output",),
        )


def _baseline_path_needs_rescaling(arguments: Mapping[str, object]) -> None:
    if arguments.get("baseline_path") is not None and not arguments.get("rescale_with_baseline"):
        raise ArgumentValueError(
            f"baseline_path={str(arguments['baseline_path'])!r} is given but rescale_with_baseline is False, so the "
            "file would be ignored: pass rescale_with_baseline=True to rescale with it, or leave out baseline_path",
            argument="baseline_path", allowed="None unless rescale_with_baseline=True",
            value=arguments["baseline_path"], others=("rescale_with_baseline",),
        )


#: Rules about arguments together, run after every argument passed its own rule.
COMBINATIONS: tuple[Callable[[Mapping[str, object]], None], ...] = (
    _model_or_lang,
    _hash_needs_the_dict,
    _baseline_path_needs_rescaling,
)


def validate_arguments(arguments: Mapping[str, object]) -> None:
    """Check BERTScore constructor arguments by name, before anything is loaded.

    Each name in `arguments` that has a rule in `RULES` is checked (names without one, such as torchmetrics'
    own keyword arguments, are left to their owner), then the rules about several arguments together.

    Raises:
        ArgumentTypeError: a value of the wrong type (a TypeError), naming the argument and the type it needs.
        ArgumentValueError: a value out of range or not among the choices, or arguments that do not go
            together (a ValueError), naming the argument(s) and what is allowed.

    >>> validate_arguments({"num_layers": 5, "idf": True, "reduction": "mean"})
    >>> validate_arguments({"num_layers": 5.5})
    Traceback (most recent call last):
    ...
    bertscore_tm.errors.ArgumentTypeError: num_layers must be an integer or None, got float 5.5
    >>> validate_arguments({"batch_size": 0})
    Traceback (most recent call last):
    ...
    bertscore_tm.errors.ArgumentValueError: batch_size must be an integer >= 1 or None, got 0
    """
    for name, value in arguments.items():
        rule = RULES.get(name)
        if rule is not None:
            rule(name, value)
    for combination in COMBINATIONS:
        combination(arguments)
