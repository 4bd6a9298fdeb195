"""Long texts (issue 9): `long_texts="window"` embeds a text longer than the model's window in overlapping
windows and scores every token.

The scores are checked against an independent computation of the rule, written here in a few lines of plain
torch (float64 after the model): run the Hugging Face model on each window, give each token the vector of the
window where it is farthest from an edge, match. Documents of 1,000-3,000 tokens are made of consecutive WMT
lines that no other test uses. Truncation stays the default and texts that fit score exactly as before.
"""

from __future__ import annotations

import functools
import math
import warnings
from pathlib import Path

import pytest
import torch

from bertscore_tm import BERTScore, bert_score, score
from bertscore_tm.cli import main
from bertscore_tm.embedding.rows import TokenTexts
from bertscore_tm.models.windows import SledRule, WindowRule, token_windows, window_rule, window_starts
from bertscore_tm.scoring.matching import greedy_match
from tests.conftest import MINILM
from tests.spawn import process_group, run_ranks, save_rank
from tiny_models import CORPUS, FAMILIES, build_tiny_model

TOL = 1e-5
LAYER = 5  # MiniLM's default layer


pytestmark = pytest.mark.usefixtures("one_thread")


# -- the independent computation ---------------------------------------------------------------------------


def rule_vectors(model, tokenizer, text: str, max_length: int | None, stride: int | None, layer: int | None):
    """The text's token vectors under the rule, computed directly: float64, normalised, [tokens, D].

    `layer` None: the model's last hidden state. The special tokens are found with the tokenizer's own mask.
    """
    enc = tokenizer(text.strip(), return_special_tokens_mask=True, verbose=False)
    ids, special = enc["input_ids"], enc["special_tokens_mask"]
    lead = special.index(0) if 0 in special else len(ids)
    trail = 0
    while trail < len(ids) - lead and special[len(ids) - 1 - trail]:
        trail += 1
    body = ids[lead : len(ids) - trail]
    n = len(body)

    def run(seq: list[int]) -> torch.Tensor:
        with torch.inference_mode():
            out = model(input_ids=torch.tensor([seq]), output_hidden_states=layer is not None)
        hidden = out.hidden_states[layer] if layer is not None else out[0]
        return hidden[0].double()

    w = None if max_length is None else max_length - lead - trail
    if w is None or n <= w:
        vectors = run(ids)
    else:
        s = w // 2 if stride is None else stride
        starts, a = [], 0
        while a + w < n:
            starts.append(a)
            a += s
        starts.append(n - w)
        outs = [run(ids[:lead] + body[a : a + w] + ids[len(ids) - trail :]) for a in starts]
        rows = [outs[0][:lead]]
        for i in range(n):
            best, owner = -1, None
            for j, a in enumerate(starts):
                if a <= i < a + w and min(i - a, a + w - 1 - i) > best:
                    best, owner = min(i - a, a + w - 1 - i), j
            rows.append(outs[owner][lead + i - starts[owner]][None])
        rows.append(outs[-1][lead + w :])
        vectors = torch.cat(rows)
    assert len(vectors) == len(ids)
    return ids, vectors / vectors.norm(dim=-1, keepdim=True)


def rule_scores(embed, tokenizer, cands: list[str], refs: list[list[str]], idf: bool) -> torch.Tensor:
    """[pairs, 3] P, R, F of the rule, the best reference per candidate; `embed(text)` -> (ids, vectors)."""
    flat = [r for group in refs for r in group]
    if idf:
        docs = [set(embed(r)[0]) for r in flat]
        weight = lambda t: math.log((len(flat) + 1) / (sum(t in d for d in docs) + 1))  # noqa: E731
    else:
        zero = {tokenizer.cls_token_id, tokenizer.sep_token_id}
        weight = lambda t: 0.0 if t in zero else 1.0  # noqa: E731
    out = []
    for cand, group in zip(cands, refs, strict=True):
        c_ids, c = embed(cand)
        best = torch.full((3,), -math.inf, dtype=torch.float64)
        for ref in group:
            r_ids, r = embed(ref)
            sim = c @ r.T
            wc = torch.tensor([weight(t) for t in c_ids], dtype=torch.float64)
            wr = torch.tensor([weight(t) for t in r_ids], dtype=torch.float64)
            p = (sim.max(dim=1).values * wc).sum() / wc.sum()
            r_ = (sim.max(dim=0).values * wr).sum() / wr.sum()
            best = torch.maximum(best, torch.stack((p, r_, 2 * p * r_ / (p + r_))))
        out.append(best)
    return torch.stack(out)


