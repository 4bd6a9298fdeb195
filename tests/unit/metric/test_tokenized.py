"""Batches tokenised ahead by the metric's own `tokenize` (a DataLoader's collate_fn, in its worker processes):
update() takes them in place of texts and gives the very state and scores of string updates; `tokenize` pickles
without the model; a batch of another tokenisation is refused; a batch's warnings are said when update() takes
it, in the process that scores."""

from __future__ import annotations

import functools
import pickle
import warnings

import pytest
import torch
from torch.utils.data import DataLoader

from bertscore_tm import BERTScore
from bertscore_tm.errors import SettingsMismatchError
from bertscore_tm.models.tokenizing import TokenizedPairs
from tests.conftest import MINILM

pytestmark = pytest.mark.usefixtures("one_thread")

TOKEN_STATES = ("cand_ids", "cand_lens", "ref_ids", "ref_lens", "ref_counts", "has_context")


@pytest.fixture(scope="module")
def pairs(wmt) -> list[tuple[str, object]]:
    """WMT pairs, some with two references, a blank candidate, a repeated text and one past the window."""
    cands = [*wmt["hyps_long"][:40], "   ", wmt["hyps_long"][0], "word " * 700]
    refs: list = [*wmt["refs_long"][:40], "a reference", [wmt["refs_long"][1], wmt["refs"][2]], "x"]
    refs[3] = [refs[3], wmt["refs"][4]]
    return list(zip(cands, refs, strict=True))


@pytest.fixture(scope="module")
def metric() -> BERTScore:
    return BERTScore(MINILM, idf=True)


def collate(tokenize, rows):  # a DataLoader's collate_fn: its batch of (candidate, references) rows
    return tokenize([c for c, _ in rows], [r for _, r in rows])


def _by_strings(metric: BERTScore, pairs, size: int) -> dict:
    metric.reset()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for lo in range(0, len(pairs), size):
            chunk = pairs[lo : lo + size]
            metric.update([c for c, _ in chunk], [r for _, r in chunk], indexes=list(range(lo, lo + len(chunk))))
        state = {name: torch.cat(getattr(metric, name)) for name in TOKEN_STATES}
        state["doc_freq"] = metric.doc_freq.clone()
        return {"state": state, "scores": metric.compute()}


@pytest.mark.slow
def test_batches_from_a_dataloader_with_two_workers_give_the_very_scores_of_string_updates(metric, pairs):
    want = _by_strings(metric, pairs, 8)
    metric.reset()
    loader = DataLoader(pairs, batch_size=8, num_workers=2, collate_fn=functools.partial(collate, metric.tokenize))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for k, batch in enumerate(loader):
            assert isinstance(batch, TokenizedPairs)
            metric.update(batch, indexes=list(range(8 * k, 8 * k + len(batch))))
        got = metric.compute()
    for name, value in want["state"].items():
        assert torch.equal(torch.cat(getattr(metric, name)) if name != "doc_freq" else metric.doc_freq, value), name
    for key in ("precision", "recall", "f1"):
        assert torch.equal(got[key], want["scores"][key]), key


def test_tokenize_pickles_without_the_model_and_tokenises_alike_after(metric, pairs):
    data = pickle.dumps(metric.tokenize)
    weights = sum(p.numel() * p.element_size() for p in metric.embedder.model.parameters())
    assert len(data) < weights / 4  # the tokenizer and the text settings: the model stays behind
    again = pickle.loads(data)
    cands, refs = [c for c, _ in pairs[:12]], [r for _, r in pairs[:12]]
    first, second = metric.tokenize(cands, refs), again(cands, refs)
    for name in ("cand_ids", "cand_lens", "ref_ids", "ref_lens", "ref_counts", "has_context"):
        assert torch.equal(getattr(first, name), getattr(second, name)), name
    assert first.digest == second.digest


def test_a_batchs_warnings_are_said_when_update_takes_it_not_when_it_is_tokenised(metric):
    metric.reset()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        batch = metric.tokenize(["   ", "word " * 700], ["a reference", "x"])
        assert seen == []  # kept in the batch, for the process that scores
        metric.update(batch)
    said = [str(w.message) for w in seen]
    assert any("truncated" in m for m in said) and any("blank" in m for m in said)
    assert all(w.filename == __file__ for w in seen)  # the user's line, as for texts


def test_a_batch_of_contexts_names_them_in_the_hash_code(pairs):
    plain = BERTScore(MINILM, num_layers=3)
    cands, refs = [c for c, _ in pairs[:4]], [r for _, r in pairs[:4]]
    contexts = ["", "Some source text.", "", "Another source."]
    plain.update(plain.tokenize(cands, refs, context=contexts))
    via_batch = plain.compute_scores()
    plain.reset()
    plain.update(cands, refs, context=contexts)
    via_texts = plain.compute_scores()
    assert via_batch.hash_code == via_texts.hash_code and via_batch.hash_code.endswith("_context")
    assert torch.equal(via_batch.f1, via_texts.f1)


def test_a_batch_of_another_tokenisation_or_with_texts_beside_it_is_refused(metric):
    other = BERTScore(MINILM, idf=True, max_length=16)
    batch = other.tokenize(["The cat sat on the mat."], ["A cat was sitting on the mat."])
    metric.reset()
    with pytest.raises(SettingsMismatchError, match="tokenised by another setting"):
        metric.update(batch)
    prompted = BERTScore(MINILM, idf=True, candidate_prompt="query: ")
    with pytest.raises(SettingsMismatchError):
        prompted.update(metric.tokenize(["The cat sat."], ["A cat sat."]))
    own = metric.tokenize(["The cat sat."], ["A cat sat."])
    with pytest.raises(TypeError, match="holds its references"):
        metric.update(own, ["A cat sat."])
    with pytest.raises(TypeError, match="needs target"):
        metric.update(["The cat sat."])
    assert not metric.cand_ids and not prompted.cand_ids  # nothing added by any of them


def test_a_batch_with_a_token_the_idf_weights_lack_is_refused_before_it_is_added() -> None:
    from bertscore_tm.errors import ArgumentValueError

    fixed = BERTScore(MINILM, idf=True, idf_weights={101: 0.0, 102: 0.0})
    batch = fixed.tokenize(["The cat sat."], ["A cat sat."])
    with pytest.raises(ArgumentValueError, match="idf_weights has no weight"):
        fixed.update(batch)
    assert not fixed.cand_ids
