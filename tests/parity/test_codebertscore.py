"""Parity with CodeBERTScore (`code-bert-score` 0.4.1, its `score` run unpadded with batch_size=1) on real code:
functions of Python's standard library against other functions of it, on a small RoBERTa with a byte-level BPE
tokenizer trained on those sources (tests/code_models.py). Its ``no_punc`` is ``ignore="punctuation"``, its F3
``beta=3``; P, R, F1 and F3 agree to 1e-6 with and without IDF, and on code longer than the window (which
code-bert-score embeds in SLED's windows) with ``long_texts="sled"``."""

from __future__ import annotations

import contextlib
import io
import json
import warnings
from pathlib import Path

import pytest
import torch

from bertscore_tm import bert_score
from tests.code_models import build_code_roberta, stdlib_functions

pytestmark = pytest.mark.usefixtures("one_thread")

LAYER = 3
TOL = 1e-6


@pytest.fixture(scope="module")
def code_model(tmp_path_factory) -> str:
    return str(build_code_roberta(tmp_path_factory.mktemp("code")))


@pytest.fixture(scope="module")
def code_pairs() -> tuple[list[str], list[str], list[str]]:
    """Candidates, references and the references' docstrings: function i against function i + 1."""
    functions = stdlib_functions()[:16]
    cands = [code for _, code in functions[0::2]]
    refs = [code for _, code in functions[1::2]]
    sources = [doc for doc, _ in functions[1::2]]
    return cands, refs, sources


def _reference(model: str, cands, refs, **kwargs) -> torch.Tensor:
    import code_bert_score

    with (
        warnings.catch_warnings(),
        contextlib.redirect_stderr(io.StringIO()),
        contextlib.redirect_stdout(io.StringIO()),
    ):
        warnings.simplefilter("ignore")
        out = code_bert_score.score(
            cands, refs, model_type=model, num_layers=LAYER, batch_size=1, device="cpu", nthreads=1, **kwargs
        )
    return torch.stack(out)


@pytest.mark.parametrize("idf", [False, True], ids=["plain", "idf"])
@pytest.mark.parametrize("no_punc", [True, False], ids=["no_punc", "every-token"])
@pytest.mark.parametrize(
    ("model", "long_texts"), [("code_model", "truncate"), ("short_window_model", "sled")], ids=["fits", "long-sled"]
)
def test_scores_equal_code_bert_score(request, code_pairs, model, long_texts, no_punc, idf):
    """Functions that fit the window, and (a window of 64) long code in SLED's windows, as code-bert-score
    embeds it whatever its length."""
    cands, refs, _ = code_pairs
    model = request.getfixturevalue(model)
    expected = _reference(model, cands, refs, no_punc=no_punc, idf=idf)
    ignore = "punctuation" if no_punc else None
    got = bert_score(cands, refs, model, num_layers=LAYER, idf=idf, beta=3, ignore=ignore, long_texts=long_texts)
    ours = torch.stack([got[k] for k in ("precision", "recall", "f1", "f_beta")])
    torch.testing.assert_close(ours.double(), expected.double(), rtol=0, atol=TOL)


def test_the_mask_changes_the_scores(code_model, code_pairs):
    """The test above would pass with a mask that did nothing if no_punc changed nothing on this data."""
    cands, refs, _ = code_pairs
    masked = bert_score(cands, refs, code_model, num_layers=LAYER, ignore="punctuation")["f1"]
    plain = bert_score(cands, refs, code_model, num_layers=LAYER)["f1"]
    assert float((masked - plain).abs().min()) > 1e-3


@pytest.mark.parametrize("lang", ["python", "java", "javascript", "js", "c", "cpp", "c++"])
def test_code_languages_pick_code_bert_scores_models_and_layers(lang):
    from code_bert_score.utils import lang2model, model2layers

    from bertscore_tm.models.registry import default_model, default_num_layers

    assert default_model(lang) == lang2model[lang]
    assert default_num_layers(default_model(lang)) == model2layers[lang2model[lang]]
    assert default_num_layers("microsoft/codebert-base-mlm") == model2layers["microsoft/codebert-base-mlm"]


def test_code_bert_score_keeps_the_source_in_the_matching_under_the_prefix_space(code_model, code_pairs):
    """The documented difference (docs/semantics.md, "Context"): on a tokenizer that adds the prefix space, as
    bertscore-tm tokenises, code-bert-score's source trim finds no source token (its decoded prefix starts with a
    space), so its scores with `sources` are those of source + code scored whole, the source matched too; ours
    leave the source out, as its trim means to."""
    cands, refs, sources = (x[:3] for x in code_pairs)
    with_sources = _reference(code_model, cands, refs, no_punc=False, sources=sources)
    joined = _reference(
        code_model,
        [f"{s} \n{c}" for s, c in zip(sources, cands, strict=True)],
        [f"{s} \n{r}" for s, r in zip(sources, refs, strict=True)],
        no_punc=False,
    )
    torch.testing.assert_close(with_sources, joined, rtol=0, atol=TOL)
    ours = bert_score(cands, refs, code_model, num_layers=LAYER, context=sources)["f1"]
    assert float((ours - with_sources[2].float()).abs().min()) > 1e-3


# -- code-bert-score's own tokenisation: a tokenizer saved as the neulab models' are, without the prefix space ----


@pytest.fixture(scope="module")
def neulab_like_model(tmp_path_factory) -> str:
    return str(build_code_roberta(tmp_path_factory.mktemp("neulab"), prefix_space=False))


