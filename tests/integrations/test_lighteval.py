"""The LightEval door with LightEval 0.13.0 itself (no mocks): a custom task file loaded as LightEval loads one
(``--custom-tasks``), its dataset loaded by LightEval from a local folder, its docs scored by LightEval's own
`apply_metric` (what its pipeline runs for every task) and averaged by the task's own aggregation. Every sample's
BERTScore-P, -R and -F equals bert-score 0.3.13 run unpadded (batch_size=1) to 1e-5: the packaged MiniLM,
rescaled with its packaged baseline, each doc's two golds as its references."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("lighteval")

from lighteval.metrics import apply_metric
from lighteval.models.model_output import ModelResponse
from lighteval.tasks.lighteval_task import LightevalTask
from lighteval.tasks.registry import Registry
from lighteval.tasks.requests import Doc

from bertscore_tm import PACKAGED_MINILM, BERTScore
from bertscore_tm.errors import ArgumentTypeError, ArgumentValueError
from bertscore_tm.integrations.lighteval import NAMES, bertscore_metrics
from bertscore_tm.resources import data_dir

TASK_FILE = Path(__file__).with_name("lighteval_task.py")
BASELINE = str(data_dir("baselines") / "en" / "sentence-transformers" / "all-MiniLM-L6-v2.tsv")
TOL = 1e-5


@pytest.fixture(scope="module")
def task():
    module = Registry.create_custom_tasks_module(str(TASK_FILE))
    config = {c.name: c for c in module.TASKS_TABLE}["wmt_bertscore"]
    tasks = {config.full_name: LightevalTask(config)}
    LightevalTask.load_datasets(tasks)
    return tasks[config.full_name]


def responses_for(docs, wmt, decorate=str):
    """What a model would answer: the WMT hypothesis of each doc's line."""
    return [ModelResponse(text=[decorate(wmt["hyps"][int(d.query.split()[-1].rstrip("."))])]) for d in docs]


def reference(reference_score, docs, responses, **kwargs):
    cands = [r.final_text[0].strip() for r in responses]
    refs = [d.get_golds() for d in docs]
    return reference_score(cands, refs, batch_size=1, **kwargs)


def test_a_custom_task_file_scores_each_sample_as_the_reference(task, wmt, reference_score, monkeypatch):
    docs = task.get_docs()
    assert len(docs) == 10 and all(len(d.get_golds()) == 2 for d in docs)
    responses = responses_for(docs, wmt, decorate=lambda text: f"  {{{text}}} ")  # stripped, braces removed
    calls = []
    compute_scores = BERTScore.compute_scores
    monkeypatch.setattr(BERTScore, "compute_scores", lambda self: calls.append(1) or compute_scores(self))
    outputs = apply_metric(responses=responses, docs=docs, metrics=task.metrics)
    assert calls == [1]  # one scoring of the whole batch for the three metrics, not one per sample or metric
    assert [sorted(o) for o in outputs] == [sorted(NAMES)] * 10
    expected = reference(
        reference_score, docs, responses_for(docs, wmt), lang="en", rescale_with_baseline=True, baseline_path=BASELINE
    )
    for name, theirs in zip(NAMES, expected, strict=True):
        ours = np.array([o[name] for o in outputs])
        assert np.abs(ours - theirs.numpy()).max() <= TOL, name
        corpus = task.aggregation()[name]([o[name] for o in outputs])
        assert corpus == pytest.approx(float(theirs.double().mean()), abs=TOL)


def test_idf_is_counted_over_the_batch_golds(task, wmt, reference_score):
    docs = task.get_docs()
    responses = responses_for(docs, wmt)
    metrics = bertscore_metrics(PACKAGED_MINILM, idf=True)
    outputs = apply_metric(responses=responses, docs=docs, metrics=metrics)
    expected = reference(reference_score, docs, responses, idf=True)
    for name, theirs in zip(NAMES, expected, strict=True):
        assert np.abs(np.array([o[name] for o in outputs]) - theirs.numpy()).max() <= TOL, name


def test_the_three_metrics_are_lighteval_sample_metrics():
    metrics = bertscore_metrics(PACKAGED_MINILM)
    assert [m.metric_name for m in metrics] == list(NAMES)
    assert all(m.batched_compute and m.higher_is_better for m in metrics)
    assert {type(m).__name__ for m in metrics} == {"SampleLevelMetric"}
    assert [m.get_corpus_aggregations()[m.metric_name]([0.5, 1.0]) for m in metrics] == [0.75] * 3


@pytest.mark.parametrize(
    ("arguments", "error", "words"),
    [
        ({"num_layer": 5}, TypeError, "unexpected keyword argument 'num_layer'"),
        ({"num_layers": "5"}, ArgumentTypeError, "num_layers must be an integer"),
        ({"reduction": "mean"}, ArgumentValueError, "does not use reduction"),
        ({"all_layers": True}, ArgumentValueError, "does not use all_layers"),
        ({"normalize_pred": "strip"}, ArgumentValueError, "normalize_pred must be a function"),
        ({"baseline_path": BASELINE}, ArgumentValueError, "rescale_with_baseline"),
    ],
)
def test_bad_arguments_are_refused_where_the_task_is_defined(arguments, error, words):
    with pytest.raises(error) as raised:  # at definition, before any model loads (that waits for the first batch)
        bertscore_metrics(PACKAGED_MINILM, **arguments)
    assert words in str(raised.value)


def test_bad_samples_are_a_clear_error(task, wmt):
    docs = task.get_docs()[:2]
    metrics = bertscore_metrics(PACKAGED_MINILM)
    with pytest.raises(ArgumentValueError, match="holds no text to score"):
        apply_metric(responses=[ModelResponse(text=[]), *responses_for(docs[1:], wmt)], docs=docs, metrics=metrics)
    no_gold = Doc(task_name="t", query="q", choices=[], gold_index=[])
    with pytest.raises(ArgumentValueError, match=r"doc 1 .* has no gold"):
        apply_metric(responses=responses_for(docs[:1], wmt) * 2, docs=[docs[0], no_gold], metrics=metrics)
