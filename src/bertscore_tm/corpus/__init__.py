"""Large corpora: input files read as streams, and runs that resume where they stopped.

Public names are imported on first use (`bertscore_tm.lazy`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bertscore_tm.lazy import exports

__all__ = [
    "CheckpointMismatchError",
    "pairwise_resumable",
    "score_resumable",
    "score_stream",
]

__getattr__ = exports(
    __name__,
    {
        "CheckpointMismatchError": "resumable",
        "pairwise_resumable": "resumable",
        "score_resumable": "resumable",
        "score_stream": "resumable",
    },
)

if TYPE_CHECKING:
    from bertscore_tm.corpus.resumable import CheckpointMismatchError, pairwise_resumable, score_resumable, score_stream
