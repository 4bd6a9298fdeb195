"""bertscore-tm: an exact, fast BERTScore for torchmetrics and PyTorch Lightning.

The root exports the names a user types (`__all__`, fixed by a test); everything else is imported from its folder
(``bertscore_tm.corpus``, ``bertscore_tm.tuning``...). Names load on first use (`bertscore_tm.lazy`), so the
command line answers `--help` without loading torch.
"""

from __future__ import annotations

import importlib
import warnings
from typing import TYPE_CHECKING, Any

from bertscore_tm.lazy import exports

__version__ = "0.1.0"

__all__ = [
    "PACKAGED_MINILM",
    "BERTScore",
    "BERTScoreError",
    "BERTScorer",
    "BatchScorer",
    "Scores",
    "__version__",
    "bert_score",
    "score",
]

_exported = exports(
    __name__,
    {
        "BERTScore": "metric.bertscore",
        "BERTScorer": "integrations.bert_score",
        "bert_score": "engines.functional",
        "score": "engines.functional",
        "Scores": "scoring.results",
        "BatchScorer": "corpus.batches",
        "PACKAGED_MINILM": "models.registry",
        "BERTScoreError": "errors",
    },
)

#: Names the root exported before 0.2, and the folder each is imported from now (they still import from the root,
#: with a DeprecationWarning naming their folder).
MOVED = {
    **dict.fromkeys(("pairwise_bert_score", "mbr_select"), "engines"),
    **dict.fromkeys(("explain", "PairExplanation"), "explanations"),
    **dict.fromkeys(
        ("corpus_idf", "CheckpointMismatchError", "pairwise_resumable", "score_resumable", "score_stream"), "corpus"
    ),
    **dict.fromkeys(("bootstrap_interval", "paired_test"), "comparison"),
    **dict.fromkeys(
        (
            "LayerTuning",
            "tune_from_scores",
            "tune_layers",
            "tune_layers_on_rankings",
            "Judgements",
            "RelativeRankings",
            "read_judgements",
            "read_relative_rankings",
        ),
        "tuning",
    ),
    "add_to_layer_table": "models",
    **dict.fromkeys(
        (
            "ArgumentTypeError",
            "ArgumentValueError",
            "BaselineFileError",
            "BaselineNotFoundError",
            "ColumnDataError",
            "DeviceMemoryError",
            "InputFileError",
            "ModelDownloadError",
            "ModelNotFoundError",
            "ModelSetupError",
            "SettingsMismatchError",
        ),
        "errors",
    ),
}


def __getattr__(name: str) -> Any:
    if name in MOVED:
        folder = f"{__name__}.{MOVED[name]}"
        warnings.warn(
            f"bertscore_tm.{name} moved: import it from {folder} (from {folder} import {name})",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(importlib.import_module(folder), name)
    return _exported(name)


if TYPE_CHECKING:
    from bertscore_tm.corpus.batches import BatchScorer
    from bertscore_tm.engines.functional import bert_score, score
    from bertscore_tm.errors import BERTScoreError
    from bertscore_tm.integrations.bert_score import BERTScorer
    from bertscore_tm.metric.bertscore import BERTScore
    from bertscore_tm.models.registry import PACKAGED_MINILM
    from bertscore_tm.scoring.results import Scores
