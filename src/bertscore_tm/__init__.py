"""bertscore-tm: an exact, fast BERTScore for torchmetrics and PyTorch Lightning.

Names are imported on first use, so that the command line answers `--help` and user errors without first
loading torch and transformers.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS = {
    "BERTScore": "bertscore_tm.metric",
    "bert_score": "bertscore_tm.functional",
    "score": "bertscore_tm.functional",
    "pairwise_bert_score": "bertscore_tm.pairwise",
    "mbr_select": "bertscore_tm.mbr",
    "explain": "bertscore_tm.explanation",
    "BaselineNotFoundError": "bertscore_tm.errors",
    "ModelNotFoundError": "bertscore_tm.errors",
    "PACKAGED_MINILM": "bertscore_tm.registry",
}

# a literal list (what linters and type checkers read), the names of _EXPORTS and __version__
__all__ = [
    "PACKAGED_MINILM",
    "BERTScore",
    "BaselineNotFoundError",
    "ModelNotFoundError",
    "__version__",
    "bert_score",
    "explain",
    "mbr_select",
    "pairwise_bert_score",
    "score",
]

if TYPE_CHECKING:
    from bertscore_tm.errors import BaselineNotFoundError, ModelNotFoundError
    from bertscore_tm.explanation import explain
    from bertscore_tm.functional import bert_score, score
    from bertscore_tm.mbr import mbr_select
    from bertscore_tm.metric import BERTScore
    from bertscore_tm.pairwise import pairwise_bert_score
    from bertscore_tm.registry import PACKAGED_MINILM


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'bertscore_tm' has no attribute {name!r}")