def as_rows(result: dict) -> torch.Tensor:
    return torch.stack([result[k].double() for k in ("precision", "recall", "f1")], dim=-1)


@pytest.fixture(scope="module")
def minilm(minilm_path):
    from transformers import AutoModel, AutoTokenizer

    model = AutoModel.from_pretrained(minilm_path).eval()
    return model, AutoTokenizer.from_pretrained(minilm_path)


@pytest.fixture(scope="module")
def minilm_rule(minilm):
    """`minilm_rule(max_length, stride)`: text -> (ids, vectors) under the rule, cached per text."""
    model, tokenizer = minilm

    @functools.cache
    def make(max_length: int, stride: int | None):
        return functools.cache(lambda text: rule_vectors(model, tokenizer, text, max_length, stride, LAYER))

    return make


# -- documents --------------------------------------------------------------------------------------------


def documents(lines: list[str], start: int, sizes: list[int], tokenizer) -> list[str]:
    """Consecutive lines from `start` joined into documents of about `sizes` tokens each."""
    docs, i = [], start
    for size in sizes:
        parts, tokens = [], 0
        while tokens < size:
            parts.append(lines[i].strip())
            tokens += len(tokenizer(lines[i].strip(), add_special_tokens=False)["input_ids"])
            i += 1
        docs.append(" ".join(parts))
    return docs


@pytest.fixture(scope="module")
def held_out(wmt, minilm):
    """Candidate and reference documents of 1,000-3,000 tokens, each candidate the translation of the same
    source lines as its reference (WMT lines 2000 on: no other test or benchmark reads them)."""
    tokenizer = minilm[1]
    sizes = [2900, 1100, 1900]
    cands = documents(wmt["hyps_long"], 2000, sizes, tokenizer)
    refs = documents(wmt["refs_long"], 2000, sizes, tokenizer)
    for doc in cands + refs:
        assert 1000 <= len(tokenizer(doc)["input_ids"]) <= 3100
    return cands, refs


@pytest.fixture(scope="module")
def small_docs(wmt, minilm):
    """Four documents of about 400 tokens, for the properties, at a window of 64 tokens (quick)."""
    tokenizer = minilm[1]
    cands = documents(wmt["hyps_long"], 2400, [400, 400], tokenizer)
    refs = documents(wmt["refs_long"], 2400, [400, 400], tokenizer)
    return cands, refs


@pytest.fixture(scope="module")
def medium_docs(small_docs):
    """Two documents of about 800 tokens: several windows at the model's own window of 512."""
    cands, refs = small_docs
    return [" ".join(cands)], [" ".join(refs)]


_metrics: dict[tuple, BERTScore] = {}


def run(cands, refs, **kwargs) -> dict:
    """Score in a fresh state with a window-mode MiniLM (loaded once per setting)."""
    kwargs.setdefault("long_texts", "window")
    key = tuple(sorted(kwargs.items()))
    if key not in _metrics:
        _metrics[key] = BERTScore(MINILM, **kwargs)
    metric = _metrics[key]
    metric.reset()
    metric.update(cands, refs)
    return metric.compute()


# -- the rule itself -------------------------------------------------------------------------------------


def test_windows_start_every_stride_and_the_last_ends_at_the_text_end():
    assert window_starts(1000, 510, 255) == [0, 255, 490]
    assert window_starts(510, 510, 255) == [0]
    assert window_starts(511, 510, 255) == [0, 1]
    assert window_starts(2000, 510, 500) == [0, 500, 1000, 1490]


@pytest.mark.parametrize(("n", "w", "s"), [(1000, 510, 255), (37, 8, 3), (40, 9, 8), (20, 7, 1), (11, 10, 9)])
def test_each_token_takes_the_window_where_it_is_farthest_from_an_edge(n, w, s):
    starts = window_starts(n, w, s)
    expected = []
    for i in range(n):
        depth = [min(i - a, a + w - 1 - i) if a <= i < a + w else -1 for a in starts]
        expected.append(depth.index(max(depth)))  # the first maximum: ties go to the earlier window
    assert token_windows(n, w, s).tolist() == expected


