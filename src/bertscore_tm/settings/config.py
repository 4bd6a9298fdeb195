"""The one settings object: every entry point builds a `Config` with `Config.of` and passes it down, so nothing
below re-declares or re-checks a setting. Defaults and rules live in the table (`arguments.py`) alone."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from bertscore_tm.errors import ArgumentTypeError, ArgumentValueError
from bertscore_tm.settings.arguments import SETTINGS, ForwardFn, IgnoreRule, validate_arguments

if TYPE_CHECKING:
    import torch


@dataclasses.dataclass(frozen=True)
class ModelSettings:
    """Which model, which layer, in which precision."""

    model_name_or_path: str | os.PathLike[str] | None
    num_layers: int | None
    all_layers: bool
    lang: str | None
    model_dtype: torch.dtype
    compile_model: bool
    model: torch.nn.Module | None
    tokenizer: Any
    forward_fn: ForwardFn | None
    revision: str | None
    local_files_only: bool
    trust_remote_code: bool
    use_fast_tokenizer: bool


@dataclasses.dataclass(frozen=True)
class TextSettings:
    """How texts become token sequences: the window, long texts, prompts and the tokens left out."""

    max_length: int | None
    long_texts: str
    window_stride: int | None
    ignore: IgnoreRule | None
    candidate_prompt: str | None
    reference_prompt: str | None
    prefix_space: bool


@dataclasses.dataclass(frozen=True)
class ScoringSettings:
    """How best similarities become scores: the token weights, F-beta and rescaling."""

    idf: bool
    idf_texts: Sequence[str] | None
    idf_weights: Mapping[int, float] | None
    beta: float | None
    rescale_with_baseline: bool
    baseline_path: str | os.PathLike[str] | None


@dataclasses.dataclass(frozen=True)
class RuntimeSettings:
    """Where and how the work runs; no score depends on these."""

    device: torch.device | str | None
    batch_size: int | None
    embedding_cache_mb: int
    verbose: bool
    num_threads: int | None


@dataclasses.dataclass(frozen=True)
class OutputSettings:
    """What a call returns."""

    reduction: str
    output: str | None
    return_hash: bool


_GROUPS: dict[str, type] = {
    "model": ModelSettings,
    "text": TextSettings,
    "scoring": ScoringSettings,
    "runtime": RuntimeSettings,
    "output": OutputSettings,
}


@dataclasses.dataclass(frozen=True)
class Config:
    """A scoring's settings, checked: build it with `Config.of`, never directly.

    >>> config = Config.of({"model_name_or_path": "m", "num_layers": 5, "idf": True})
    >>> config.model.num_layers, config.scoring.idf, config.text.long_texts
    (5, True, 'truncate')
    """

    model: ModelSettings
    text: TextSettings
    scoring: ScoringSettings
    runtime: RuntimeSettings
    output: OutputSettings

    @classmethod
    def of(cls, arguments: Mapping[str, object], *, caller: str = "BERTScore", unused: Collection[str] = ()) -> Config:
        """The settings `arguments` names (the table's defaults for the rest), checked before anything loads. An
        unknown name is a TypeError, as Python gives it; a setting in `unused` not at its default is refused."""
        unknown = [name for name in arguments if name not in SETTINGS]
        if unknown:
            raise ArgumentTypeError(
                f"{caller}() got an unexpected keyword argument {unknown[0]!r}",
                argument=unknown[0],
                expected="a setting of the metric (docs/metric.md)",
                value=arguments[unknown[0]],
            )
        validate_arguments(arguments)
        for name in unused:
            if name in arguments and arguments[name] != _default(name):
                raise ArgumentValueError(
                    f"{caller}() does not use {name}: leave it out (it would be ignored)",
                    argument=name,
                    allowed="left out",
                    value=arguments[name],
                )
        values = {name: _kept(name, arguments[name]) if name in arguments else _default(name) for name in SETTINGS}
        groups = {
            group: kind(**{f.name: values[f.name] for f in dataclasses.fields(kind)}) for group, kind in _GROUPS.items()
        }
        return cls(**groups)

    def arguments(self) -> dict[str, object]:
        """Every setting by name, as `Config.of` takes them."""
        parts = [getattr(self, group) for group in _GROUPS]
        return {f.name: getattr(part, f.name) for part in parts for f in dataclasses.fields(part)}

    def replace(self, **changes: object) -> Config:
        """These settings with `changes`, checked again as a whole."""
        return Config.of({**self.arguments(), **changes})


def _kept(name: str, value: object) -> object:
    """A numpy scalar as the Python number it holds, then the table's conversion."""
    if type(value).__module__ == "numpy" and getattr(value, "shape", None) == ():
        value = value.item()  # type: ignore[attr-defined]
    convert = SETTINGS[name].convert
    return value if convert is None else convert(value)


def _default(name: str) -> object:
    """The table's default of `name`; a dtype's name turned into the torch dtype."""
    value = SETTINGS[name].default
    if name == "model_dtype":
        import torch

        return getattr(torch, str(value))
    return value


def groups() -> dict[str, tuple[str, ...]]:
    """Each group's setting names, in the table's order within the group (the docs and a test read them)."""
    return {group: tuple(f.name for f in dataclasses.fields(kind)) for group, kind in _GROUPS.items()}