@pytest.mark.parametrize("with_sources", [False, True], ids=["code", "sources"])
@pytest.mark.parametrize("no_punc", [True, False], ids=["no_punc", "every-token"])
def test_prefix_space_false_is_code_bert_scores_tokenisation(neulab_like_model, code_pairs, no_punc, with_sources):
    """CodeBERTScore's published figures: code-bert-score tokenises the neulab models as their files say (no
    prefix space) and trims each source from the joined text by its decoded prefix; `prefix_space=False` with
    `context=` gives the same P, R, F1 and F3, and the hash code says so."""
    from tokenizers import Tokenizer

    assert not json.loads(Path(neulab_like_model, "tokenizer.json").read_text())["pre_tokenizer"]["add_prefix_space"]
    cands, refs, sources = code_pairs
    extra = {"sources": sources} if with_sources else {}
    expected = _reference(neulab_like_model, cands, refs, no_punc=no_punc, **extra)
    ignore = "punctuation" if no_punc else None
    context = sources if with_sources else None
    got = bert_score(
        cands,
        refs,
        neulab_like_model,
        num_layers=LAYER,
        beta=3,
        ignore=ignore,
        context=context,
        prefix_space=False,
        return_hash=True,
    )
    ours = torch.stack([got[k] for k in ("precision", "recall", "f1", "f_beta")])
    torch.testing.assert_close(ours.double(), expected.double(), rtol=0, atol=TOL)
    assert got["hash"].endswith("_no-prefix-space")
    # the default, bert-score's prefix space, tokenises otherwise on this tokenizer: the test above can fail
    spaced = bert_score(cands, refs, neulab_like_model, num_layers=LAYER, beta=3, ignore=ignore, context=context)
    assert float((spaced["f1"] - got["f1"]).abs().max()) > 1e-3
    saved = Tokenizer.from_file(str(Path(neulab_like_model, "tokenizer.json")))
    assert saved.encode("def f").tokens[:2] == ["<s>", "def"]


# -- code longer than the window: code-bert-score never truncates, it embeds in SLED's windows ---------------------

SHORT_WINDOW = 64  # ordinary functions of the standard library run 100-300 tokens: three to nine windows


def test_sled_windows_are_code_bert_scores_for_every_length():
    from code_bert_score.utils import get_window_indices

    from bertscore_tm.models.windows import sled_windows

    for window in range(4, 70):
        for n in range(window + 1, 4 * window):
            theirs = get_window_indices(n, window, 0.5)  # (start, end, first given, one past the last), relative
            ours = [(a, min(a + window, n), b - a, c - a) for a, b, c in sled_windows(n, window)]
            assert ours == theirs, (window, n)


@pytest.fixture(scope="module")
def short_window_model(tmp_path_factory) -> str:
    return str(build_code_roberta(tmp_path_factory.mktemp("code64"), window=SHORT_WINDOW))


def test_the_long_code_is_long(short_window_model, code_pairs):
    """The SLED parity above would pass on texts that fit: truncating these scores otherwise."""
    cands, refs, _ = code_pairs
    sled = bert_score(cands, refs, short_window_model, num_layers=LAYER, long_texts="sled")["f1"]
    with pytest.warns(UserWarning, match="longer than the model's window"):
        cut = bert_score(cands, refs, short_window_model, num_layers=LAYER)["f1"]
    assert float((cut - sled).abs().max()) > 1e-2


def _sled_vectors(model_dir: str, head: str, code: str) -> torch.Tensor:
    """float64 vectors (layer `LAYER`, normalised) of `code`'s own rows (BOS, the code's tokens, EOS) when `head`
    is encoded before it, the sequence embedded in the windows code-bert-score cuts (its own
    `get_window_indices`), each row from the window that gives it, the head's rows then dropped."""
    from code_bert_score.utils import get_window_indices
    from transformers import AutoModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    encoder = AutoModel.from_pretrained(model_dir).double().eval()
    ids = tokenizer(head + code)["input_ids"]
    n_head = len(tokenizer(head, add_special_tokens=False)["input_ids"])
    assert ids[1 : 1 + n_head] == tokenizer(head, add_special_tokens=False)["input_ids"]  # the head splits off
    rows = []
    with torch.no_grad():
        for start, end, own, own_end in get_window_indices(len(ids), SHORT_WINDOW, 0.5):
            out = encoder(torch.tensor([ids[start:end]]), output_hidden_states=True).hidden_states[LAYER][0]
            rows.append(out[own:own_end])
    states = torch.cat(rows)
    states = states[[0, *range(1 + n_head, len(ids))]]
    return states / states.norm(dim=-1, keepdim=True)


def test_sled_windows_cut_a_context_with_the_code_as_a_float64_computation_does(short_window_model, code_pairs):
    cands, refs, sources = (x[:3] for x in code_pairs)
    got = bert_score(cands, refs, short_window_model, num_layers=LAYER, context=sources, long_texts="sled")
    for k, (cand, ref, source) in enumerate(zip(cands, refs, sources, strict=True)):
        head = f"{source.strip()} \n"
        c, r = _sled_vectors(short_window_model, head, cand), _sled_vectors(short_window_model, head, ref)
        sim = c @ r.T
        p, rec = sim.max(dim=1).values[1:-1].mean(), sim.max(dim=0).values[1:-1].mean()  # BOS, EOS weigh 0
        assert float(got["precision"][k]) == pytest.approx(float(p), abs=TOL)
        assert float(got["recall"][k]) == pytest.approx(float(rec), abs=TOL)
