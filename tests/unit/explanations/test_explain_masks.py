"""Explanations with a token mask (``ignore=``), fixed prompts, a per-pair context and F-beta (issue 39): each
pair's P/R/F (and F-beta) equal the paired metric's with the same setting, to 1e-6; the contributions still add
up to P and R; the tokens out of the matching are shown with their role (no match, no weight, no contribution);
a masked pair against an independent float64 computation; the command line, the renderings and bad input."""

from __future__ import annotations

import json
import math
import re

import pytest
import torch

from bertscore_tm import BERTScore, bert_score
from bertscore_tm.explanations import explain
from bertscore_tm.reports.explanation_html import render_html
from bertscore_tm.reports.explanation_text import render_text
from tests.cli.test_cli import run_main
from tests.conftest import MINILM

pytestmark = pytest.mark.usefixtures("one_thread")
TOL = 1e-6
PUNCT = r"[^\w\s]+"
CANDS = ["The cat, sadly, sat on the mat!", "Rain (heavy) is expected tomorrow; stay home."]
GROUPS = [["A cat was sitting on the mat.", "The mat: a cat sat there."], ["Tomorrow: heavy rain, they say."]]

SETTINGS = [
    {"ignore": "punctuation"},
    {"ignore": PUNCT, "idf": True},
    {"candidate_prompt": "query: "},
    {"candidate_prompt": "query: ", "reference_prompt": "passage: ", "ignore": "punctuation", "beta": 3.0},
    {"ignore": "punctuation", "rescale_with_baseline": True, "lang": "en", "beta": 2.0},
    {"reference_prompt": "passage: ", "idf": True},
]


def check_adds_up(why) -> None:
    """The contributions add up to the best reference's raw P and R; every token out of the matching is shown
    with its role and takes no part."""
    assert abs(math.fsum(t.contribution for t in why.candidate_tokens) - why.raw.precision) < TOL
    assert abs(math.fsum(t.contribution for t in why.reference_tokens) - why.raw.recall) < TOL
    for t in (*why.candidate_tokens, *why.reference_tokens):
        if t.role is not None:
            assert (t.match, t.similarity, t.weight, t.contribution) == (None, 0.0, 0.0, 0.0), t
        else:
            assert t.match is not None
    matched = {t.match for t in why.candidate_tokens if t.match is not None}
    assert all(why.reference_tokens[m].role is None for m in matched)  # nothing out of the matching is a match


@pytest.mark.slow
@pytest.mark.parametrize(
    "settings", SETTINGS, ids=["punctuation", "regex-idf", "prompt", "prompts-mask-beta", "rescaled", "ref-prompt-idf"]
)
def test_scores_equal_the_paired_metric_and_add_up(settings) -> None:
    metric = BERTScore(MINILM, **settings)
    expected = bert_score(CANDS, GROUPS, MINILM, **settings)
    for i, (cand, refs) in enumerate(zip(CANDS, GROUPS, strict=True)):
        corpus = [r for g in GROUPS for r in g] if settings.get("idf") else None  # the IDF bert_score counts
        why = metric.explain(cand, refs, idf_references=corpus)
        for name in ("precision", "recall", "f1"):
            assert getattr(why, name) == pytest.approx(float(expected[name][i]), abs=TOL), (i, name)
        if "beta" in settings:
            assert why.f_beta == pytest.approx(float(expected["f_beta"][i]), abs=TOL)
            assert why.reference_scores[why.best_reference].f_beta == pytest.approx(why.f_beta, abs=TOL)
        else:
            assert why.f_beta is None
        check_adds_up(why)
        roles = {t.role for t in (*why.candidate_tokens, *why.reference_tokens)}
        assert ("masked" in roles) == ("ignore" in settings)
        assert ("prompt" in roles) == any(k.endswith("_prompt") for k in settings)


def test_masked_tokens_are_marked_and_prompt_tokens_named() -> None:
    metric = BERTScore(MINILM, ignore="punctuation", candidate_prompt="query: ")
    why = metric.explain(CANDS[0], GROUPS[0][0])
    shown = [(t.token, t.role) for t in why.candidate_tokens]
    assert shown[:3] == [("[CLS]", None), ("query", "prompt"), (":", "prompt")]
    assert [t for t, role in shown if role == "masked"] == [",", ",", "!"]
    assert [t.token for t in why.reference_tokens if t.role == "masked"] == ["."]
    prompt = [t for t in why.candidate_tokens if t.role == "prompt"]
    assert all(t.start is None and t.word is None for t in prompt)
    assert why.candidate[why.candidate_tokens[4].start : why.candidate_tokens[4].end] == "cat"  # spans unshifted
    assert [w.text for w in why.candidate_words][:2] == ["The", "cat,"]
    assert any("masked (ignore=)" in n for n in why.notes) and any("fixed prompt" in n for n in why.notes)
    assert why.to_json()["candidate_tokens"][1]["role"] == "prompt"
    assert "role" not in why.to_json()["candidate_tokens"][3]