def test_stitching_plan_covers_every_row_once_from_an_in_window_row():
    rule = WindowRule(size=9, stride=4, lead=1, trail=2)
    length = 1 + 40 + 2
    rows = []
    for p in rule.pieces(0, length):
        window = torch.arange(length)[rule.ids(torch.arange(length), p)] if p.start is not None else None
        assert window is not None and len(window) == p.size == 12
        # the row copied out of the window holds the very token the text's row holds
        assert window[p.src : p.src + p.length].tolist() == list(range(p.dst, p.dst + p.length))
        rows.extend(range(p.dst, p.dst + p.length))
    assert rows == list(range(length))
    # a range of rows is planned as just those rows
    part = [r for p in rule.pieces(0, length, 10, 30) for r in range(p.dst, p.dst + p.length)]
    assert part == list(range(10, 30))


def test_sled_windows_give_every_row_once_from_a_window_that_holds_it():
    rule = SledRule(size=10, stride=6, lead=1, trail=1)  # a window of 12: margin 3
    length = 45
    rows = []
    for p in rule.pieces(0, length):
        window = rule.ids(torch.arange(length), p)
        assert len(window) == p.size == 12  # cut from the sequence: no special tokens of its own
        assert window[p.src : p.src + p.length].tolist() == list(range(p.dst, p.dst + p.length))
        inner = (p.dst > 0, p.dst + p.length < length)  # an inner edge keeps its margin of context
        assert p.src >= 3 * inner[0] and p.size - p.src - p.length >= 3 * inner[1]
        rows.extend(range(p.dst, p.dst + p.length))
    assert rows == list(range(length))
    assert [r for p in rule.pieces(0, length, 10, 30) for r in range(p.dst, p.dst + p.length)] == list(range(10, 30))
    assert [(p.start, p.size) for p in rule.pieces(0, 12)] == [(None, 12)]  # a sequence that fits runs whole


@pytest.mark.slow
def test_sled_cuts_a_prompt_with_the_text_so_no_prompt_is_too_long(small_docs):
    prompt = "represent this document for retrieval of similar documents please " * 30  # past half the window
    with pytest.raises(ValueError, match="may take at most half"):
        BERTScore(MINILM, long_texts="window", candidate_prompt=prompt)
    cands, refs = small_docs
    got = bert_score(cands[:1], refs[:1], MINILM, long_texts="sled", candidate_prompt=prompt)  # 700 tokens or so
    assert 0 < float(got["f1"][0]) < 1


# -- settings --------------------------------------------------------------------------------------------


def test_bad_settings_raise_before_the_model_loads(monkeypatch):
    import bertscore_tm.models.encoder

    def no_model(*args, **kwargs):
        raise AssertionError("the model was loaded before the setting was checked")

    monkeypatch.setattr(bertscore_tm.models.encoder, "load_encoder", no_model)
    with pytest.raises(ValueError, match=r"long_texts must be one of 'truncate', 'window', 'sled', got 'chunks'"):
        BERTScore(MINILM, long_texts="chunks")
    with pytest.raises(ValueError, match=r"window_stride must be an integer >= 1 or None .*got 0"):
        BERTScore(MINILM, long_texts="window", window_stride=0)
    with pytest.raises(ValueError, match=r"window_stride must be between 1 and 509 for the window of 510 tokens.*510"):
        BERTScore(MINILM, long_texts="window", window_stride=510)
    with pytest.raises(ValueError, match=r"between 1 and 61 for the window of 62 tokens \(max_length 64.*got 80"):
        BERTScore(MINILM, long_texts="window", max_length=64, window_stride=80)
    with pytest.raises(ValueError, match=r"window_stride=100 applies only to long_texts='window'"):
        BERTScore(MINILM, window_stride=100)
    with pytest.raises(TypeError, match="window_stride must be an integer"):
        BERTScore(MINILM, long_texts="window", window_stride=2.5)
    with pytest.raises(ValueError, match="windows of at least 2 tokens"):
        BERTScore(MINILM, long_texts="window", max_length=3)
    with pytest.raises(
        ValueError, match=r"window_stride=100 applies only to long_texts='window' \(long_texts is 'sled'"
    ):
        BERTScore(MINILM, long_texts="sled", window_stride=100)
    with pytest.raises(ValueError, match="long_texts='sled' needs a window of at least 4 tokens, got max_length 3"):
        BERTScore(MINILM, long_texts="sled", max_length=3)


