"""The door from Hugging Face ``evaluate``: a metric script for ``evaluate.load(metric_path())`` that takes the
arguments of evaluate's own ``bertscore`` and returns its result (``precision``, ``recall``, ``f1`` as lists and
``hashcode``), scored by this package's Metric (docs/migrating.md).

``evaluate.load`` copies a metric script into its module cache and imports the copy, so this file stands alone:
it imports the package by absolute names and keeps nothing at module level. A loaded metric keeps one model
loaded for as long as its calls keep the same settings.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import datasets
import evaluate
import torch

from bertscore_tm.errors import ArgumentValueError
from bertscore_tm.integrations.common import torch_threads
from bertscore_tm.metric.bertscore import BERTScore


def metric_path() -> str:
    """The path to give ``evaluate.load``: this script, inside the installed package."""
    return str(Path(__file__).resolve())


_CITATION = """\
@inproceedings{bert-score,
  title={BERTScore: Evaluating Text Generation with BERT},
  author={Tianyi Zhang* and Varsha Kishore* and Felix Wu* and Kilian Q. Weinberger and Yoav Artzi},
  booktitle={International Conference on Learning Representations},
  year={2020},
  url={https://openreview.net/forum?id=SkeHuCVFDr}
}
"""

_DESCRIPTION = """\
BERTScore (Zhang et al., 2019) from bertscore-tm: each candidate token is matched to its most similar reference
token by the cosine of contextual embeddings (precision), each reference token to its most similar candidate
token (recall), and F1 combines the two. The scores equal bert-score 0.3.13 run unpadded, in every setting.
"""

_INPUTS = """
Args:
    predictions (list of str): the candidate texts.
    references (list of str, or list of list of str): one reference per prediction, or several (the best of
        each score is taken).
    lang (str): language code, for the default model and the packaged rescale baselines.
    model_type (str): a local model folder, a name in the local Hugging Face cache, or the packaged
        "sentence-transformers/all-MiniLM-L6-v2"; default: lang's model. Nothing is downloaded.
    num_layers (int): the layer scored; default: the model's tuned layer.
    idf (bool or dict): IDF weights counted over this call's references, or a token id -> weight table.
    rescale_with_baseline (bool), baseline_path (str): rescale with the packaged or a custom baseline.
    all_layers (bool): every layer's scores (lists of L + 1 lists).
    batch_size (int): texts per forward pass at most (scores never depend on it).
    device (str): where the model runs; default: the first GPU, else the CPU.
    nthreads (int): torch threads for this call, restored after it (0: leave them as they are).
    use_fast_tokenizer (bool): as bert-score's: the hash code ends in `_fast-tokenizer` only when True.
    verbose (bool): a progress bar while embedding.

Returns:
    precision, recall, f1: one float per prediction; hashcode: the setting's hash code (bert-score's format).
"""


class BERTScoreTM(evaluate.Metric):
    """evaluate's ``bertscore`` interface over `bertscore_tm.BERTScore` (its arguments: the module's ``_INPUTS``)."""

    def _info(self) -> evaluate.MetricInfo:
        text = datasets.Value("string", id="sequence")
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            homepage="https://github.com/Tiiiger/bert_score",
            inputs_description=_INPUTS,
            features=[
                datasets.Features({"predictions": text, "references": datasets.Sequence(text, id="references")}),
                datasets.Features({"predictions": text, "references": text}),
            ],
            codebase_urls=["https://github.com/Tiiiger/bert_score"],
            reference_urls=["https://arxiv.org/abs/1904.09675"],
        )

    def _compute(
        self,
        predictions: Sequence[str],
        references: Sequence[str] | Sequence[Sequence[str]],
        lang: str | None = None,
        model_type: str | None = None,
        num_layers: int | None = None,
        verbose: bool = False,
        idf: bool | Mapping[int, float] = False,
        device: str | torch.device | None = None,
        batch_size: int | None = 64,
        nthreads: int = 4,
        all_layers: bool = False,
        rescale_with_baseline: bool = False,
        baseline_path: str | None = None,
        use_fast_tokenizer: bool = False,
    ) -> dict[str, Any]:
        if len(predictions) == 0:
            raise ArgumentValueError(
                "predictions is empty: give at least one prediction (and its references)",
                argument="predictions",
                allowed="a non-empty list of strings",
                value=predictions,
            )
        weights = idf if isinstance(idf, Mapping) else None  # bert-score's defaultdict keeps its default
        settings = {
            "model_name_or_path": model_type,
            "num_layers": num_layers,
            "lang": lang,
            "idf": True if weights is not None else idf,
            "idf_weights": weights,
            "rescale_with_baseline": rescale_with_baseline,
            "baseline_path": baseline_path,
            "all_layers": all_layers,
            "batch_size": batch_size,
            "device": device if device is not None else ("cuda" if torch.cuda.is_available() else "cpu"),
            "verbose": verbose,
            "use_fast_tokenizer": use_fast_tokenizer,  # the hash code ends in _fast-tokenizer only then, as theirs
        }
        with torch_threads(nthreads):
            metric = self._metric_for(settings)
            metric.update(list(predictions), list(references))
            try:
                scores = metric.compute_scores()
            finally:
                metric.reset()
        return {
            "precision": scores.precision.tolist(),
            "recall": scores.recall.tolist(),
            "f1": scores.f1.tolist(),
            "hashcode": scores.hash_code,
        }

    def _metric_for(self, settings: dict[str, Any]) -> BERTScore:
        """The metric of the last call when its settings were these (its model stays loaded), else a new one."""
        kept = getattr(self, "_bertscore", None)
        if kept is None or kept[0] != settings or kept[0]["idf_weights"] is not settings["idf_weights"]:
            kept = (settings, BERTScore(**settings))
            self._bertscore = kept
        return kept[1]
