"""The evaluate door with evaluate itself (no mocks): `evaluate.load(metric_path())` and `compute()` called as
evaluate's bertscore README and docstring call it, the model swapped for the packaged MiniLM; every score equal to
bert-score 0.3.13 run unpadded (batch_size=1) to 1e-5, the hash code bert-score's for the same setting."""

from __future__ import annotations

import pytest
import torch

from bertscore_tm import PACKAGED_MINILM, BERTScore
from bertscore_tm.errors import ArgumentTypeError, ArgumentValueError
from bertscore_tm.resources import data_dir
from tests.conftest import MINILM

evaluate = pytest.importorskip("evaluate")
bert_score_utils = pytest.importorskip("bert_score.utils")

from bertscore_tm.integrations.evaluate import metric_path  # noqa: E402 (needs evaluate)

TOL = 1e-5
BASELINE = str(data_dir("baselines") / "en" / "sentence-transformers" / "all-MiniLM-L6-v2.tsv")


@pytest.fixture(scope="module")
def bertscore():
    return evaluate.load(metric_path())


def reference(reference_score, cands, refs, **kwargs):
    """bert-score's (P, R, F) as lists, unpadded."""
    return [t.tolist() for t in reference_score(cands, refs, batch_size=1, **kwargs)]


def assert_close(results, expected):
    for name, theirs in zip(("precision", "recall", "f1"), expected, strict=True):
        ours = torch.tensor(results[name], dtype=torch.float64)
        assert ours.shape == torch.tensor(theirs).shape, name
        assert (ours - torch.tensor(theirs, dtype=torch.float64)).abs().max().item() <= TOL, name


def bert_score_hash(idf=False, rescale=False, custom=False, fast=False):
    """bert-score's hash code of the call (evaluate's default use_fast_tokenizer=False: no `_fast-tokenizer`)."""
    return bert_score_utils.get_hash(MINILM, 5, idf, rescale, custom, use_fast_tokenizer=fast)


def test_the_readme_calls_give_the_reference_scores_and_hash(bertscore, reference_score):
    same = ["hello world", "general kenobi"]
    results = bertscore.compute(predictions=same, references=same, model_type=PACKAGED_MINILM)
    assert sorted(results) == ["f1", "hashcode", "precision", "recall"]
    assert all(isinstance(v, float) for name in ("precision", "recall", "f1") for v in results[name])
    assert results["f1"] == pytest.approx([1.0, 1.0], abs=1e-6)
    assert results["hashcode"] == bert_score_hash()
    fast = bertscore.compute(predictions=same, references=same, model_type=PACKAGED_MINILM, use_fast_tokenizer=True)
    assert fast["hashcode"] == bert_score_hash(fast=True)

    predictions, references = ["hello world", "general kenobi"], ["goodnight moon", "the sun is shining"]
    results = bertscore.compute(predictions=predictions, references=references, model_type=PACKAGED_MINILM)
    assert_close(results, reference(reference_score, predictions, references))


def test_wmt_with_several_references_and_idf(bertscore, wmt, reference_score):
    refs = [[a, b] for a, b in zip(wmt["refs"], wmt["refs2"], strict=True)]
    for idf in (False, True):
        results = bertscore.compute(predictions=wmt["hyps"], references=refs, model_type=PACKAGED_MINILM, idf=idf)
        assert_close(results, reference(reference_score, wmt["hyps"], refs, idf=idf))
        assert results["hashcode"] == bert_score_hash(idf=idf)


def test_idf_is_counted_over_each_calls_own_references(bertscore, wmt, reference_score):
    # evaluate's own script keeps the first call's IDF for later calls of the same setting; here each call counts
    half = slice(0, 5), slice(5, 10)
    for part in half:
        hyps, refs = wmt["hyps"][part], wmt["refs"][part]
        results = bertscore.compute(predictions=hyps, references=refs, model_type=PACKAGED_MINILM, idf=True)
        assert_close(results, reference(reference_score, hyps, refs, idf=True))