def test_a_model_without_a_window_gets_no_windows():
    class NoWindow:  # an encoder whose tokenizer and model know no maximum length (XLNet)
        max_length = None
        num_special = 2

    assert window_rule("window", None, NoWindow()) is None
    assert window_rule("window", 7, NoWindow()) is None


@pytest.mark.slow
def test_hash_names_the_window_and_its_stride():
    truncate = BERTScore(MINILM)
    default = BERTScore(MINILM, long_texts="window")
    other = BERTScore(MINILM, long_texts="window", window_stride=100)
    assert "window" not in truncate.hash_code
    assert truncate.hash_code.endswith("(hug_trans=" + __import__("transformers").__version__ + ")_fast-tokenizer")
    assert default.hash_code == truncate.hash_code + "_long-texts=window-w510-s255"
    assert other.hash_code == truncate.hash_code + "_long-texts=window-w510-s100"
    assert len({truncate.hash_code, default.hash_code, other.hash_code}) == 3
    assert BERTScore(MINILM, long_texts="sled").hash_code == truncate.hash_code + "_long-texts=sled-w512"


# -- scores ----------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_texts_that_fit_score_exactly_as_truncation(wmt):
    for idf, mode in ((False, "window"), (True, "window"), (True, "sled")):
        window = run(wmt["hyps"], wmt["refs"], idf=idf, long_texts=mode)
        truncate = run(wmt["hyps"], wmt["refs"], idf=idf, long_texts="truncate")
        for key in ("precision", "recall", "f1"):
            assert torch.equal(window[key], truncate[key]), key


@pytest.mark.slow
@pytest.mark.parametrize("idf", [False, True], ids=["plain", "idf"])
def test_documents_equal_an_independent_computation_of_the_rule(held_out, minilm, minilm_rule, idf):
    cands, refs = held_out
    # several references for the first candidate; a short pair among the documents
    targets = [[refs[0], refs[2]], [refs[1]], [refs[2]], ["A short reference."]]
    cands = [*cands, "A short candidate."]
    ours = as_rows(run(cands, targets, idf=idf))
    expected = rule_scores(minilm_rule(512, None), minilm[1], cands, targets, idf)
    torch.testing.assert_close(ours, expected, rtol=0, atol=TOL)
    if not idf:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*truncated")
            truncated = as_rows(run(cands, targets, long_texts="truncate"))
        assert (ours[:3, 2] - truncated[:3, 2]).abs().min() > 1e-3  # the windows changed every document's score


@pytest.mark.slow
def test_a_chosen_stride_equals_the_rule_with_that_stride(small_docs, minilm, minilm_rule):
    cands, refs = small_docs
    targets = [[r] for r in refs]
    ours = as_rows(run(cands, refs, max_length=64, window_stride=13))
    expected = rule_scores(minilm_rule(64, 13), minilm[1], cands, targets, idf=False)
    torch.testing.assert_close(ours, expected, rtol=0, atol=TOL)
    assert (ours - as_rows(run(cands, refs, max_length=64))).abs().max() > 1e-4


@pytest.mark.slow
def test_a_long_text_against_itself_scores_one(small_docs):
    cands, _ = small_docs
    for idf in (False, True):
        result = run(cands, cands, max_length=64, idf=idf)
        for key in ("precision", "recall", "f1"):
            torch.testing.assert_close(result[key], torch.ones(len(cands)), rtol=0, atol=1e-6)


@pytest.mark.slow
def test_f1_is_symmetric(small_docs):
    cands, refs = small_docs
    forward, backward = run(cands, refs, max_length=64), run(refs, cands, max_length=64)
    torch.testing.assert_close(forward["f1"], backward["f1"], rtol=0, atol=1e-6)
    torch.testing.assert_close(forward["precision"], backward["recall"], rtol=0, atol=1e-6)


@pytest.mark.slow
def test_scores_do_not_depend_on_batch_size_or_the_other_texts(small_docs, wmt):
    cands, refs = small_docs
    base = run(cands, refs, max_length=64)["f1"]
    for batch_size in (1, 3):
        batched = run(cands, refs, max_length=64, batch_size=batch_size)["f1"]
        torch.testing.assert_close(batched, base, rtol=0, atol=1e-6)
    alone = torch.cat([run([c], [r], max_length=64)["f1"] for c, r in zip(cands, refs, strict=True)])
    torch.testing.assert_close(alone, base, rtol=0, atol=1e-6)
    crowd = run(wmt["hyps"][:4] + cands[::-1], wmt["refs"][:4] + refs[::-1], max_length=64)["f1"]
    torch.testing.assert_close(crowd[4:], base.flip(0), rtol=0, atol=1e-6)