@pytest.fixture(scope="module")
def independent(minilm_path: str):
    """Pieces and L2-normalised float64 vectors of layer 5 of a text (after `head`, whose tokens are dropped after
    the forward pass), straight from transformers (no bertscore_tm)."""
    from transformers import AutoModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(minilm_path)
    model = AutoModel.from_pretrained(minilm_path).eval()

    def vectors(text: str, head: str = "") -> tuple[list[str], torch.Tensor]:
        enc = tokenizer(head + text.strip(), return_tensors="pt", return_offsets_mapping=True)
        offsets = enc.pop("offset_mapping")[0]
        with torch.no_grad():
            hidden = model(**enc, output_hidden_states=True).hidden_states[5][0].double()
        own = [k for k, (_, end) in enumerate(offsets.tolist()) if end == 0 or end > len(head)]  # specials: (0, 0)
        pieces = tokenizer.convert_ids_to_tokens(enc["input_ids"][0])
        hidden = hidden[own]
        return [pieces[k] for k in own], hidden / hidden.norm(dim=-1, keepdim=True)

    return vectors


def expected_scores(cand, ref) -> tuple[float, float]:
    """P and R in float64: the masked tokens' rows and columns dropped, then max and weighted mean."""
    (c_tok, c_vec), (r_tok, r_vec) = cand, ref
    c_keep = [re.fullmatch(PUNCT, t) is None for t in c_tok]
    r_keep = [re.fullmatch(PUNCT, t) is None for t in r_tok]
    sim = c_vec[torch.tensor(c_keep)] @ r_vec[torch.tensor(r_keep)].T

    def weights(tokens, keep):
        return torch.tensor([float(t not in ("[CLS]", "[SEP]")) for t, k in zip(tokens, keep, strict=True) if k])

    c_w, r_w = weights(c_tok, c_keep).double(), weights(r_tok, r_keep).double()
    p = float((sim.max(dim=1).values * c_w).sum() / c_w.sum())
    r = float((sim.max(dim=0).values * r_w).sum() / r_w.sum())
    return p, r


@pytest.mark.parametrize("prompt", [None, "query: "], ids=["mask", "mask-and-prompt"])
def test_a_masked_pair_against_an_independent_float64_computation(independent, prompt) -> None:
    why = BERTScore(MINILM, ignore=PUNCT, candidate_prompt=prompt).explain(CANDS[1], GROUPS[1][0])
    cand, ref = independent(CANDS[1], prompt or ""), independent(GROUPS[1][0])
    p, r = expected_scores(cand, ref)
    assert abs(why.precision - p) < 1e-5 and abs(why.recall - r) < 1e-5
    mine = [t for t in why.candidate_tokens if t.role != "prompt"]
    assert [t.token for t in mine] == cand[0]
    keep = torch.tensor([t.role is None for t in mine])
    sim = cand[1][keep] @ ref[1][torch.tensor([t.role is None for t in why.reference_tokens])].T
    best = sim.max(dim=1).values
    assert [t.similarity for t in mine if t.role is None] == pytest.approx(best.tolist(), abs=1e-5)
    assert all(t.token in ("(", ")", ";", ".") for t in mine if t.role == "masked")
    check_adds_up(why)


@pytest.mark.slow
def test_a_context_is_shown_as_such_and_scores_as_the_paired_metric() -> None:
    context = "Weather report for the weekend."
    expected = bert_score([CANDS[1]], [GROUPS[1]], MINILM, ignore="punctuation", context=[context])
    why = explain(CANDS[1], GROUPS[1], MINILM, ignore="punctuation", context=context)
    assert why.f1 == pytest.approx(float(expected["f1"][0]), abs=TOL)
    assert why.precision == pytest.approx(float(expected["precision"][0]), abs=TOL)
    assert {t.role for t in why.candidate_tokens} >= {"context", "masked", None}
    shown = [t.token for t in why.reference_tokens if t.role == "context"]
    assert shown == ["weather", "report", "for", "the", "weekend", "."]
    check_adds_up(why)
    both = BERTScore(MINILM, candidate_prompt="query: ").scorer
    from bertscore_tm.explanations.explanation import explain_pairs
    from bertscore_tm.explanations.weighting import weighting

    why = explain_pairs(both, CANDS[1:], GROUPS[1:], weighting(both, GROUPS[1:]), context=[context])[0]
    roles = [t.role for t in why.candidate_tokens]
    assert roles[1:3] == ["prompt", "prompt"] and roles[3:9] == ["context"] * 6 and roles[9] is None


def test_the_renderings_show_roles_and_f_beta() -> None:
    why = BERTScore(MINILM, ignore="punctuation", candidate_prompt="query: ", beta=3.0).explain(CANDS[0], GROUPS[0])
    text = render_text([why])
    assert "F-beta" in text and "(masked)" in text and "(prompt)" in text
    page = render_html([why])
    assert "(masked)" in page and "(prompt)" in page and "Fβ" in page


