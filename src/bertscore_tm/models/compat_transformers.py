"""What bertscore-tm reads of transformers beyond its public interface, in one place (checked by
tests/unit/models/test_compat_transformers.py)."""

from __future__ import annotations

from typing import Any


def attention_implementation(model: Any) -> str | None:
    """The attention implementation a loaded model runs ("sdpa", "eager", ...), or None where it says none."""
    found = getattr(getattr(model, "config", None), "_attn_implementation", None)
    return found if isinstance(found, str) else None