@pytest.mark.slow
def test_forward_and_several_updates(small_docs):
    cands, refs = small_docs
    metric = BERTScore(MINILM, long_texts="window", max_length=64)
    batch = metric(cands[:1], refs[:1])
    metric.update(cands[1:], refs[1:])
    metric.update(refs[:1], cands[:1])
    result = metric.compute()
    expected = run(cands + refs[:1], refs + cands[:1], max_length=64)
    for key in ("precision", "recall", "f1"):
        torch.testing.assert_close(batch[key], expected[key][:1], rtol=0, atol=1e-6)
        torch.testing.assert_close(result[key], expected[key], rtol=0, atol=1e-6)


def test_the_state_holds_every_token_and_no_truncation_is_reported(small_docs, minilm):
    cands, refs = small_docs
    metric = BERTScore(MINILM, long_texts="window", max_length=64)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any warning fails
        metric.update(cands, refs)
    full = [len(minilm[1](c.strip(), verbose=False)["input_ids"]) for c in cands]
    assert torch.cat(metric.cand_lens).tolist() == full and min(full) > 64
    assert metric.cand_ids[0].dtype == torch.int32 and len(metric.cand_ids[0]) == sum(full)
    with pytest.warns(UserWarning, match="truncated"):
        BERTScore(MINILM, max_length=64).update(cands, refs)


def test_blank_text_scores_zero_with_the_usual_warning(small_docs):
    cands, refs = small_docs
    with pytest.warns(UserWarning, match="blank"):
        result = run([cands[0], "  "], ["", refs[1]], max_length=64)
    assert result["f1"].tolist() == [0.0, 0.0]


@pytest.mark.slow
def test_all_layers_rescaling_and_functional_twins(small_docs, medium_docs):
    cands, refs = small_docs
    layers = bert_score(cands, refs, MINILM, long_texts="window", max_length=64, all_layers=True)
    assert layers["f1"].shape == (7, 2)
    torch.testing.assert_close(layers["f1"][LAYER], run(cands, refs, max_length=64)["f1"], rtol=0, atol=1e-6)
    rescaled = bert_score(cands, refs, MINILM, long_texts="window", max_length=64, rescale_with_baseline=True)
    assert not torch.allclose(rescaled["f1"], layers["f1"][LAYER])
    cands, refs = medium_docs
    (_p, _r, f), code = score(
        cands,
        refs,
        model_type=MINILM,
        long_texts="window",
        window_stride=200,
        return_hash=True,
        use_fast_tokenizer=True,
    )
    assert code.endswith("_fast-tokenizer_long-texts=window-w510-s200")
    torch.testing.assert_close(f, run(cands, refs, window_stride=200)["f1"], rtol=0, atol=1e-6)
    assert (f - run(cands, refs)["f1"]).abs().max() > 1e-5  # the stride matters at this length


# -- memory: long pairs are streamed and tiled in the same budget --------------------------------------------


@pytest.mark.slow
def test_a_pair_larger_than_the_table_is_streamed_through_it(held_out, small_docs, wmt, monkeypatch):
    """With a table of 512 rows, pairs of documents of 400-1,100 tokens are streamed through it: the shorter
    text kept in the table where it leaves room, else both in chunks. The table is never larger, and the
    scores are those of one table holding both texts."""
    cands = [held_out[0][1], small_docs[0][0], held_out[0][1]]
    refs = [held_out[1][1], held_out[1][1], " ".join(wmt["hyps_long"][2600:2605])]  # the last: 150 tokens
    expected = run(cands, refs, max_length=64)
    metric = BERTScore(MINILM, long_texts="window", max_length=64)
    metric.update(cands, refs)
    embedder = metric.embedder
    tables = []
    new_table = embedder.new_table
    monkeypatch.setattr(embedder, "new_table", lambda rows: tables.append(rows) or new_table(rows))
    monkeypatch.setattr(type(embedder), "block_bytes", property(lambda self: 1 << 16))
    embedder.max_tokens = 256  # the smallest block is two forward batches: 512 rows
    streamed = metric.compute()
    assert tables == [513]  # 512 rows and the padding row
    for key in ("precision", "recall", "f1"):
        torch.testing.assert_close(streamed[key], expected[key], rtol=0, atol=1e-6)


