"""The hash code names the setting: every setting that changes scores changes the code, and where our scores
equal the reference's the code is the reference's, character for character."""

from __future__ import annotations

import pytest
import torch

from bertscore_tm import BERTScore
from tests.conftest import MINILM

CAND, REF = "The quick brown fox jumps over the lazy dog.", "A fast brown fox leaps over a lazy dog."


@pytest.fixture(scope="module")
def baseline_file(tmp_path_factory):
    file = tmp_path_factory.mktemp("baseline") / "b.tsv"
    file.write_text("LAYER,P,R,F\n" + "".join(f"{n},0.5,0.5,0.5\n" for n in range(7)))
    return file


def _default_code() -> str:
    import bert_score.utils

    return bert_score.utils.get_hash(MINILM, 5, False, False, False, True)


# settings whose scores the reference does not give: each must show in the code
OUR_SETTINGS = {
    "max_length below the window": ({"max_length": 8}, "_max-len=8"),
    "bfloat16": ({"model_dtype": torch.bfloat16}, "_dtype=bfloat16"),
    "float16": ({"model_dtype": torch.float16}, "_dtype=float16"),
}


@pytest.mark.filterwarnings("ignore:.*truncated")
@pytest.mark.parametrize("name", list(OUR_SETTINGS))
def test_a_setting_of_our_own_changes_the_code(name):
    settings, suffix = OUR_SETTINGS[name]
    default = BERTScore(MINILM, num_layers=5)
    other = BERTScore(MINILM, num_layers=5, **settings)
    assert other.hash_code == default.hash_code + suffix
    default.update([" ".join([CAND] * 3)], [REF])
    other.update([" ".join([CAND] * 3)], [REF])
    assert not torch.equal(other.compute_scores().f1.reshape(-1)[:1], default.compute_scores().f1[:1])


def test_all_layers_keeps_the_code_since_the_named_layer_scores_the_same():
    """The reference's code leaves all_layers out; the row of the named layer equals that layer alone."""
    one = BERTScore(MINILM, num_layers=5)
    every = BERTScore(MINILM, num_layers=5, all_layers=True)
    assert every.hash_code == one.hash_code == _default_code() and every.signature.all_layers
    for metric in (one, every):
        metric.update([CAND, CAND], [[REF, CAND + " Indeed."], REF])
    torch.testing.assert_close(every.compute_scores().f1[5], one.compute_scores().f1, rtol=0, atol=1e-6)


def test_max_length_at_the_window_changes_neither_scores_nor_code():
    assert BERTScore(MINILM, max_length=512).hash_code == BERTScore(MINILM).hash_code == _default_code()


def test_the_reference_settings_render_as_the_reference(baseline_file):
    import bert_score.utils

    cases = [
        ({}, (5, False, False, False)),
        ({"idf": True}, (5, True, False, False)),
        ({"num_layers": 3}, (3, False, False, False)),
        ({"rescale_with_baseline": True}, (5, False, True, False)),
        ({"rescale_with_baseline": True, "baseline_path": baseline_file}, (5, False, True, True)),
    ]
    for settings, (layers, idf, rescale, custom) in cases:
        ours = BERTScore(MINILM, **settings).hash_code
        assert ours == bert_score.utils.get_hash(MINILM, layers, idf, rescale, custom, True), settings


def test_the_signature_is_structured_and_its_defaults_render_nothing():
    from dataclasses import fields, replace

    from bertscore_tm.scoring.hashcode import HashSignature

    metric = BERTScore(MINILM, idf=True, max_length=64)
    sig = metric.signature
    assert isinstance(sig, HashSignature) and sig.format() == metric.hash_code
    assert (sig.model, sig.num_layers, sig.idf, sig.max_length, sig.model_dtype) == (MINILM, 5, True, 64, None)
    plain = replace(sig, idf=False, max_length=None)
    assert plain.format() == _default_code()
    for f in fields(HashSignature):  # every field of our own is optional and silent at its default
        if "key" in f.metadata:
            assert replace(plain, **{f.name: f.default}).format() == _default_code()
