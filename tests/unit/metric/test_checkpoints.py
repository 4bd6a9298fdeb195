"""A checkpoint (`persistent(True)`, `state_dict()`) loaded into a metric of another setting: its pairs are
scored under the loading metric's own setting, exactly as a fresh metric of that setting scores them, or it is
refused with an error naming the mismatch; never the saving metric's numbers, never a bare IndexError.

- The pairs' token ids carry over whenever both metrics tokenise alike; IDF counts missing from a plain
  metric's state are counted again from its references.
- Per-token best similarities kept by an earlier compute() or forward() are the saving setting's results:
  dropped when the loading metric embeds differently (another layer, model, dtype...), so its compute()
  embeds the pairs again.
- Token ids of another tokenisation (another tokenizer, max_length or long_texts) cannot be scored: refused.
"""

from __future__ import annotations

import pytest
import torch

from bertscore_tm import BERTScore
from bertscore_tm.errors import SettingsMismatchError
from tests.conftest import MINILM

CANDS = ["The cat sat on the mat.", "It rained all day.", "Prices rose."]
REFS = ["A cat was sitting on the mat.", ["It was raining.", "Rain fell all day long."], "Prices went up."]


def saved(metric: BERTScore) -> dict:
    metric.persistent(True)
    return metric.state_dict()


def fresh_scores(**kwargs) -> dict:
    metric = BERTScore(MINILM, **kwargs)
    metric.update(CANDS, REFS)
    return metric.compute()


def assert_same(result: dict, expected: dict) -> None:
    for name in ("precision", "recall", "f1"):
        assert torch.equal(result[name], expected[name]), name


@pytest.mark.slow
@pytest.mark.parametrize("computed_before_saving", [False, True], ids=["updated", "computed"])
def test_a_plain_checkpoint_loaded_with_idf_counts_its_references_again(computed_before_saving):
    plain = BERTScore(MINILM, num_layers=3)
    plain.update(CANDS, REFS)
    if computed_before_saving:
        plain.compute()
    state = saved(plain)
    with_idf = BERTScore(MINILM, num_layers=3, idf=True)
    with_idf.load_state_dict(state)
    assert_same(with_idf.compute(), fresh_scores(num_layers=3, idf=True))
    # and it goes on counting
    with_idf.update(["One more."], ["Yet one more."])
    assert with_idf.compute()["f1"].shape == (4,)


def test_an_idf_checkpoint_loaded_without_idf_scores_plainly():
    with_idf = BERTScore(MINILM, num_layers=3, idf=True)
    with_idf.update(CANDS, REFS)
    with_idf.compute()
    plain = BERTScore(MINILM, num_layers=3)
    plain.load_state_dict(saved(with_idf))
    assert_same(plain.compute(), fresh_scores(num_layers=3))
    assert plain.doc_freq.numel() == 0  # no counts kept that this metric never uses


@pytest.mark.slow
def test_a_checkpoint_of_another_layer_is_rescored_at_the_loading_metrics_layer():
    layer5 = BERTScore(MINILM, num_layers=5)
    layer5(CANDS, REFS)  # forward keeps the layer-5 best similarities
    layer3 = BERTScore(MINILM, num_layers=3)
    layer3.load_state_dict(saved(layer5))
    result = layer3.compute()
    assert_same(result, fresh_scores(num_layers=3))
    assert not torch.equal(result["f1"], fresh_scores(num_layers=5)["f1"])


def test_a_checkpoint_of_the_same_setting_keeps_its_scored_pairs():
    first = BERTScore(MINILM, num_layers=3)
    first(CANDS, REFS)
    again = BERTScore(MINILM, num_layers=3)
    again.load_state_dict(saved(first))
    assert bool(torch.cat(again.scored).all())  # nothing to embed again
    assert_same(again.compute(), fresh_scores(num_layers=3))


@pytest.mark.parametrize("saving", [{"max_length": 16}, {"long_texts": "window"}], ids=["max_length", "window"])
def test_a_checkpoint_of_another_tokenisation_is_refused_naming_it(saving):
    other = BERTScore(MINILM, num_layers=3, **saving)
    other.update(CANDS, REFS)
    metric = BERTScore(MINILM, num_layers=3)
    with pytest.raises(SettingsMismatchError, match=r"tokenised differently.*max_length or long_texts"):
        metric.load_state_dict(saved(other))


def test_an_empty_checkpoint_of_another_tokenisation_loads():
    other = BERTScore(MINILM, num_layers=3, max_length=16)
    metric = BERTScore(MINILM, num_layers=3)
    metric.load_state_dict(saved(other))
    metric.update(CANDS, REFS)
    assert_same(metric.compute(), fresh_scores(num_layers=3))


def test_a_format_1_checkpoint_of_prompts_and_contexts_scores_as_it_did():
    """Format 1 held a prompt's or a context's token t as the id -(t + 1), without marks beside the ids: loaded,
    its ids are made real and its marks kept, so its pairs score as a fresh metric's."""
    settings = dict(num_layers=3, idf=True, candidate_prompt="query: ")
    contexts = ["A question.", "", "Some source text."]
    metric = BERTScore(MINILM, **settings)
    metric.update(CANDS, REFS, context=contexts)
    state = saved(metric)
    extra = state["_extra_state"]
    states = dict(extra["states"])
    for side in ("cand", "ref"):
        marks = states.pop(f"{side}_marked")
        assert any(bool(m.any()) for m in marks)
        states[f"{side}_ids"] = [
            torch.where(m, -ids - 1, ids) for ids, m in zip(states[f"{side}_ids"], marks, strict=True)
        ]
    state["_extra_state"] = {**extra, "format": 1, "states": states}
    loaded = BERTScore(MINILM, **settings)
    loaded.load_state_dict(state)
    expected = BERTScore(MINILM, **settings)
    expected.update(CANDS, REFS, context=contexts)
    assert_same(loaded.compute(), expected.compute())
