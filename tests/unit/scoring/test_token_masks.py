"""Token masks (`ignore=`): a masked token is encoded with its text, but it is no match for the other side, and
it weighs nothing; checked against an independent float64 computation (the model's hidden states, plain torch)
for a regular expression and a callable, and for the rules around it (a text left with no token, bad rules,
the hash code, the engines that do not apply masks yet)."""

from __future__ import annotations

import re

import pytest
import torch

from bertscore_tm import BERTScore, bert_score
from bertscore_tm.errors import ArgumentTypeError, ArgumentValueError
from bertscore_tm.models.masks import is_code_punctuation
from tests.conftest import MINILM

CANDS = ["The cat, sadly, sat on the mat!", "Rain (heavy) is expected tomorrow; stay home."]
REFS = ["A cat was sitting on the mat.", "Tomorrow: heavy rain, say the forecasters."]
PUNCT = r"[^\w\s]+"


@pytest.fixture(scope="module")
def hidden(minilm_path):
    """Each text's tokens and layer-5 vectors (float64, normalised), straight from transformers."""
    from transformers import AutoModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(minilm_path)
    model = AutoModel.from_pretrained(minilm_path).eval()

    def run(text: str) -> tuple[list[str], torch.Tensor]:
        enc = tokenizer(text.strip(), return_tensors="pt")
        with torch.no_grad():
            states = model(**enc, output_hidden_states=True).hidden_states[5][0].double()
        return tokenizer.convert_ids_to_tokens(enc["input_ids"][0]), states / states.norm(dim=-1, keepdim=True)

    return run


def _expected(hidden, cand: str, ref: str, ignored) -> tuple[float, float, float]:
    (c_tok, c_vec), (r_tok, r_vec) = hidden(cand), hidden(ref)
    c_keep = torch.tensor([not ignored(t) for t in c_tok])
    r_keep = torch.tensor([not ignored(t) for t in r_tok])
    c_vec, r_vec = c_vec[c_keep], r_vec[r_keep]
    c_w = torch.tensor(
        [0.0 if t in ("[CLS]", "[SEP]") else 1.0 for t, k in zip(c_tok, c_keep, strict=True) if k], dtype=torch.float64
    )
    r_w = torch.tensor(
        [0.0 if t in ("[CLS]", "[SEP]") else 1.0 for t, k in zip(r_tok, r_keep, strict=True) if k], dtype=torch.float64
    )
    sim = c_vec @ r_vec.T
    p = float((sim.max(dim=1).values * c_w).sum() / c_w.sum())
    r = float((sim.max(dim=0).values * r_w).sum() / r_w.sum())
    return p, r, 2 * p * r / (p + r)


@pytest.mark.parametrize(
    ("rule", "ignored"),
    [
        (PUNCT, lambda t: re.fullmatch(PUNCT, t) is not None),
        (re.compile(r"the|a|on"), lambda t: t in ("the", "a", "on")),
        (lambda piece: piece.startswith("##"), lambda t: t.startswith("##")),
    ],
    ids=["regex", "compiled", "callable"],
)
def test_masked_tokens_take_no_part_in_the_matching(hidden, rule, ignored):
    got = bert_score(CANDS, REFS, MINILM, ignore=rule)
    for i, (cand, ref) in enumerate(zip(CANDS, REFS, strict=True)):
        expected = _expected(hidden, cand, ref, ignored)
        ours = [float(got[k][i]) for k in ("precision", "recall", "f1")]
        assert ours == pytest.approx(expected, abs=1e-6)


def test_a_mask_that_leaves_no_token_gives_the_blank_score_with_a_warning():
    with pytest.warns(UserWarning, match="no token but the special ones"):
        got = bert_score(["!!! ... ???", CANDS[0]], [REFS[0], REFS[0]], MINILM, ignore=PUNCT)
    assert [float(got[k][0]) for k in ("precision", "recall", "f1")] == [0.0, 0.0, 0.0]
    assert float(got["f1"][1]) > 0.5


@pytest.mark.slow
def test_metric_and_functions_agree_and_the_hash_names_the_mask():
    metric = BERTScore(MINILM, ignore="punctuation")
    metric.update(CANDS, REFS)
    result = metric.compute()
    assert torch.equal(result["f1"], bert_score(CANDS, REFS, MINILM, ignore="punctuation")["f1"])
    assert metric.hash_code.endswith("_ignore=punctuation")
    assert BERTScore(MINILM, ignore=PUNCT).hash_code.endswith(f"_ignore=re:{PUNCT}")
    assert "ignore" not in BERTScore(MINILM).hash_code


def test_code_punctuation_is_code_bert_scores_rule():
    assert [is_code_punctuation(p) for p in ["\u0120)", "\u010a\u0120\u0120", "()", "\u0120-", "\u0120|", "x"]] == [
        True,
        True,
        True,
        False,
        False,
        False,
    ]


@pytest.mark.parametrize(("bad", "error"), [("[unclosed", ArgumentValueError), (3, ArgumentTypeError)])
def test_a_bad_rule_is_refused_naming_ignore(bad, error):
    with pytest.raises(error, match="ignore"):
        BERTScore(MINILM, ignore=bad)


def test_a_callable_that_does_not_answer_a_bool_is_refused():
    with pytest.raises(ArgumentValueError, match=r"ignore=.*returned"):
        BERTScore(MINILM, ignore=lambda piece: "yes")


@pytest.mark.slow
def test_all_pairs_apply_the_mask_as_the_paired_scores_do():
    metric = BERTScore(MINILM, ignore=PUNCT)
    matrix = metric.pairwise(CANDS, REFS)
    for j, ref in enumerate(REFS):
        column = bert_score(CANDS, [ref] * len(CANDS), MINILM, ignore=PUNCT)
        for key in ("precision", "recall", "f1"):
            assert torch.equal(matrix[key][:, j], column[key]), key
