"""The properties every correct BERTScore has (docs/semantics.md): symmetry, self-score 1, invariance to batch
size, to neighbouring pairs and to duplicates, and output in input order."""

from __future__ import annotations

import pytest
import torch

from bertscore_tm import BERTScore
from tests.conftest import MINILM


@pytest.fixture(scope="module")
def pairs(wmt):
    return wmt["hyps_long"][200:240], wmt["refs_long"][200:240]


_metrics: dict[tuple, BERTScore] = {}


def run(cands, refs, **kwargs):
    """Score in a fresh state (the model is loaded once per setting)."""
    key = tuple(sorted(kwargs.items()))
    if key not in _metrics:
        _metrics[key] = BERTScore(MINILM, **kwargs)
    metric = _metrics[key]
    metric.reset()
    metric.update(cands, refs)
    return metric.compute()


@pytest.mark.slow
def test_f1_is_symmetric(pairs):
    cands, refs = pairs
    forward, backward = run(cands, refs), run(refs, cands)
    assert torch.allclose(forward["f1"], backward["f1"], atol=1e-6)
    assert torch.allclose(forward["precision"], backward["recall"], atol=1e-6)


@pytest.mark.slow
def test_a_text_scored_against_itself_gets_one(pairs):
    cands, _ = pairs
    for idf in (False, True):
        result = run(cands, cands, idf=idf)
        for key in ("precision", "recall", "f1"):
            assert torch.allclose(result[key], torch.ones(len(cands)), atol=1e-5), key


@pytest.mark.slow
def test_scores_do_not_depend_on_batch_size(pairs):
    cands, refs = pairs
    base = run(cands, refs, batch_size=64)["f1"]
    for batch_size in (1, 3, 17):
        assert torch.allclose(run(cands, refs, batch_size=batch_size)["f1"], base, atol=1e-6)


@pytest.mark.slow
def test_scores_do_not_depend_on_the_other_pairs(pairs):
    cands, refs = pairs
    together = run(cands, refs, idf=False)["f1"]
    alone = torch.stack([run([c], [r])["f1"][0] for c, r in list(zip(cands, refs, strict=True))[:5]])
    assert torch.allclose(alone, together[:5], atol=1e-6)


@pytest.mark.slow
def test_duplicates_do_not_change_scores(pairs):
    cands, refs = pairs
    base = run(cands, refs)["f1"]
    doubled = run(cands + cands[:10], refs + refs[:10])["f1"]
    assert torch.allclose(doubled[: len(cands)], base, atol=1e-6)
    assert torch.allclose(doubled[len(cands) :], base[:10], atol=1e-6)


@pytest.mark.slow
def test_output_is_in_input_order(pairs):
    cands, refs = pairs
    base = run(cands, refs, idf=False)
    perm = torch.randperm(len(cands), generator=torch.Generator().manual_seed(0)).tolist()
    shuffled = run([cands[i] for i in perm], [refs[i] for i in perm], idf=False)
    for key in ("precision", "recall", "f1"):
        assert torch.allclose(shuffled[key], base[key][perm], atol=1e-6)


def test_padding_is_never_a_match():
    # A one-token candidate against a long reference and vice versa, batched with longer pairs: padding
    # positions must not raise (or lower) any maximum.
    cands = ["ok", "The committee postponed its decision until the next meeting in late November."]
    refs = ["The committee postponed its decision until the next meeting in late November.", "ok"]
    batched = run(cands, refs)
    single = [run([c], [r]) for c, r in zip(cands, refs, strict=True)]
    for i in range(2):
        for key in ("precision", "recall", "f1"):
            assert torch.allclose(batched[key][i], single[i][key][0], atol=1e-6)
