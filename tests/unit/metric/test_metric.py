"""The Metric's contract: outputs, state kept compact and out of the model's way, data tables as shipped."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
import torch

from bertscore_tm import BERTScore, bert_score
from bertscore_tm.models.registry import default_model, default_num_layers
from bertscore_tm.resources import data_dir
from tests.conftest import MINILM
from tests.spawn import process_group, run_ranks, save_rank

CANDS = ["The quick brown fox jumps over the lazy dog.", "It rained all day in the city.", "Prices rose sharply."]
REFS = ["A fast brown fox leaps over a lazy dog.", "The whole day it was raining in town.", "Prices went up a lot."]


@pytest.fixture(scope="module")
def metric():
    return BERTScore(MINILM)


def test_compute_returns_per_pair_tensors_in_a_dict(metric):
    metric.reset()
    metric.update(CANDS, REFS)
    result = metric.compute()
    assert set(result) == {"precision", "recall", "f1"}
    assert all(v.shape == (3,) and v.dtype == torch.float32 for v in result.values())


def test_a_single_pair_keeps_its_pair_axis(metric):
    metric.reset()
    metric.update(CANDS[0], REFS[0])
    assert metric.compute()["f1"].shape == (1,)


def test_forward_returns_the_batch_scores(metric):
    metric.reset()
    batch = metric(CANDS[:2], REFS[:2])
    assert batch["f1"].shape == (2,)
    metric.update(CANDS[2:], REFS[2:])
    assert metric.compute()["f1"].shape == (3,)


@pytest.mark.slow
def test_mean_reduction_output_and_hash():
    mean = BERTScore(MINILM, reduction="mean", output="f1")
    mean.update(CANDS, REFS)
    per_pair = bert_score(CANDS, REFS, MINILM)
    value = mean.compute()
    assert value.shape == () and value == pytest.approx(float(per_pair["f1"].mean()), abs=1e-6)
    hashed = bert_score(CANDS, REFS, MINILM, return_hash=True, idf=True)
    assert hashed["hash"].startswith(f"{MINILM}_L5_idf_version=0.3.12(hug_trans=")
    assert hashed["hash"].endswith("_fast-tokenizer")


@pytest.mark.slow
def test_all_layers_adds_a_leading_layer_axis():
    result = bert_score(CANDS, REFS, MINILM, all_layers=True)
    assert result["f1"].shape == (7, 3)
    layer5 = bert_score(CANDS, REFS, MINILM, num_layers=5)
    assert torch.allclose(result["f1"][5], layer5["f1"], atol=1e-6)
    mean = bert_score(CANDS, REFS, MINILM, all_layers=True, reduction="mean")
    assert mean["f1"].shape == (7,)


def test_the_model_is_frozen_and_never_in_the_state_dict(metric):
    metric.persistent(True)
    keys = metric.state_dict().keys()
    assert not any("weight" in k or "bias" in k for k in keys)
    assert list(metric.parameters()) == []
    assert all(not p.requires_grad for p in metric.embedder.model.parameters())
    assert not metric.embedder.model.training
    metric.persistent(False)


def test_clones_share_the_frozen_model_but_not_the_state(metric):
    metric.reset()
    copy = metric.clone()
    assert copy.embedder.model is metric.embedder.model  # not a second copy of the weights
    metric.update(CANDS[:1], REFS[:1])
    copy.update(CANDS[1:], REFS[1:])
    assert metric.compute()["f1"].shape == (1,)
    assert copy.compute()["f1"].shape == (2,)


@pytest.mark.slow
def test_metric_tracker_keeps_one_model_across_epochs():
    from torchmetrics.wrappers import MetricTracker

    tracker = MetricTracker(BERTScore(MINILM, output="f1", reduction="mean"))
    for epoch in range(3):
        tracker.increment()
        tracker.update(CANDS[epoch], REFS[epoch])
    models = {id(m.embedder.model) for m in tracker}
    assert len(models) == 1
    expected = torch.stack([bert_score(CANDS[i], REFS[i], MINILM)["f1"][0] for i in range(3)])
    assert torch.allclose(tracker.compute_all(), expected, atol=1e-6)


def test_the_model_is_cut_to_num_layers(metric):
    assert len(metric.embedder.model.encoder.layer) == 5


def test_state_is_ragged_int32_token_ids_without_padding(metric):
    metric.reset()
    metric.update(CANDS, REFS)
    lens = torch.cat(metric.cand_lens)
    ids = torch.cat(metric.cand_ids)
    assert ids.dtype == torch.int32 and len(ids) == int(lens.sum())
    assert metric.doc_freq.numel() == 0  # no IDF, no counts kept


def test_idf_document_counts_are_a_summed_state():
    metric = BERTScore(MINILM, idf=True)
    metric.update(CANDS[:2], [[REFS[0], REFS[0]], [REFS[1]]])
    metric.update(CANDS[2:], REFS[2:])
    assert int(metric.num_refs) == 4
    fox = metric.tokenizer.convert_tokens_to_ids("fox")
    assert int(metric.doc_freq[fox]) == 2
    assert int(metric.doc_freq[metric.tokenizer.cls_token_id]) == 4


def test_bfloat16_is_an_opt_in_close_to_float32():
    exact = bert_score(CANDS, REFS, MINILM)
    fast = bert_score(CANDS, REFS, MINILM, model_dtype=torch.bfloat16)
    assert (fast["f1"] - exact["f1"]).abs().max() < 0.01


def test_the_layer_table_holds_every_model_the_reference_knows():
    from bert_score.utils import lang2model, model2layers

    table = json.loads((data_dir("configs") / "models.json").read_text())["models"]
    for name, layers in model2layers.items():
        assert default_num_layers(name) == layers == table[name]["num_layers"]
    assert table[MINILM] == {"num_layers": 5, "tuned": False}
    for lang in ("en", "en-sci", "zh", "tr", "de", "xx"):
        assert default_model(lang) == lang2model[lang]


def test_the_packaged_baselines_are_the_published_figures():
    import bert_score

    theirs = Path(bert_score.__file__).parent / "rescale_baseline"
    ours = data_dir("baselines")
    published = sorted(p.relative_to(theirs) for p in theirs.rglob("*.tsv"))
    assert len(published) == 72
    for rel in published:
        assert (ours / rel).read_bytes() == (theirs / rel).read_bytes(), rel
    assert sorted(p.name for p in ours.iterdir() if p.is_dir()) == sorted(
        ["cs", "de", "en", "en-sci", "es", "et", "fi", "fr", "it", "lv", "pt", "zh"]
    )


def test_compute_scores_is_the_typed_per_pair_result_whatever_the_output():
    """`score()`, `layer_means` and the command line read this instead of narrowing compute()'s union."""
    from bertscore_tm.scoring.results import Scores

    per_pair = BERTScore(MINILM)
    single = BERTScore(MINILM, reduction="mean", output="f1")
    for metric in (per_pair, single):
        metric.update(CANDS, REFS)
    expected = per_pair.compute()
    for metric in (per_pair, single):
        scores = metric.compute_scores()
        assert isinstance(scores, Scores) and scores.hash_code == metric.hash_code
        for name, value in zip(("precision", "recall", "f1"), scores.as_tuple(), strict=True):
            assert torch.equal(value, expected[name])
    assert single.compute() == pytest.approx(float(expected["f1"].mean()), abs=1e-7)


