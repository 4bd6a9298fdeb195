"""Facts about model families that scoring depends on, read from a model's config.

Why a module of its own: a family's facts (how long a text its position table takes, which layer norm ends
it, whether its tokenizer wants a prefix space, where its special tokens sit) used to be read in six places.
This one holds the config-level facts; the others name it (docs/architecture.md lists where each fact lives).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

#: Families whose position ids start after the padding id (RoBERTa's layout), so that the last
#: ``pad_token_id + 1`` rows of the position table can never be used.
ROBERTA_POSITIONS = frozenset({"roberta", "xlm-roberta", "xlm-roberta-xl", "camembert", "longformer", "data2vec-text"})


def position_limit(config: Any) -> int | None:
    """The most tokens (special ones included) the model's position table takes, or None where nothing limits
    the length (relative positions only, as DeBERTa-v3 has).

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


def model_config(path: Path | str) -> Any:
    """The model's config alone (no weights), read from its folder."""
    from transformers import AutoConfig

    return AutoConfig.from_pretrained(str(path), local_files_only=True)
