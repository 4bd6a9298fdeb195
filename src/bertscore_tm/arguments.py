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

import math
import numbers
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Literal, get_args

from bertscore_tm.errors import ArgumentTypeError, ArgumentValueError

#: The values of ``reduction``: per-pair scores, or their means.
Reduction = Literal["none", "mean"]
#: The values of ``output``: which score to return alone.
OutputName = Literal["precision", "recall", "f1"]

#: The values of ``long_texts``: cut texts at the model's window (the reference), or score them in windows.
LongTexts = Literal["truncate", "window"]

REDUCTIONS: tuple[str, ...] = get_args(Reduction)
LONG_TEXTS: tuple[str, ...] = get_args(LongTexts)
OUTPUTS: tuple[str, ...] = get_args(OutputName)
#: The compute dtypes of the model, by name: float32 is exact, the others run under autocast.
MODEL_DTYPES = ("float32", "bfloat16", "float16")

#: The most resamples (or shuffles) an interval or a paired test may draw (`bertscore_tm.significance`, and
#: ``--bootstrap`` on the command line): their means take 8 bytes each per system, so 8 MB a system at most.
#: The usual 1000 to 10,000 are far below it; the smallest p-value is then about 1e-6.
MAX_RESAMPLES = 1_000_000

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
                argument=name,
                expected=f"int{_or_none(optional)}",
                value=value,
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
            raise ArgumentValueError(
                f"{name} must be one of {listed}, got {value!r}", argument=name, allowed=listed, value=value
            )

    return check


def text(*, optional: bool = False) -> Rule:
    """A non-blank string; None too where `optional`."""

    def check(name: str, value: object) -> None:
        if value is None and optional:
            return
        if not isinstance(value, str):
            raise ArgumentTypeError(
                f"{name} must be a string{_or_none(optional)}, got {_shown(value)}",
                argument=name,
                expected=f"str{_or_none(optional)}",
                value=value,
            )
        if not value.strip():
            raise ArgumentValueError(
                f"{name} must not be blank", argument=name, allowed="a non-blank string", value=value
            )

    return check


def path(*, optional: bool = False) -> Rule:
    """A non-blank string or os.PathLike (a path, or a model name); None too where `optional`."""

    def check(name: str, value: object) -> None:
        if value is None and optional:
            return
        if not isinstance(value, (str, os.PathLike)):
            raise ArgumentTypeError(
                f"{name} must be a string or a path{_or_none(optional)}, got {_shown(value)}",
                argument=name,
                expected=f"str | os.PathLike{_or_none(optional)}",
                value=value,
            )
        if not str(os.fspath(value)).strip():
            raise ArgumentValueError(
                f"{name} must not be blank", argument=name, allowed="a non-blank path", value=value
            )

    return check


def model_dtype(name: str, value: object) -> None:
    """torch.float32 (exact), torch.bfloat16 or torch.float16."""
    import torch

    allowed = ", ".join(f"torch.{d}" for d in MODEL_DTYPES)
    if not isinstance(value, torch.dtype):
        raise ArgumentTypeError(
            f"{name} must be a torch.dtype ({allowed}), got {_shown(value)}",
            argument=name,
            expected=allowed,
            value=value,
        )
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
        raise ArgumentTypeError(
            f"{name} must be a torch.device, a string such as 'cpu' or 'cuda:0', or None, got {_shown(value)}",
            argument=name,
            expected="torch.device | str | None",
            value=value,
        )
    try:
        torch.device(value)
    except (RuntimeError, ValueError) as err:
        raise ArgumentValueError(
            f"{name}={value!r} is not a torch device ({err})", argument=name, allowed="a torch device", value=value
        ) from None


def module(name: str, value: object) -> None:
    """None, or a torch.nn.Module (a model object of the user's own)."""
    if value is None:
        return
    import torch

    if not isinstance(value, torch.nn.Module):
        raise ArgumentTypeError(
            f"{name} must be a torch.nn.Module (e.g. a transformers model) or None, got {_shown(value)}",
            argument=name,
            expected="torch.nn.Module | None",
            value=value,
        )


def tokenizer_object(name: str, value: object) -> None:
    """None, or a Hugging Face tokenizer object (transformers' PreTrainedTokenizerBase)."""
    if value is None:
        return
    from transformers import PreTrainedTokenizerBase

    if not isinstance(value, PreTrainedTokenizerBase):
        raise ArgumentTypeError(
            f"{name} must be a transformers tokenizer (e.g. AutoTokenizer.from_pretrained(...)) or None, got "
            f"{_shown(value)}",
            argument=name,
            expected="transformers.PreTrainedTokenizerBase | None",
            value=value,
        )