@pytest.mark.slow
def test_the_command_line_explains_with_a_mask_prompts_and_context(capsys, tmp_path) -> None:
    cands, refs, ctx = tmp_path / "c.txt", tmp_path / "r.txt", tmp_path / "x.txt"
    cands.write_text("\n".join(CANDS) + "\n")
    refs.write_text("\n".join(g[0] for g in GROUPS) + "\n")
    ctx.write_text("About a cat.\nAbout the weather.\n")
    options = ["--ignore", "punctuation", "--candidate-prompt", "query: ", "--beta", "2"]
    args = ["-c", str(cands), "-r", str(refs), "--context", str(ctx), "--worst", "1", *options]
    rc, out, _ = run_main(capsys, "explain", "-m", MINILM, "--format", "json", *args)
    assert rc == 0
    pair = json.loads(out)["pairs"][0]
    kw = {"ignore": "punctuation", "candidate_prompt": "query: ", "beta": 2.0}
    expected = bert_score(CANDS, [g[0] for g in GROUPS], MINILM, context=["About a cat.", "About the weather."], **kw)
    n = pair["line"] - 1
    assert n == int(expected["f1"].argmin())
    assert pair["f1"] == pytest.approx(float(expected["f1"][n]), abs=TOL)
    assert pair["f_beta"] == pytest.approx(float(expected["f_beta"][n]), abs=TOL)
    roles = {t.get("role") for t in pair["candidate_tokens"]}
    assert roles == {None, "masked", "prompt", "context"}
    bad = tmp_path / "short.txt"
    bad.write_text("one line\n")
    rc, _, err = run_main(capsys, "explain", "-m", MINILM, "-c", str(cands), "-r", str(refs), "--context", str(bad))
    assert rc != 0 and "context file" in err


def test_bad_context_and_unsupported_settings_are_refused() -> None:
    with pytest.raises(TypeError, match="context"):
        explain(CANDS[0], GROUPS[0], MINILM, context=3)
    with pytest.raises(ValueError, match="one text per pair"):
        explain(CANDS[0], GROUPS[0], MINILM, context=["a", "b"])


def test_compare_explains_its_segments_with_the_mask(capsys, tmp_path) -> None:
    """compare --html explains pairs with the metric's setting: a mask no longer stops it."""
    files = []
    for name, lines in (("a", CANDS), ("b", list(reversed(CANDS))), ("r", [g[0] for g in GROUPS])):
        files.append(tmp_path / f"{name}.txt")
        files[-1].write_text("\n".join(lines) + "\n")
    page = tmp_path / "compare.html"
    argv = ["-r", str(files[2]), "-c", str(files[0]), str(files[1]), "--ignore", "punctuation", "--html", str(page)]
    rc, _, err = run_main(capsys, "compare", "-m", MINILM, *argv)
    assert rc == 0, err
    assert "(masked)" in page.read_text()


def _shown_words(page: str) -> list[list[tuple[str, str, str]]]:
    """Each text paragraph of an HTML page: its spans' (classes, title, text) in order (tips left out)."""
    paragraphs = re.findall(r'<p class="text">(.*?)</p>', page)
    spans = r'<span class="w( [^"]*)?"(?: title="([^"]*)")?[^>]*>([^<]*)'
    return [[(c.strip(), t, w) for c, t, w in re.findall(spans, p)] for p in paragraphs]


def test_the_html_page_greys_masked_words_and_the_context_and_prompt() -> None:
    cand = "The cat , sadly , sat on the mat !"
    metric = BERTScore(MINILM, ignore="punctuation", candidate_prompt="query: ")
    why = metric.explain(cand, GROUPS[0], context="A story about a cat.")
    candidate, reference = _shown_words(render_html([why]))
    # the prompt's and the context's tokens before the candidate, greyed and titled; the context's alone before
    # the reference (the prompt is the candidate's)
    assert candidate[:2] == [
        ("out prompt", "prompt: encoded with the text, out of the matching", "query :"),
        (
            "out context",
            "context: the pair&#x27;s, encoded with the text, out of the matching",
            "a story about a cat .",
        ),
    ]
    assert reference[0][:2] == ("out context", candidate[1][1])
    words = candidate[2:]
    assert [w for _, _, w in words] == cand.split()
    for (classes, title, _), word in zip(words, why.candidate_words, strict=True):
        masked = all(why.candidate_tokens[t].role == "masked" for t in word.tokens)
        assert masked == (word.text in {",", "!"})  # the words made only of masked tokens
        if masked:
            assert classes == "out masked" and "weak" not in classes
            assert title == "ignored (ignore=punctuation): encoded with the text, out of the matching"
        else:
            assert "out" not in classes.split() and title == ""
    plain = _shown_words(render_html([BERTScore(MINILM).explain(cand, GROUPS[0])]))
    assert all("out" not in c.split() for side in plain for c, _, _ in side)  # no mask, prompt or context: none
    assert json.loads(json.dumps(why.to_json()))["ignore"] == "punctuation"
    assert "ignore" not in BERTScore(MINILM).explain(cand, GROUPS[0]).to_json()
