"""Bad input gets a clear error naming the problem, or (where the reference defines a score) that score
and one warning; never a crash, a hang or a silently wrong number."""

from __future__ import annotations

import re
import time
import warnings

import pytest
import torch

from bertscore_tm import BERTScore, bert_score, score
from bertscore_tm.errors import ArgumentTypeError, ArgumentValueError, BaselineNotFoundError, ModelNotFoundError
from tests.conftest import MINILM


@pytest.fixture(scope="module")
def metric():
    return BERTScore(MINILM)


@pytest.fixture()
def fresh(metric):
    metric.reset()
    return metric


def caught(fn):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        result = fn()
    return result, [w for w in seen if issubclass(w.category, UserWarning)]


def test_mismatched_lengths_name_both_lengths(fresh):
    with pytest.raises(ValueError, match=r"3 predictions and 2 targets"):
        fresh.update(["a", "b", "c"], ["a", "b"])


def test_a_non_string_names_its_position(fresh):
    with pytest.raises(TypeError, match=r"preds\[1\]"):
        fresh.update(["a", 7], ["a", "b"])
    with pytest.raises(TypeError, match=r"target\[1\]\[0\]"):
        fresh.update(["a", "b"], [["a"], [None, "b"]])
    with pytest.raises(TypeError, match=r"preds must be"):
        fresh.update(5, ["a"])


def test_a_candidate_without_references_is_an_error(fresh):
    with pytest.raises(ValueError, match=r"target\[0\] is an empty list"):
        fresh.update(["a"], [[]])


def test_blank_text_scores_zero_with_one_warning(fresh):
    def go():
        fresh.update(
            ["", "   ", "A real sentence.", "A real sentence."], ["Something.", "Another.", " \t\n", "A real sentence."]
        )
        return fresh.compute()

    result, warned = caught(go)
    for key in ("precision", "recall", "f1"):
        assert result[key][:3].tolist() == [0.0, 0.0, 0.0]
    assert result["f1"][3] == pytest.approx(1.0, abs=1e-5)
    blank_warnings = [str(w.message) for w in warned if "blank" in str(w.message)]
    assert len(blank_warnings) == 1  # one for this update, counting candidates and references together
    assert blank_warnings[0].startswith("3 blank text(s) (2 candidates, 1 reference)")


def test_text_the_tokenizer_drops_entirely_counts_as_blank(fresh):
    result, warned = caught(lambda: (fresh.update(["\u200b\u200b"], ["Hello there."]), fresh.compute())[1])
    assert result["f1"].tolist() == [0.0]
    assert any("blank" in str(w.message) for w in warned)


def test_text_past_the_window_is_truncated_with_one_warning_counting_texts(fresh):
    long_text = " ".join(["word"] * 700)
    result, warned = caught(
        lambda: (fresh.update([long_text, long_text, "short"], [long_text, "ok", "short"]), fresh.compute())[1]
    )
    truncation = [w for w in warned if "truncated" in str(w.message)]
    assert len(truncation) == 1
    assert str(truncation[0].message).startswith("3 text(s) (2 candidates, 1 reference) are longer")
    assert "512" in str(truncation[0].message)
    assert result["f1"][0] == pytest.approx(1.0, abs=1e-5)
    ids = torch.cat(fresh.cand_ids)
    assert int(torch.cat(fresh.cand_lens).max()) == 512 and len(ids) == int(torch.cat(fresh.cand_lens).sum())


def test_one_update_warns_once_per_kind_counting_candidates_and_references_under_the_default_filter(fresh):
    # Python's default filter shows a message once per place: separate, equal warnings for the candidates and
    # the references would show as one, and the count would be half the truth
    long_text = " ".join(["word"] * 700)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("default")
        fresh.update([long_text], [long_text])
        fresh.update(["", " "], ["\t", ""])
    messages = [str(w.message) for w in seen]
    assert [m for m in messages if "truncated" in m] == [
        "2 text(s) (1 candidate, 1 reference) are longer than the model's window of 512 tokens and were truncated "
        "to it (as the reference does)."
    ]
    blank = [m for m in messages if "blank" in m]
    assert len(blank) == 1 and blank[0].startswith("4 blank text(s) (2 candidates, 2 references), empty after")


def test_an_empty_update_is_a_no_op(fresh):
    fresh.update([], [])
    fresh.update(["Hello."], ["Hello."])
    fresh.update([], [])
    assert fresh.compute()["f1"].shape == (1,)


def test_compute_before_any_update_says_so(fresh):
    # no pairs is an error at every door that returns scores (docs/semantics.md, "No pairs"), naming the texts
    with pytest.raises(ArgumentValueError, match="no pairs to score") as err, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fresh.compute()
    assert err.value.argument == "preds"
    with pytest.raises(ArgumentValueError, match="no pairs to score"):
        fresh.compute_scores()


@pytest.mark.parametrize(
    "text",
    [
        "Emoji 🤖🎉 and CJK 漢字かな and Arabic مرحبا and combining é",
        "tabs\tand\nnewlines   and    runs of spaces",
        "\x00\x07 control characters \u202e reversed",
        "a" * 3000,
        "   leading and trailing   ",
        "[CLS] [SEP] [PAD] [MASK] literal special tokens",
    ],
)
def test_any_unicode_and_any_spacing_score_without_crashing(fresh, text):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fresh.update([text, "plain"], [text, text])
        result = fresh.compute()
    assert torch.isfinite(result["f1"]).all()


