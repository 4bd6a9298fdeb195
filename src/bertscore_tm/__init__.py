"""bertscore-tm: an exact, fast BERTScore for torchmetrics and PyTorch Lightning.

Every entry point the documentation shows is importable from here; `__all__` is the public API (a test fixes it).
Names are imported on first use (`bertscore_tm.lazy`), so that the command line answers `--help` and user errors
without first loading torch and transformers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bertscore_tm.lazy import exports

__version__ = "0.1.0"

__all__ = [
    "PACKAGED_MINILM",
    "ArgumentTypeError",
    "ArgumentValueError",
    "BERTScore",
    "BERTScoreError",
    "BERTScorer",
    "BaselineFileError",
    "BaselineNotFoundError",
    "BatchScorer",
    "CheckpointMismatchError",
    "ColumnDataError",
    "DeviceMemoryError",
    "InputFileError",
    "Judgements",
    "LayerTuning",
    "ModelDownloadError",
    "ModelNotFoundError",
    "ModelSetupError",
    "PairExplanation",
    "RelativeRankings",
    "Scores",
    "SettingsMismatchError",
    "__version__",
    "add_to_layer_table",
    "bert_score",
    "bootstrap_interval",
    "corpus_idf",
    "explain",
    "mbr_select",
    "paired_test",
    "pairwise_bert_score",
    "pairwise_resumable",
    "read_judgements",
    "read_relative_rankings",
    "score",
    "score_resumable",
    "score_stream",
    "tune_from_scores",
    "tune_layers",
    "tune_layers_on_rankings",
]

__getattr__ = exports(
    __name__,
    {
        "BERTScore": "metric.bertscore",
        "BERTScorer": "integrations.bert_score",
        "bert_score": "engines.functional",
        "score": "engines.functional",
        "pairwise_bert_score": "engines.pairwise",
        "mbr_select": "engines.mbr",
        "explain": "explanations.explanation",
        "PairExplanation": "explanations.types",
        "Scores": "scoring.results",
        "BatchScorer": "corpus.batches",
        "corpus_idf": "corpus.idf_counts",
        "CheckpointMismatchError": "corpus.resumable",
        "pairwise_resumable": "corpus.resumable",
        "score_resumable": "corpus.resumable",
        "score_stream": "corpus.resumable",
        "bootstrap_interval": "comparison.significance",
        "paired_test": "comparison.significance",
        "LayerTuning": "tuning.layer_tuning",
        "tune_from_scores": "tuning.layer_tuning",
        "tune_layers": "tuning.layer_tuning",
        "tune_layers_on_rankings": "tuning.ranking_tuning",
        "Judgements": "tuning.judgements",
        "RelativeRankings": "tuning.judgements",
        "read_judgements": "tuning.judgements",
        "read_relative_rankings": "tuning.judgements",
        "PACKAGED_MINILM": "models.registry",
        "add_to_layer_table": "models.registry",
        "ArgumentTypeError": "errors",
        "ArgumentValueError": "errors",
        "BERTScoreError": "errors",
        "BaselineFileError": "errors",
        "BaselineNotFoundError": "errors",
        "ColumnDataError": "errors",
        "DeviceMemoryError": "errors",
        "InputFileError": "errors",
        "ModelDownloadError": "errors",
        "ModelNotFoundError": "errors",
        "ModelSetupError": "errors",
        "SettingsMismatchError": "errors",
    },
)

if TYPE_CHECKING:
    from bertscore_tm.comparison.significance import bootstrap_interval, paired_test
    from bertscore_tm.corpus.batches import BatchScorer
    from bertscore_tm.corpus.idf_counts import corpus_idf
    from bertscore_tm.corpus.resumable import CheckpointMismatchError, pairwise_resumable, score_resumable, score_stream
    from bertscore_tm.engines.functional import bert_score, score
    from bertscore_tm.engines.mbr import mbr_select
    from bertscore_tm.engines.pairwise import pairwise_bert_score
    from bertscore_tm.errors import (
        ArgumentTypeError,
        ArgumentValueError,
        BaselineFileError,
        BaselineNotFoundError,
        BERTScoreError,
        ColumnDataError,
        DeviceMemoryError,
        InputFileError,
        ModelDownloadError,
        ModelNotFoundError,
        ModelSetupError,
        SettingsMismatchError,
    )
    from bertscore_tm.explanations.explanation import explain
    from bertscore_tm.explanations.types import PairExplanation
    from bertscore_tm.integrations.bert_score import BERTScorer
    from bertscore_tm.metric.bertscore import BERTScore
    from bertscore_tm.models.registry import PACKAGED_MINILM, add_to_layer_table
    from bertscore_tm.scoring.results import Scores
    from bertscore_tm.tuning.judgements import Judgements, RelativeRankings, read_judgements, read_relative_rankings
    from bertscore_tm.tuning.layer_tuning import LayerTuning, tune_from_scores, tune_layers
    from bertscore_tm.tuning.ranking_tuning import tune_layers_on_rankings