@pytest.mark.slow
def test_a_similarity_matrix_past_the_budget_is_matched_in_tiles(small_docs):
    """Tiles give the maximum of the same dot products: the same best similarities, bit for bit."""
    (c0, c1), (r0, _) = small_docs
    metric = BERTScore(MINILM, long_texts="window", max_length=64)
    ids = [metric.token_ids(t) for t in (c0, c1, r0)]
    texts = TokenTexts(
        sources=tuple(ids),
        which=torch.arange(3, dtype=torch.uint8),
        start=torch.zeros(3, dtype=torch.long),
        length=torch.tensor([len(x) for x in ids], dtype=torch.int32),
    )
    mc, mr = torch.tensor([0, 0, 1, 2], dtype=torch.int32), torch.tensor([2, 1, 2, 2], dtype=torch.int32)
    whole = greedy_match(metric.embedder, texts, mc, mr)  # 400 x 400 similarities at once: in the budget
    tiled = greedy_match(metric.embedder, texts, mc, mr, gather_budget=10_000)
    for a, b in zip(whole, tiled, strict=True):
        assert torch.equal(a, b)


# -- every architecture ---------------------------------------------------------------------------------


FAMILY_TEXTS = [" ".join(CORPUS[:6]), " ".join(CORPUS[6:11]), "The cat sat on the mat."]
FAMILY_REFS = [" ".join(CORPUS[3:9]), " ".join(CORPUS[12:16]), " ".join(CORPUS[20:24])]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny-windows")
    return functools.cache(lambda family: build_tiny_model(family, root))


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_every_architecture_at_a_window_that_forces_several(tiny, family):
    from transformers import AutoModel, AutoTokenizer

    from bertscore_tm.models.tokenizing import uses_prefix_space

    if family == "xlm":
        pytest.importorskip("sacremoses")
    model_dir = tiny(family)
    depth = FAMILIES[family].depth
    metric = BERTScore(model_dir, num_layers=depth, long_texts="window", max_length=16)
    metric.update(FAMILY_TEXTS, FAMILY_REFS)
    ours = as_rows(metric.compute())

    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    if uses_prefix_space(tokenizer):
        tokenizer = AutoTokenizer.from_pretrained(str(model_dir), add_prefix_space=True)
    model = AutoModel.from_pretrained(str(model_dir)).eval()
    if FAMILIES[family].encoder_decoder:
        model = model.get_encoder()
    embed = functools.cache(lambda text: rule_vectors(model, tokenizer, text, 16, None, None))
    lengths = [len(embed(t)[0]) for t in FAMILY_TEXTS + FAMILY_REFS]
    assert max(lengths) > 3 * 16, lengths  # several windows
    expected = rule_scores(embed, tokenizer, FAMILY_TEXTS, [[r] for r in FAMILY_REFS], idf=False)
    torch.testing.assert_close(ours, expected, rtol=0, atol=TOL)


def build_tiny_modernbert(root: Path) -> Path:
    """A tiny random ModernBERT (a long-context encoder: 8,192 positions) with a WordPiece tokenizer that
    knows no maximum length, so the window comes from the model's position limit."""
    from transformers import AutoModel, ModernBertConfig

    from tiny_models import _bert_tokenizer

    out = root / "tiny-modernbert"
    out.mkdir()
    tokenizer = _bert_tokenizer("BertTokenizer")(out)
    tokenizer.model_max_length = int(1e30)
    tokenizer.save_pretrained(str(out))
    cls, sep = tokenizer.cls_token_id, tokenizer.sep_token_id
    ids = dict(
        pad_token_id=tokenizer.pad_token_id, cls_token_id=cls, sep_token_id=sep, bos_token_id=cls, eos_token_id=sep
    )
    config = ModernBertConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=37,
        num_hidden_layers=2,
        num_attention_heads=2,
        max_position_embeddings=8192,
        **ids,
    )
    torch.manual_seed(0)
    AutoModel.from_config(config).save_pretrained(str(out))
    return out