def test_an_index_repeated_with_another_pair_warns_and_keeps_the_first_pair():
    metric = BERTScore(MINILM, num_layers=3)
    metric.update(CANDS[:2], REFS[:2], indexes=[0, 1])
    metric.update([CANDS[2], "Something else entirely."], REFS[:2], indexes=[0, 1])
    with pytest.warns(UserWarning, match=r"^2 dataset index\(es\) \(0, 1\) were passed with different pairs.*first"):
        result = metric.compute()
    first = BERTScore(MINILM, num_layers=3)
    first.update(CANDS[:2], REFS[:2])
    assert torch.equal(result["f1"], first.compute()["f1"])


def test_an_index_repeated_with_the_very_same_pair_is_dropped_silently():
    # what a distributed sampler pads in: the same pair again under its index
    metric = BERTScore(MINILM, num_layers=3)
    metric.update(CANDS, REFS, indexes=[0, 1, 2])
    metric.update(CANDS[:2], REFS[:2], indexes=[0, 1])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert metric.compute()["f1"].shape == (3,)


def _indexed_worker(rank: int, port: int, out_dir: str) -> None:
    with process_group(rank, port, world=2):
        metric = BERTScore(MINILM, num_layers=3)
        if rank == 0:
            metric.update(CANDS[:2], REFS[:2], indexes=[0, 1])
        else:  # index 0 padded in again with its very pair, index 1 with another candidate
            metric.update([CANDS[2], CANDS[0], "Something else entirely."], [REFS[2], REFS[0], REFS[1]], [2, 0, 1])
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            result = metric.compute()
        save_rank(out_dir, rank, {"f1": result["f1"], "warned": [str(w.message) for w in seen]})


@pytest.mark.slow
def test_under_ddp_every_rank_names_the_index_repeated_with_another_pair_from_the_gathered_scores():
    ranks = run_ranks(_indexed_worker, world=2)
    alone = BERTScore(MINILM, num_layers=3)
    alone.update(CANDS, REFS)
    expected = alone.compute()["f1"]
    for rank in ranks:
        assert torch.equal(rank["f1"], expected)
        about_indexes = [m for m in rank["warned"] if "dataset index" in m]
        assert len(about_indexes) == 1  # the same on every rank: a function of what was gathered
        assert about_indexes[0].startswith("1 dataset index(es) (1) were passed with different pairs")
