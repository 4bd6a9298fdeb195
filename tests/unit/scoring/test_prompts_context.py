"""Fixed prompts (`candidate_prompt=`, `reference_prompt=`) and per-pair context (`context=`): encoded in the same
forward pass as the text, left out of the matching, the weights and the IDF counts. Checked against an
independent float64 computation (the model's hidden states of the joined text, plain torch), and the rules
around them: the context cut first past the window, the embedding cache keyed on the context, bad input."""

from __future__ import annotations

import pytest
import torch

from bertscore_tm import BERTScore, bert_score
from bertscore_tm.errors import ArgumentValueError
from tests.conftest import MINILM

CANDS = ["The cat sat on the mat.", "Heavy rain is expected tomorrow."]
REFS = ["A cat was sitting on the mat.", "Tomorrow it will rain a lot."]
CONTEXT = ["Describe where the animal is.", "What is the weather forecast for Tuesday?"]


@pytest.fixture(scope="module")
def model(minilm_path):
    from transformers import AutoModel, AutoTokenizer

    return AutoTokenizer.from_pretrained(minilm_path), AutoModel.from_pretrained(minilm_path).eval()


def _vectors(model, head: str, text: str) -> tuple[list[int], torch.Tensor]:
    """The ids and normalised layer-5 vectors (float64) of the text's own tokens (CLS, the text's, SEP) when
    `head` is encoded before it: the head's tokens are in the forward pass and then dropped."""
    tokenizer, encoder = model
    enc = tokenizer(head + text, return_tensors="pt")
    with torch.no_grad():
        states = encoder(**enc, output_hidden_states=True).hidden_states[5][0].double()
    n = len(tokenizer(head, add_special_tokens=False)["input_ids"]) if head else 0
    keep = [0, *range(1 + n, states.shape[0])]
    states = states[keep]
    return enc["input_ids"][0][keep].tolist(), states / states.norm(dim=-1, keepdim=True)


def _expected(model, cand_head: str, cand: str, ref_head: str, ref: str) -> list[float]:
    tokenizer = model[0]
    (c_ids, c), (r_ids, r) = _vectors(model, cand_head, cand), _vectors(model, ref_head, ref)
    special = (tokenizer.cls_token_id, tokenizer.sep_token_id)
    cw = torch.tensor([0.0 if i in special else 1.0 for i in c_ids], dtype=torch.float64)
    rw = torch.tensor([0.0 if i in special else 1.0 for i in r_ids], dtype=torch.float64)
    sim = c @ r.T
    p = float((sim.max(dim=1).values * cw).sum() / cw.sum())
    rec = float((sim.max(dim=0).values * rw).sum() / rw.sum())
    return [p, rec, 2 * p * rec / (p + rec)]


def _rows(out) -> list[list[float]]:
    return [[float(out[k][i]) for k in ("precision", "recall", "f1")] for i in range(len(out["f1"]))]


def test_prompts_are_encoded_but_not_matched(model):
    got = bert_score(CANDS, REFS, MINILM, candidate_prompt="query: ", reference_prompt="passage: ")
    for row, cand, ref in zip(_rows(got), CANDS, REFS, strict=True):
        assert row == pytest.approx(_expected(model, "query: ", cand, "passage: ", ref), abs=1e-6)
    plain = bert_score(CANDS, REFS, MINILM)
    assert float((got["f1"] - plain["f1"]).abs().min()) > 1e-4  # the prompt shaped the vectors


def test_context_is_encoded_with_both_sides_but_not_matched(model):
    metric = BERTScore(MINILM)
    metric.update(CANDS, REFS, context=CONTEXT)
    got = metric.compute()
    for row, cand, ref, ctx in zip(_rows(got), CANDS, REFS, CONTEXT, strict=True):
        assert row == pytest.approx(_expected(model, ctx + " \n", cand, ctx + " \n", ref), abs=1e-6)
    functional = bert_score(CANDS, REFS, MINILM, context=CONTEXT)
    assert torch.equal(functional["f1"], got["f1"])


def test_an_unknown_character_is_left_out_with_its_prompt_or_context_and_kept_in_its_text(model):
    # MiniLM's WordPiece reads an emoji as [UNK], a special token: where it comes from the prompt's or the
    # context's characters it is theirs, not the text's (only the tokens the tokenizer adds are the text's)
    cands, refs = [f"{CANDS[0]} \U0001f600", CANDS[1]], REFS
    prompt, context = "\U0001f600 query: ", ["\U0001f600 where is it?", CONTEXT[1]]
    got = bert_score(cands, refs, MINILM, candidate_prompt=prompt, context=context)
    for row, cand, ref, ctx in zip(_rows(got), cands, refs, context, strict=True):
        assert row == pytest.approx(_expected(model, f"{prompt}{ctx} \n", cand, f"{ctx} \n", ref), abs=1e-6)


def test_context_stays_out_of_the_idf_counts():
    with_context, without = BERTScore(MINILM, idf=True), BERTScore(MINILM, idf=True)
    with_context.update(CANDS, REFS, context=CONTEXT)
    without.update(CANDS, REFS)
    assert torch.equal(with_context.doc_freq, without.doc_freq)