def test_idf_as_a_precomputed_table(bertscore, wmt, reference_score, minilm_path):
    from transformers import AutoTokenizer

    table = bert_score_utils.get_idf_dict(wmt["refs2"], AutoTokenizer.from_pretrained(minilm_path), nthreads=0)
    results = bertscore.compute(predictions=wmt["hyps"], references=wmt["refs"], model_type=PACKAGED_MINILM, idf=table)
    assert_close(results, reference(reference_score, wmt["hyps"], wmt["refs"], idf=table))


def test_rescaled_with_the_packaged_baseline(bertscore, wmt, reference_score):
    results = bertscore.compute(
        predictions=wmt["hyps"],
        references=wmt["refs"],
        model_type=PACKAGED_MINILM,
        lang="en",
        rescale_with_baseline=True,
    )
    expected = reference(
        reference_score, wmt["hyps"], wmt["refs"], lang="en", rescale_with_baseline=True, baseline_path=BASELINE
    )
    assert_close(results, expected)
    assert results["hashcode"] == bert_score_hash(rescale=True)
    custom = bertscore.compute(
        predictions=wmt["hyps"],
        references=wmt["refs"],
        model_type=PACKAGED_MINILM,
        rescale_with_baseline=True,
        baseline_path=BASELINE,
    )
    assert_close(custom, expected)
    assert custom["hashcode"] == bert_score_hash(rescale=True, custom=True)


def test_all_layers_give_a_list_per_layer(bertscore, wmt, reference_score):
    results = bertscore.compute(
        predictions=wmt["hyps"], references=wmt["refs"], model_type=PACKAGED_MINILM, all_layers=True
    )
    assert len(results["f1"]) == 7 and len(results["f1"][0]) == 10
    assert_close(results, reference(reference_score, wmt["hyps"], wmt["refs"], all_layers=True))


def test_the_loaded_model_is_kept_while_the_settings_stay(bertscore):
    def call(**kwargs):
        bertscore.compute(predictions=["a b"], references=["a c"], model_type=PACKAGED_MINILM, **kwargs)
        return bertscore._bertscore[1]

    first = call(batch_size=8)
    assert call(batch_size=8) is first and isinstance(first, BERTScore)
    assert call(batch_size=16) is not first


def test_nthreads_sets_torch_threads_for_the_call_only(bertscore, monkeypatch):
    before = torch.get_num_threads()
    seen = []
    compute_scores = BERTScore.compute_scores

    def recording(self):  # the real method, noting the threads it runs on
        seen.append(torch.get_num_threads())
        return compute_scores(self)

    monkeypatch.setattr(BERTScore, "compute_scores", recording)
    for nthreads in (3, 0):
        bertscore.compute(predictions=["a b"], references=["a c"], model_type=PACKAGED_MINILM, nthreads=nthreads)
        assert torch.get_num_threads() == before
    assert seen == [3, before]


@pytest.mark.parametrize(
    ("inputs", "error", "words"),
    [
        ({"predictions": ["a", "b"], "references": ["a"]}, ValueError, "predictions (2) and references (1)"),
        ({"predictions": [], "references": []}, ArgumentValueError, "predictions is empty"),
        ({"predictions": ["a", None], "references": ["a", "b"]}, TypeError, "must be a string"),
        ({"nthreads": -1}, ArgumentValueError, "nthreads must be an integer >= 0"),
        ({"nthreads": 2.5}, ArgumentTypeError, "nthreads must be an integer"),
        ({"use_fast_tokenizer": "yes"}, ArgumentTypeError, "use_fast_tokenizer must be True or False"),
        ({"idf": "yes"}, ArgumentTypeError, "idf must be True or False"),
        ({"num_layers": 99}, ArgumentValueError, "num_layers must be between 0 and 6"),
        ({"baseline_path": BASELINE}, ArgumentValueError, "rescale_with_baseline"),
    ],
)
def test_bad_input_is_a_clear_error(bertscore, inputs, error, words):
    arguments = {"predictions": ["a b"], "references": ["a c"], "model_type": PACKAGED_MINILM, **inputs}
    with pytest.raises(error) as raised:
        bertscore.compute(**arguments)
    assert words in str(raised.value)