def function(name: str, value: object) -> None:
    """None, or something callable."""
    if value is not None and not callable(value):
        raise ArgumentTypeError(
            f"{name} must be a function or None, got {_shown(value)}",
            argument=name,
            expected="callable | None",
            value=value,
        )


def texts(name: str, value: object) -> None:
    """None, or a non-empty sequence of strings (a list, a tuple; not one string)."""
    if value is None:
        return
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise ArgumentTypeError(
            f"{name} must be a sequence of strings (e.g. a list of texts) or None, got {_shown(value)}",
            argument=name,
            expected="Sequence[str] | None",
            value=value,
        )
    if len(value) == 0:
        raise ArgumentValueError(
            f"{name} is empty: pass at least one text (or leave it out)",
            argument=name,
            allowed="a non-empty sequence of strings, or None",
            value=value,
        )
    for i, item in enumerate(value):
        if not isinstance(item, str):
            raise ArgumentTypeError(
                f"{name}[{i}] must be a string, got {_shown(item)}", argument=name, expected="str", value=item
            )


def _weight(name: str, where: str, weight: object) -> None:
    if isinstance(weight, bool) or not isinstance(weight, numbers.Real):
        raise ArgumentTypeError(
            f"{name}{where} must be a number, got {_shown(weight)}", argument=name, expected="float", value=weight
        )
    if not math.isfinite(weight) or weight < 0:
        raise ArgumentValueError(
            f"{name}{where} must be a finite weight >= 0, got {weight}",
            argument=name,
            allowed="finite numbers >= 0",
            value=weight,
        )


def weight_mapping(name: str, value: object) -> None:
    """None, or a non-empty mapping token id (int >= 0) -> weight (a finite number >= 0); a defaultdict's
    default weight is checked too."""
    if value is None:
        return
    if not isinstance(value, Mapping):
        raise ArgumentTypeError(
            f"{name} must be a mapping token id -> weight (e.g. metric.idf_weights() of another metric) or None, "
            f"got {_shown(value)}",
            argument=name,
            expected="Mapping[int, float] | None",
            value=value,
        )
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


#: One rule per constructor argument of BERTScore (torchmetrics' own keyword arguments are left to it).
RULES: dict[str, Rule] = {
    "model_name_or_path": path(optional=True),
    "model": module,
    "tokenizer": tokenizer_object,
    "forward_fn": function,
    "num_layers": integer(0, optional=True, why=" (0 is the embedding layer)"),
    "all_layers": boolean,
    "lang": text(optional=True),
    "idf": boolean,
    "idf_texts": texts,
    "idf_weights": weight_mapping,
    "rescale_with_baseline": boolean,
    "baseline_path": path(optional=True),
    "batch_size": integer(1, optional=True),
    "max_length": integer(2, optional=True, why=" (room for the special tokens)"),
    "long_texts": choice(LONG_TEXTS),
    "window_stride": integer(1, optional=True, why=" (and below the window's size)"),
    "device": device,
    "model_dtype": model_dtype,
    "reduction": choice(REDUCTIONS),
    "output": choice(OUTPUTS, optional=True),
    "return_hash": boolean,
    "verbose": boolean,
    "embedding_cache_mb": integer(0, why=" (MiB of cached vectors; 0 turns the cache off)"),
    "compile_model": boolean,
}


def _model_or_lang(arguments: Mapping[str, object]) -> None:
    both_given = "model_name_or_path" in arguments and "lang" in arguments
    no_object = arguments.get("model") is None
    if both_given and no_object and arguments["model_name_or_path"] is None and arguments["lang"] is None:
        raise ArgumentValueError(
            "Pass model_name_or_path or lang (which picks the language's default model)",
            argument="model_name_or_path",
            allowed="a model, or lang",
            value=None,
            others=("lang",),
        )


def _one_model(arguments: Mapping[str, object]) -> None:
    if arguments.get("model") is not None and arguments.get("model_name_or_path") is not None:
        raise ArgumentValueError(
            f"Pass model_name_or_path={str(arguments['model_name_or_path'])!r} or a model object (model=...), not "
            "both: the metric scores with one model",
            argument="model",
            allowed="None when model_name_or_path is given",
            value=arguments["model"],
            others=("model_name_or_path",),
        )


