"""The one way into the models folder: `load_model` turns a name, a folder or the user's model object into a
checked encoder with its text encoder and family facts, cheapest and likeliest failures first (name, tokenizer,
window), so that nothing heavy loads for a setting that cannot work."""

from __future__ import annotations

import dataclasses
from typing import Any

import torch
from torch import Tensor, nn

from bertscore_tm.errors import ArgumentValueError
from bertscore_tm.models.loading import embedding_rows, load_encoder, locate_model
from bertscore_tm.models.masks import describe, ignored_table
from bertscore_tm.models.model_family import model_config, position_limit, vocabulary_rows
from bertscore_tm.models.prompts import check_prompt
from bertscore_tm.models.registry import default_model, default_num_layers, is_known_model
from bertscore_tm.models.tokenizing import TextEncoder, check_vocabulary
from bertscore_tm.models.user_model import (
    UserModel,
    hash_model_name,
    known_model_name,
    prepare_user_model,
)
from bertscore_tm.models.windows import WindowRule, window_label, window_rule
from bertscore_tm.settings.config import ModelSettings, TextSettings


@dataclasses.dataclass(frozen=True)
class LoadedModel:
    """A model ready to embed with, and the facts about it that the scorer and its hash code need."""

    #: The model's name as the hash code shows it.
    name: str
    #: What runs the forward pass: the cut encoder we loaded, or a view of the user's model object.
    runner: nn.Module | UserModel
    #: Tokenisation, truncation and the special tokens' ids.
    text_encoder: TextEncoder
    #: The rule that cuts long texts into windows (None: texts run whole or are truncated).
    windows: WindowRule | None
    #: The layer scored with (None only with all_layers on a model no table knows).
    num_layers: int | None
    #: The number of blocks of the whole model.
    depth: int
    #: Rows of the IDF tables: the larger of the tokenizer's vocabulary and the embedding table.
    vocab_size: int
    #: The vectors' width where the model is the user's (a `UserModel`); None for a model we loaded.
    hidden_size: int | None
    #: Whether the model is the user's object (then it runs where it is and is never moved by scoring).
    user_supplied: bool
    #: The hash code's name for the window setting (None in truncate mode).
    window_label: str | None
    #: Token ids left out of the matching and the weights (``ignore=``), or None.
    ignored: Tensor | None = None
    #: The hash code's name for the mask (None without one).
    ignore_label: str | None = None
    #: The Hub commit the model's files are of (None: a local folder, the packaged MiniLM or the user's object).
    commit: str | None = None


def load_model(model: ModelSettings, text: TextSettings, progress: bool = False) -> LoadedModel:
    """The model the settings name, loaded, cut and checked, with its tokenizer's rules (prompts, ignored tokens)."""
    loaded = _load_named(model, text, progress) if model.model is None else _wrap_object(model, text)
    return dataclasses.replace(loaded, ignored=_ignored(loaded, text), ignore_label=describe(text.ignore))


def _ignored(loaded: LoadedModel, r: TextSettings) -> Tensor | None:
    """The ignored tokens' table (`masks.py`); all False where only prompts mark tokens."""
    if r.ignore is not None:
        return ignored_table(loaded.text_encoder.tokenizer, r.ignore, loaded.vocab_size)
    if r.candidate_prompt is None and r.reference_prompt is None:
        return None
    return torch.zeros(loaded.vocab_size, dtype=torch.bool)


def _load_named(r: ModelSettings, text: TextSettings, progress: bool) -> LoadedModel:
    """A model from a folder, the cache or the Hub; one not found is said before anything loads."""
    name = str(r.model_name_or_path if r.model_name_or_path is not None else default_model(str(r.lang)))
    remote = r.trust_remote_code
    where = locate_model(
        name, revision=r.revision, local_files_only=r.local_files_only, trust_remote_code=remote, progress=progress
    )
    path = where.path
    num_layers = r.num_layers
    if num_layers is None and (not r.all_layers or is_known_model(name)):
        num_layers = default_num_layers(name)
    config = model_config(path, trust_remote_code=remote)
    # the window is checked before the weights load
    text_encoder, windows = _text_encoder(path, config, text, r)
    # with all_layers an untabled model needs no layer: its hash code then names the full depth
    layers = 0 if num_layers is None else int(num_layers)
    encoder, depth = load_encoder(path, layers, r.all_layers, trust_remote_code=remote)
    check_vocabulary(text_encoder.tokenizer, embedding_rows(encoder), path)
    vocab_size = max(text_encoder.vocab_size, vocabulary_rows(config))
    label = window_label(text.long_texts, windows)
    return LoadedModel(
        name, encoder, text_encoder, windows, num_layers, depth, vocab_size, None, False, label, commit=where.commit
    )


def _wrap_object(r: ModelSettings, text: TextSettings) -> LoadedModel:
    """The user's model object, through a view that leaves it as it is (`user_model.py`)."""
    assert r.model is not None
    known = known_model_name(r.model)
    num_layers = r.num_layers
    if num_layers is None and (not r.all_layers or known is not None):
        num_layers = _object_default_layer(r.model, known)
    runner, depth = prepare_user_model(r.model, r.tokenizer, num_layers, r.all_layers, r.forward_fn)
    config = getattr(runner.view, "config", None)
    text_encoder, windows = _text_encoder(r.tokenizer, config, text, r)
    vocab_size = max(text_encoder.vocab_size, vocabulary_rows(config))
    name, label = hash_model_name(r.model, r.forward_fn), window_label(text.long_texts, windows)
    return LoadedModel(
        name, runner, text_encoder, windows, num_layers, depth, vocab_size, runner.hidden_size, True, label
    )


def _text_encoder(
    tokenizer: Any, config: Any, r: TextSettings, model: ModelSettings
) -> tuple[TextEncoder, WindowRule | None]:
    """The text encoder and window rule, the prompts checked to leave a text room (before any weights load)."""
    text_encoder = TextEncoder(
        tokenizer,
        r.max_length,
        position_limit(config),
        r.long_texts == "truncate",
        r.long_texts == "window",
        trust_remote_code=model.trust_remote_code,
        use_fast=model.use_fast_tokenizer,
        prefix_space=r.prefix_space,
    )
    windows = window_rule(r.long_texts, r.window_stride, text_encoder)
    for prompt, name in ((r.candidate_prompt, "candidate_prompt"), (r.reference_prompt, "reference_prompt")):
        check_prompt(text_encoder, prompt, name)
    return text_encoder, windows


def _object_default_layer(model: torch.nn.Module, known: str | None) -> int:
    if known is not None:
        return default_num_layers(known)
    config_name = getattr(getattr(model, "config", None), "name_or_path", "") or ""
    raise ArgumentValueError(
        f"num_layers is required with model=: no default layer is known for this {type(model).__name__} (its "
        f"config's name_or_path {config_name!r} is in neither the user layer table (the JSON file named by "
        "BERTSCORE_TM_LAYERS) nor configs/models.json). Pass num_layers=<int>, the layer whose output to score with "
        "(0 = embeddings), or add the name to a layer table (bertscore_tm.tuning.tune_layers finds a layer).",
        argument="num_layers",
        allowed="an integer >= 0",
        value=None,
        others=("model",),
    )
