"""The door from LightEval: BERTScore-P, -R and -F as LightEval sample-level metrics for a task's ``metrics=``,
scored by this package's Metric a batch of samples at a time (one model pass for all of a task's samples, where
LightEval's own BertScore calls bert-score once per sample), with the packaged rescale baselines (LightEval's
own ships none, so its default rescaling fails: huggingface/lighteval#995). Each is averaged over the corpus.

LightEval 0.13's `apply_metric` cannot batch a `SampleLevelMetricGrouping` (it keys a dict by the grouping's list
of names), so the three scores are three batched `SampleLevelMetric`s that share one scorer: the first scores
the batch, the other two read its result. A sample's prediction is its first generated text (after LightEval's
post-processing), scored against all of its golds (the best of each score). Usage: docs/migrating.md.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from importlib.util import find_spec
from typing import Any

import numpy as np
import torch

from bertscore_tm.errors import ArgumentValueError
from bertscore_tm.integrations.common import missing_peer
from bertscore_tm.settings.config import Config

#: The metric names, as LightEval's own BertScore reports them.
NAMES = ("BERTScore-P", "BERTScore-R", "BERTScore-F")
_FIELDS = dict(zip(NAMES, ("precision", "recall", "f1"), strict=True))

#: Metric arguments about the shape of the Metric's result: a sample metric gives one number per sample.
_RESULT_ARGUMENTS = ("reduction", "output", "return_hash", "all_layers")

Normalizer = Callable[[str], str]


def bertscore_metrics(
    model_name_or_path: str | os.PathLike[str] | None = None,
    *,
    normalize_gold: Normalizer | None = None,
    normalize_pred: Normalizer | None = None,
    **metric_arguments: Any,
) -> list[Any]:
    """The three LightEval metrics ``BERTScore-P``, ``-R`` and ``-F`` (``SampleLevelMetric``, batched, averaged
    over the corpus), for a ``LightevalTaskConfig(metrics=...)``. `metric_arguments` are :class:`BERTScore`'s
    (``lang``, ``num_layers``, ``idf`` (counted over the batch's golds), ``rescale_with_baseline``, ``device``...),
    checked here; the model loads at the first batch. `normalize_gold` / `normalize_pred` are applied to each text
    first (LightEval's own BertScore uses ``remove_braces`` and ``remove_braces_and_strip``)."""
    from lighteval.metrics.utils.metric_utils import SampleLevelMetric
    from lighteval.tasks.requests import SamplingMethod

    batches = SharedBatches(
        {"model_name_or_path": model_name_or_path, **metric_arguments}, normalize_gold, normalize_pred
    )
    return [
        SampleLevelMetric(
            metric_name=name,
            higher_is_better=True,
            category=SamplingMethod.GENERATIVE,
            sample_level_fn=BERTScoreSamples(batches, name),
            corpus_level_fn=np.mean,
            batched_compute=True,
        )
        for name in NAMES
    ]


class SharedBatches:
    """Scores a batch of (response, doc) once for all three metrics: keeps the last batch's scores, keyed by its
    texts, and the Metric (loaded on first use; IDF, where on, counted over each batch's golds)."""

    def __init__(
        self, arguments: dict[str, Any], normalize_gold: Normalizer | None, normalize_pred: Normalizer | None
    ) -> None:
        config = Config.of(arguments, caller="bertscore_metrics", unused=_RESULT_ARGUMENTS)
        for name, value in (("normalize_gold", normalize_gold), ("normalize_pred", normalize_pred)):
            if value is not None and not callable(value):
                raise ArgumentValueError(
                    f"{name} must be a function of a text, or None", argument=name, allowed="callable", value=value
                )
        if config.runtime.device is None:
            config = config.replace(device="cuda" if torch.cuda.is_available() else "cpu")
        self.config = config
        self.normalize_gold, self.normalize_pred = normalize_gold, normalize_pred
        self.metric: Any = None
        self._last: tuple[tuple[object, ...], dict[str, list[float]]] | None = None

    def scores(self, responses: Sequence[Any], docs: Sequence[Any]) -> dict[str, list[float]]:
        """Each metric's per-sample scores for this batch, in sample order."""
        preds, golds = self._texts(responses, docs)
        key = (tuple(preds), tuple(tuple(g) for g in golds))
        if self._last is None or self._last[0] != key:
            if self.metric is None:
                from bertscore_tm.metric.bertscore import BERTScore

                self.metric = BERTScore.from_config(self.config)
            self.metric.update(preds, golds)
            try:
                scores = self.metric.compute_scores()
            finally:
                self.metric.reset()
            self._last = (key, {name: getattr(scores, field).tolist() for name, field in _FIELDS.items()})
        return self._last[1]

    def _texts(self, responses: Sequence[Any], docs: Sequence[Any]) -> tuple[list[str], list[list[str]]]:
        if len(responses) != len(docs):
            raise ArgumentValueError(
                f"{len(responses)} model responses for {len(docs)} docs: give one response per doc",
                argument="responses",
                allowed="as many responses as docs",
                value=len(responses),
            )
        preds, golds = [], []
        for i, (response, doc) in enumerate(zip(responses, docs, strict=True)):
            texts = list(response.final_text)
            if not texts:
                raise ArgumentValueError(
                    f"the model response to doc {i} ({getattr(doc, 'task_name', '')}) holds no text to score",
                    argument="responses",
                    allowed="a generated text per doc",
                    value=response,
                )
            preds.append(texts[0] if self.normalize_pred is None else self.normalize_pred(texts[0]))
            gold = list(doc.get_golds())
            if not gold:
                raise ArgumentValueError(
                    f"doc {i} ({getattr(doc, 'task_name', '')}) has no gold to score against",
                    argument="docs",
                    allowed="at least one gold per doc",
                    value=doc,
                )
            golds.append(gold if self.normalize_gold is None else [self.normalize_gold(g) for g in gold])
        return preds, golds


if find_spec("lighteval") is not None:
    from lighteval.metrics.metrics_sample import SampleLevelComputation

    class BERTScoreSamples(SampleLevelComputation):
        """One of the three scores of each sample of a batch (LightEval's batched sample computation)."""

        def __init__(self, batches: SharedBatches, name: str) -> None:
            self.batches, self.name = batches, name

        def compute(self, responses: Sequence[Any], docs: Sequence[Any], **kwargs: Any) -> list[float]:
            """This metric's score for each (response, doc), in order."""
            return self.batches.scores(responses, docs)[self.name]

else:
    __getattr__ = missing_peer(__name__, "lighteval", "lighteval==0.13.0", ("BERTScoreSamples",))