def _model_with_tokenizer(arguments: Mapping[str, object]) -> None:
    model, tokenizer = arguments.get("model"), arguments.get("tokenizer")
    if model is not None and tokenizer is None:
        raise ArgumentValueError(
            "model= needs its tokenizer: pass tokenizer=<the model's tokenizer object> too (e.g. "
            "AutoTokenizer.from_pretrained(...) of the same checkpoint)",
            argument="tokenizer",
            allowed="a tokenizer object when model is given",
            value=None,
            others=("model",),
        )
    if tokenizer is not None and model is None:
        raise ArgumentValueError(
            "tokenizer= goes with model=: pass the model object too (a model from model_name_or_path brings its own "
            "tokenizer)",
            argument="tokenizer",
            allowed="None unless model is given",
            value=tokenizer,
            others=("model",),
        )


def _forward_fn_needs_model(arguments: Mapping[str, object]) -> None:
    if arguments.get("forward_fn") is not None and arguments.get("model") is None:
        raise ArgumentValueError(
            "forward_fn runs a model object: pass model= and tokenizer= too (load the model yourself, e.g. "
            "AutoModel.from_pretrained(path), to use forward_fn with a model on disk)",
            argument="forward_fn",
            allowed="None unless model is given",
            value=arguments["forward_fn"],
            others=("model",),
        )


def _idf_sources_need_idf(arguments: Mapping[str, object]) -> None:
    given = [name for name in ("idf_texts", "idf_weights") if arguments.get(name) is not None]
    if len(given) == 2:
        raise ArgumentValueError(
            "Pass idf_texts (a corpus to count document frequencies in) or idf_weights (weights already made), "
            "not both",
            argument="idf_weights",
            allowed="None when idf_texts is given",
            value=arguments["idf_weights"],
            others=("idf_texts",),
        )
    if given and not arguments.get("idf"):
        raise ArgumentValueError(
            f"{given[0]} is given but idf is False, so it would be ignored: pass idf=True to weigh tokens with it, "
            f"or leave out {given[0]}",
            argument=given[0],
            allowed="None unless idf=True",
            value=arguments[given[0]],
            others=("idf",),
        )


def _hash_needs_the_dict(arguments: Mapping[str, object]) -> None:
    if arguments.get("output") is not None and arguments.get("return_hash"):
        raise ArgumentValueError(
            "return_hash needs the dict output (output=None); the code is also at metric.hash_code",
            argument="return_hash",
            allowed="False when output is given",
            value=True,
            others=("output",),
        )


def _baseline_path_needs_rescaling(arguments: Mapping[str, object]) -> None:
    if arguments.get("baseline_path") is not None and not arguments.get("rescale_with_baseline"):
        raise ArgumentValueError(
            f"baseline_path={str(arguments['baseline_path'])!r} is given but rescale_with_baseline is False, so the "
            "file would be ignored: pass rescale_with_baseline=True to rescale with it, or leave out baseline_path",
            argument="baseline_path",
            allowed="None unless rescale_with_baseline=True",
            value=arguments["baseline_path"],
            others=("rescale_with_baseline",),
        )


#: Rules about arguments together, run after every argument passed its own rule.
def _stride_needs_windows(arguments: Mapping[str, object]) -> None:
    stride, mode = arguments.get("window_stride"), arguments.get("long_texts", "truncate")
    if stride is not None and mode != "window":
        raise ArgumentValueError(
            f"window_stride={stride} applies only to long_texts='window' (long_texts is {mode!r})",
            argument="window_stride",
            allowed="None unless long_texts='window'",
            value=stride,
            others=("long_texts",),
        )


def _compile_needs_a_loaded_model(arguments: Mapping[str, object]) -> None:
    if arguments.get("compile_model") and arguments.get("model") is not None:
        raise ArgumentValueError(
            "compile_model compiles a model bertscore-tm loads; a model object of yours runs as you pass it: "
            "compile it yourself (torch.compile(model)) before passing it",
            argument="compile_model",
            allowed="False when model is given",
            value=True,
            others=("model",),
        )


COMBINATIONS: tuple[Callable[[Mapping[str, object]], None], ...] = (
    _model_or_lang,
    _one_model,
    _model_with_tokenizer,
    _forward_fn_needs_model,
    _idf_sources_need_idf,
    _hash_needs_the_dict,
    _baseline_path_needs_rescaling,
    _stride_needs_windows,
    _compile_needs_a_loaded_model,
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
