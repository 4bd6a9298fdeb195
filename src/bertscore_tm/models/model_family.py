"""Facts about model families that scoring depends on, in one place (docs/architecture.md): position limits,
final norms, prefix spaces, special-token layout, packing and vector width."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from bertscore_tm.resources import load_config

#: Families whose position ids start after the padding id (RoBERTa's layout), so that the last
#: ``pad_token_id + 1`` rows of the position table can never be used.
ROBERTA_POSITIONS = frozenset({"roberta", "xlm-roberta", "xlm-roberta-xl", "camembert", "longformer", "data2vec-text"})


def position_limit(config: Any) -> int | None:
    """The most tokens (specials included) the position table takes; None for relative positions (DeBERTa-v3).

    >>> from types import SimpleNamespace
    >>> position_limit(SimpleNamespace(max_position_embeddings=514, model_type="roberta", pad_token_id=1))
    512
    >>> deberta_v3 = SimpleNamespace(max_position_embeddings=512, model_type="deberta-v2", position_biased_input=False)
    >>> position_limit(deberta_v3)
    """
    limit = getattr(config, "max_position_embeddings", None)
    if not isinstance(limit, int):
        return None
    kind = getattr(config, "model_type", "")
    if kind in ("deberta", "deberta-v2") and not getattr(config, "position_biased_input", True):
        return None
    if kind in ROBERTA_POSITIONS:
        limit -= (getattr(config, "pad_token_id", 1) or 1) + 1
    return limit


def vocabulary_rows(config: Any) -> int:
    """The number of token ids the model's config declares (0 where it says none)."""
    return int(getattr(config, "vocab_size", 0) or 0)


def model_config(path: Path | str, *, trust_remote_code: bool = False) -> Any:
    """The model's config alone (no weights), read from its folder."""
    from transformers import AutoConfig

    return AutoConfig.from_pretrained(str(path), local_files_only=True, trust_remote_code=trust_remote_code)


#: Final norms that hidden_states[k] lacks for k < depth, so a model cut to k blocks skips them. T5 is left out
#: on purpose: the reference keeps its final_layer_norm at every layer (tests/parity/test_architectures.py).
FINAL_NORMS = {"modernbert": "final_norm", "eurobert": "norm"}


def final_norm(config: Any) -> str | None:
    """The attribute of a pre-norm family's final layer norm (`FINAL_NORMS`), or None."""
    return FINAL_NORMS.get(str(getattr(config, "model_type", "")))


def uses_prefix_space(tokenizer: object) -> bool:
    """The reference's rule: GPT-2 and RoBERTa-family (byte-level BPE) tokenizers get `add_prefix_space`."""
    import transformers

    names = ("GPT2Tokenizer", "RobertaTokenizer", "GPT2TokenizerFast", "RobertaTokenizerFast")  # Fast: transformers 4
    classes = (getattr(transformers, name, None) for name in names)
    return isinstance(tokenizer, tuple(cls for cls in classes if isinstance(cls, type)))


def special_layout(tokenizer: object) -> tuple[int, int]:
    """How many special tokens the tokenizer puts before a text's tokens and after them."""
    probe = "a b"
    bare = tokenizer(probe, add_special_tokens=False)["input_ids"]  # type: ignore[operator]
    full = tokenizer(probe, add_special_tokens=True)["input_ids"]  # type: ignore[operator]
    for lead in range(len(full) - len(bare) + 1):
        if full[lead : lead + len(bare)] == bare:
            return lead, len(full) - len(bare) - lead
    raise ValueError(f"cannot find where {type(tokenizer).__name__} puts its special tokens around a text")


def can_pack(model: Any) -> bool:
    """Whether `model` is of a family that runs packed (`configs/packing.json`) with absolute positions."""
    config = getattr(model, "config", None)
    if config is None or getattr(config, "model_type", None) not in load_config("packing.json")["model_types"]:
        return False
    if getattr(config, "is_decoder", False) or getattr(config, "add_cross_attention", False):
        return False
    if getattr(config, "position_embedding_type", "absolute") not in (None, "absolute"):
        return False
    return isinstance(getattr(model, "embeddings", None), torch.nn.Module) and isinstance(
        getattr(model, "encoder", None), torch.nn.Module
    )


def packed_positions(model: Any, ids: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Position ids of texts laid end to end, each counted as the family's embeddings count a text alone
    (RoBERTa's layout from the padding id + 1), so that one embedding lookup serves a whole pack.

    >>> from types import SimpleNamespace as NS
    >>> ids, lengths, bert = torch.tensor([5, 6, 7, 8, 1, 9]), torch.tensor([2, 4]), NS(config=NS(model_type="bert"))
    >>> roberta = NS(config=NS(model_type="roberta"), embeddings=NS(padding_idx=1))
    >>> packed_positions(bert, ids, lengths).tolist(), packed_positions(roberta, ids, lengths).tolist()
    ([0, 1, 0, 1, 2, 3], [2, 3, 2, 3, 1, 4])
    """
    starts = torch.cumsum(lengths, 0) - lengths
    if model.config.model_type not in ROBERTA_POSITIONS:
        return torch.arange(len(ids)) - torch.repeat_interleave(starts, lengths, output_size=len(ids))
    pad = model.embeddings.padding_idx
    kept = (ids != pad).long()
    counted = torch.cumsum(kept, 0)
    before = torch.repeat_interleave(counted[starts] - kept[starts], lengths, output_size=len(ids))  # each text's
    return (counted - before) * kept + pad


def hidden_size(encoder: Any) -> int | None:
    """The width of the model's token vectors, from its config (families name it differently)."""
    config = getattr(encoder, "config", None)
    for name in ("hidden_size", "d_model", "dim", "emb_dim"):
        size = getattr(config, name, None)
        if isinstance(size, int):
            return size
    return None