def test_past_the_window_the_context_is_cut_first():
    metric = BERTScore(MINILM, max_length=16)
    long_context = ["one two three four five six seven eight nine ten eleven twelve thirteen fourteen"]
    with pytest.warns(UserWarning, match="context was cut from its start first"):
        cand, _ = metric.scorer.encode_pairs(["The cat sat."], ["A cat."], long_context, [1])
    assert int(cand.lens[0]) == 16
    tokens = list(zip(cand.ids.tolist(), cand.marked.tolist(), strict=True))
    text = metric.scorer.encoder.tokenizer("The cat sat.")["input_ids"]
    assert [i for i, marked in tokens if not marked] == text  # the text whole, CLS and SEP included
    tail = metric.scorer.encoder.tokenizer(long_context[0], add_special_tokens=False)["input_ids"][-(16 - len(text)) :]
    assert [i for i, marked in tokens if marked] == tail  # the context's last tokens, nearest the text


@pytest.mark.slow
def test_the_embedding_cache_keys_on_the_context():
    cached = BERTScore(MINILM, embedding_cache_mb=16)
    cached.update(CANDS, REFS, context=CONTEXT)
    first = cached.compute()["f1"]
    cached.reset()
    cached.update(CANDS, REFS, context=["Something else entirely.", "Another question."])
    second = cached.compute()["f1"]
    fresh = bert_score(CANDS, REFS, MINILM, context=["Something else entirely.", "Another question."])["f1"]
    assert torch.equal(second, fresh) and not torch.equal(first, second)


def test_a_text_left_blank_by_its_prompt_scores_as_blank():
    with pytest.warns(UserWarning, match="no token but the special ones"):
        got = bert_score(["", CANDS[0]], [REFS[0], REFS[0]], MINILM, candidate_prompt="query: ")
    assert _rows(got)[0] == [0.0, 0.0, 0.0]


@pytest.mark.parametrize(
    ("context", "error", "words"),
    [(["only one"], ValueError, "one text per pair"), ([1, 2], TypeError, r"context\[0\]"), (3, TypeError, "context")],
)
def test_bad_context_is_refused_naming_it(context, error, words):
    with pytest.raises(error, match=words):
        bert_score(CANDS, REFS, MINILM, context=context)
    with pytest.raises(error, match=words):
        BERTScore(MINILM).update(CANDS, REFS, context=context)


def test_bad_prompts_are_refused_naming_them():
    with pytest.raises(ArgumentValueError, match="candidate_prompt must not be blank"):
        BERTScore(MINILM, candidate_prompt="  ")
    with pytest.raises(ArgumentValueError, match="reference_prompt takes"):
        BERTScore(MINILM, max_length=8, reference_prompt="a very long prompt with many words in it")
    code = BERTScore(MINILM, candidate_prompt="query: ").hash_code
    assert code.endswith("_cand-prompt='query: '")


def test_the_command_line_takes_a_context_file_and_prompts(tmp_path, capsys):
    from bertscore_tm.cli import main

    files = {}
    for name, lines in (("c", CANDS), ("r", REFS), ("x", CONTEXT)):
        files[name] = tmp_path / f"{name}.txt"
        files[name].write_text("\n".join(lines) + "\n")
    argv = ["score", "-c", str(files["c"]), "-r", str(files["r"]), "-m", MINILM, "-s", "--context", str(files["x"])]
    assert main([*argv, "--candidate-prompt", "query: "]) == 0
    rows = [line.split("\t") for line in capsys.readouterr().out.splitlines()[1:]]
    expected = bert_score(CANDS, REFS, MINILM, context=CONTEXT, candidate_prompt="query: ")["f1"]
    assert [float(r[2]) for r in rows] == pytest.approx(expected.tolist(), abs=1e-6)
    files["x"].write_text("only one line\n")
    assert main(argv) != 0
    assert "context file" in capsys.readouterr().err


@pytest.mark.slow
def test_compare_applies_the_mask_and_the_prompts(tmp_path, capsys):
    import json

    from bertscore_tm.cli import main

    files = []
    for name, lines in (("a", CANDS), ("b", list(reversed(CANDS))), ("r", REFS)):
        files.append(tmp_path / f"{name}.txt")
        files[-1].write_text("\n".join(lines) + "\n")
    extra = ["--ignore", "punctuation", "--candidate-prompt", "query: "]
    argv = ["compare", "-r", str(files[2]), "-c", str(files[0]), str(files[1]), "-m", MINILM, "--format", "json"]
    assert main([*argv, *extra]) == 0
    doc = json.loads(capsys.readouterr().out)
    for row, cands in zip(doc["systems"], (CANDS, list(reversed(CANDS))), strict=True):
        alone = bert_score(cands, REFS, MINILM, ignore="punctuation", candidate_prompt="query: ")["f1"]
        assert row["f1"] == pytest.approx(float(alone.double().mean()), abs=1e-6)
    assert doc["hash"].endswith("_ignore=punctuation_cand-prompt='query: '")


def test_all_pairs_apply_the_prompts_as_the_paired_scores_do():
    prompts = {"candidate_prompt": "query: ", "reference_prompt": "passage: "}
    matrix = BERTScore(MINILM, **prompts).pairwise(CANDS, REFS)
    for j, ref in enumerate(REFS):
        column = bert_score(CANDS, [ref] * len(CANDS), MINILM, **prompts)
        for key in ("precision", "recall", "f1"):
            torch.testing.assert_close(matrix[key][:, j], column[key], rtol=0, atol=1e-6)
