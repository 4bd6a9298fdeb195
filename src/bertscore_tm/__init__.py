"""bertscore-tm: an exact, fast BERTScore for torchmetrics and PyTorch Lightning."""

from bertscore_tm.baselines import BaselineNotFoundError
from bertscore_tm.functional import bert_score, score
from bertscore_tm.metric import BERTScore
from bertscore_tm.registry import PACKAGED_MINILM, ModelNotFoundError

__version__ = "0.1.0"

__all__ = ["BERTScore", "BaselineNotFoundError", "ModelNotFoundError", "PACKAGED_MINILM", "bert_score", "score", "__version__"]
