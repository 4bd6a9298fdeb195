"""Finding, loading and tokenising models: `load_model` turns a name, a folder or the user's model object into
a checked encoder with its tokenizer and window rule. Public names are imported on first use (`bertscore_tm.lazy`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bertscore_tm.lazy import exports

__all__ = [
    "PACKAGED_MINILM",
    "LoadedModel",
    "TextEncoder",
    "add_to_layer_table",
    "default_model",
    "default_num_layers",
    "load_encoder",
    "load_model",
    "resolve_model_path",
]

__getattr__ = exports(
    __name__,
    {
        "LoadedModel": "encoder",
        "load_model": "encoder",
        "PACKAGED_MINILM": "registry",
        "add_to_layer_table": "registry",
        "default_model": "registry",
        "default_num_layers": "registry",
        "TextEncoder": "tokenizing",
        "load_encoder": "loading",
        "resolve_model_path": "loading",
    },
)

if TYPE_CHECKING:
    from bertscore_tm.models.encoder import LoadedModel, load_model
    from bertscore_tm.models.loading import load_encoder, resolve_model_path
    from bertscore_tm.models.registry import PACKAGED_MINILM, add_to_layer_table, default_model, default_num_layers
    from bertscore_tm.models.tokenizing import TextEncoder