def test_a_long_context_encoder_uses_its_own_window(tmp_path):
    transformers = pytest.importorskip("transformers")
    if not hasattr(transformers, "ModernBertModel"):
        pytest.skip("this transformers has no ModernBERT")
    from transformers import AutoModel, AutoTokenizer

    model_dir = build_tiny_modernbert(tmp_path)
    own = BERTScore(model_dir, num_layers=2, long_texts="window")
    assert (own.windows.size, own.windows.stride) == (8190, 4095)
    assert own.hash_code.endswith("_fast-tokenizer_long-texts=window-w8190-s4095")
    metric = BERTScore(model_dir, num_layers=2, long_texts="window", max_length=16)
    metric.update(FAMILY_TEXTS, FAMILY_REFS)
    model, tokenizer = AutoModel.from_pretrained(str(model_dir)).eval(), AutoTokenizer.from_pretrained(str(model_dir))
    embed = functools.cache(lambda text: rule_vectors(model, tokenizer, text, 16, None, None))
    expected = rule_scores(embed, tokenizer, FAMILY_TEXTS, [[r] for r in FAMILY_REFS], idf=False)
    torch.testing.assert_close(as_rows(metric.compute()), expected, rtol=0, atol=TOL)


# -- the command line ------------------------------------------------------------------------------------


@pytest.mark.slow
def test_command_line_scores_with_windows(tmp_path, medium_docs, capsys):
    cands, refs = medium_docs
    (tmp_path / "c.txt").write_text("\n".join(cands) + "\n")
    (tmp_path / "r.txt").write_text("\n".join(refs) + "\n")
    args = ["score", "-c", str(tmp_path / "c.txt"), "-r", str(tmp_path / "r.txt"), "-m", MINILM, "--format", "tsv"]
    args.append("-s")
    assert main([*args, "--long-texts", "window", "--window-stride", "200"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if not line.startswith("#")][1:]
    f1 = torch.tensor([float(line.split("\t")[3]) for line in lines])
    torch.testing.assert_close(f1, run(cands, refs, window_stride=200)["f1"], rtol=0, atol=1e-6)

    assert main([*args, "--window-stride", "200"]) == 2
    assert "--window-stride 200 needs --long-texts window" in capsys.readouterr().err
    assert main([*args, "--long-texts", "window", "--window-stride", "600"]) == 2
    err = capsys.readouterr().err
    assert "window_stride must be between 1 and 509" in err and "--window-stride" in err


@pytest.mark.slow
def test_show_and_baseline_take_the_long_text_options(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    assert (
        main(
            [
                "show",
                "-m",
                MINILM,
                "-c",
                "The cat sat.",
                "-r",
                "A cat sat.",
                "-f",
                str(tmp_path / "s.png"),
                "--long-texts",
                "window",
                "--window-stride",
                "9",
            ]
        )
        == 0
    )
    assert "_fast-tokenizer_long-texts=window-w510-s9 P:" in capsys.readouterr().out
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(f"Sentence number {i} is about the weather." for i in range(8)) + "\n")
    files = []
    for mode in ("truncate", "window"):
        out = tmp_path / f"{mode}.tsv"
        assert (
            main(
                [
                    "baseline",
                    "--corpus",
                    str(corpus),
                    "-m",
                    MINILM,
                    "--pairs",
                    "2",
                    "-o",
                    str(out),
                    "--long-texts",
                    mode,
                ]
            )
            == 0
        )
        files.append(out.read_text())
    assert files[0] == files[1]  # short lines fit the window: the same baseline


# -- distributed ----------------------------------------------------------------------------------------


def _ddp_worker(rank: int, port: int, cands: list[str], refs: list[str], out_dir: str) -> None:
    with process_group(rank, port, world=2):
        metric = BERTScore(MINILM, long_texts="window", max_length=64, idf=True)
        metric.update(cands[rank::2], refs[rank::2])
        result = metric.compute()
        save_rank(out_dir, rank, {k: v for k, v in result.items() if isinstance(v, torch.Tensor)})


@pytest.mark.slow
def test_distributed_ranks_score_their_windows_and_agree_with_one_process(small_docs):
    cands, refs = small_docs
    cands, refs = [*cands, refs[0]], [*refs, cands[1]]
    ranks = run_ranks(_ddp_worker, cands, refs, world=2)
    order = [0, 2, 1]  # rank-major: rank 0 holds pairs 0 and 2, rank 1 pair 1
    expected = run([cands[i] for i in order], [refs[i] for i in order], max_length=64, idf=True)
    for key in ("precision", "recall", "f1"):
        assert torch.equal(ranks[0][key], ranks[1][key])
        torch.testing.assert_close(ranks[0][key], expected[key], rtol=0, atol=TOL)
