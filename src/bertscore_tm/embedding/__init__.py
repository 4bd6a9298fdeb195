"""Running the cut model: batching, attention, windows over long texts and the embedding cache."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bertscore_tm.lazy import exports

__all__ = [
    "Embedder",
    "EmbeddingCache",
]

__getattr__ = exports(
    __name__,
    {
        "Embedder": "embedder",
        "EmbeddingCache": "cache",
    },
)

if TYPE_CHECKING:
    from bertscore_tm.embedding.cache import EmbeddingCache
    from bertscore_tm.embedding.embedder import Embedder