def test_a_model_not_on_disk_fails_at_once_naming_it():
    start = time.monotonic()
    with pytest.raises(
        ModelNotFoundError,
        match=r"'no-such-org/no-such-model' is not on this machine.*hub was not contacted.*model_name_or_path",
    ):
        BERTScore("no-such-org/no-such-model", num_layers=3)
    assert time.monotonic() - start < 5


def test_a_default_model_not_on_disk_fails_with_a_clear_error():
    with pytest.raises((ModelNotFoundError, ValueError)) as err:
        score(["a"], ["b"], lang="de", num_layers=9)
    assert "bert-base-multilingual-cased" in str(err.value)


def test_an_unknown_model_without_num_layers_asks_for_it(minilm_path):
    with pytest.raises(ValueError, match="pass num_layers"):
        BERTScore(minilm_path)


def test_a_missing_baseline_names_the_file_and_how_to_make_one():
    with pytest.raises(
        BaselineNotFoundError, match=r"baselines/fr/sentence-transformers/all-MiniLM-L6-v2\.tsv.*bertscore-tm baseline"
    ):
        BERTScore(MINILM, lang="fr", rescale_with_baseline=True)


def test_bad_settings_are_rejected_with_their_names():
    with pytest.raises(ValueError, match="reduction"):
        BERTScore(MINILM, reduction="sum")
    with pytest.raises(ValueError, match="output"):
        BERTScore(MINILM, output="accuracy")
    with pytest.raises(ValueError, match="num_layers must be between 0 and 6"):
        BERTScore(MINILM, num_layers=9)
    with pytest.raises(ValueError, match="batch_size"):
        BERTScore(MINILM, batch_size=0)
    with pytest.raises(TypeError, match="batch_size"):  # an integer must be an integer (arguments.py)
        BERTScore(MINILM, batch_size=2.5)
    with pytest.raises(ValueError, match="max_length"):
        BERTScore(MINILM, max_length=4096)
    with pytest.raises(ValueError, match="model_dtype"):
        BERTScore(MINILM, model_dtype=torch.int8)


# -- what counts as texts: the same for score(), bert_score() and the Metric ---------------------------------

INPUT_KINDS = {
    "list": (lambda: ["A cat.", "A dog."], lambda: ["A cat sat.", "A dog ran."]),
    "tuple": (lambda: ("A cat.", "A dog."), lambda: (("A cat sat.", "A kitten."), "A dog ran.")),
    "one string": (lambda: "A cat.", lambda: "A cat sat."),
    "dict preds": (lambda: {"A cat.": 0, "A dog.": 1}, lambda: ["A cat sat.", "A dog ran."]),
    "dict target": (lambda: ["A cat.", "A dog."], lambda: {"A cat sat.": 0, "A dog ran.": 1}),
    "dict reference group": (lambda: ["A cat."], lambda: [{"A cat sat.": 1}]),
    "generator": (lambda: (t for t in ["A cat.", "A dog."]), lambda: ["A cat sat.", "A dog ran."]),
    "set": (lambda: {"A cat."}, lambda: ["A cat sat."]),
    "bytes": (lambda: [b"A cat."], lambda: ["A cat sat."]),
}


def _outcome(call):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = call()
    except (TypeError, ValueError) as err:
        return type(err), str(err)
    return "scored", [round(float(x), 5) for x in result]


@pytest.mark.parametrize("kind", list(INPUT_KINDS))
def test_score_and_the_metric_accept_and_refuse_the_same_inputs(fresh, kind):
    preds, target = INPUT_KINDS[kind]

    def by_metric():
        fresh.reset()
        fresh.update(preds(), target())
        return fresh.compute()["f1"]

    by_score = _outcome(lambda: score(preds(), target(), model_type=MINILM)[2])
    if by_score[0] != "scored":  # bert-score's names for the texts: cands and refs
        by_score = (by_score[0], re.sub(r"\bcands\b", "preds", re.sub(r"\brefs\b", "target", by_score[1])))
    by_function = _outcome(lambda: bert_score(preds(), target(), MINILM)["f1"])
    assert by_score == _outcome(by_metric) == by_function
    if kind in ("list", "tuple", "one string"):
        assert by_score[0] == "scored"
    else:
        assert by_score[0] is ArgumentTypeError  # the package's own, a TypeError


def test_a_mapping_is_not_a_sequence_of_texts(fresh):
    """score() used to score a dict's keys."""
    with pytest.raises(TypeError, match=r"cands must be .* got dict.*mapping"):  # score's own name
        score({"A cat.": 0}, ["A cat sat."], model_type=MINILM)
    with pytest.raises(TypeError, match=r"target must be .* got dict.*mapping"):
        fresh.update(["A cat."], {"A cat sat.": 0})
    with pytest.raises(TypeError, match=r"target\[0\] must be .* got dict.*mapping"):
        fresh.update(["A cat."], [{"A cat sat.": 0}])


@pytest.mark.parametrize(
    ("preds", "target", "position"),
    [
        (["fine", "lone \ud800 surrogate"], ["a", "b"], r"preds\[1\]"),
        (["fine", "fine"], ["a", ["b", "\udcff"]], r"target\[1\]\[1\]"),
        (["fine", "fine", "fine"], ["a", "b", "x\udfffy"], r"target\[2\]"),
    ],
)
def test_text_that_cannot_be_encoded_names_its_position(fresh, preds, target, position):
    with pytest.raises(ValueError, match=rf"^{position} .*cannot be encoded as UTF-8.*surrogate.*character"):
        fresh.update(preds, target)
    theirs = position.replace("preds", "cands").replace("target", "refs")  # score's own names
    with pytest.raises(ValueError, match=rf"^{theirs} "):
        score(preds, target, model_type=MINILM)
