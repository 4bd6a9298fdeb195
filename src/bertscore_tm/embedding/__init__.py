"""Running the cut model: batches of one length (or packed), its attention, windows over long texts and the
embedding cache.

Public names are imported on first use (`bertscore_tm.lazy`).
"""

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
