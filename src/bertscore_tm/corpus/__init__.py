"""Large corpora: input files read as streams, runs that resume where they stopped, and rows given as columns
(Ray Data, Hugging Face datasets, DataFrames) scored a batch at a time with IDF counted over the whole corpus.

Public names are imported on first use (`bertscore_tm.lazy`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bertscore_tm.lazy import exports

__all__ = [
    "BatchScorer",
    "CheckpointMismatchError",
    "corpus_idf",
    "pairwise_resumable",
    "score_resumable",
    "score_stream",
]

__getattr__ = exports(
    __name__,
    {
        "BatchScorer": "batches",
        "corpus_idf": "idf_counts",
        "CheckpointMismatchError": "resumable",
        "pairwise_resumable": "resumable",
        "score_resumable": "resumable",
        "score_stream": "resumable",
    },
)

if TYPE_CHECKING:
    from bertscore_tm.corpus.batches import BatchScorer
    from bertscore_tm.corpus.idf_counts import corpus_idf
    from bertscore_tm.corpus.resumable import CheckpointMismatchError, pairwise_resumable, score_resumable, score_stream
