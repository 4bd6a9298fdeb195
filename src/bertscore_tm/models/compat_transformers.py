"""What bertscore-tm reads of transformers outside its public API (tests/unit/models/test_compat_transformers.py)."""

from __future__ import annotations

from typing import Any


def attention_implementation(model: Any) -> str | None:
    """The attention implementation a loaded model runs ("sdpa", "eager", ...), or None where it says none."""
    found = getattr(getattr(model, "config", None), "_attn_implementation", None)
    return found if isinstance(found, str) else None
