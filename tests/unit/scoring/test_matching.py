"""The streaming machinery under compute(): token-budget batches, blockwise greedy matching whose results
do not depend on the block size, each distinct text embedded once even when blocks share it, and a
working memory (table + plan + results) that stays within its budget however many pairs are scored."""

from __future__ import annotations

import pytest
import torch

from bertscore_tm import BERTScore
from bertscore_tm.embedding import embedder as embedding_module
from bertscore_tm.embedding.batches import length_batches
from bertscore_tm.embedding.rows import TokenTexts
from bertscore_tm.scoring.matching import greedy_match
from tests.conftest import MINILM


@pytest.fixture(scope="module")
def metric() -> BERTScore:
    return BERTScore(MINILM)


@pytest.fixture
def small_batches(metric, monkeypatch):
    """Forward batches of 128 tokens, so that blocks may be as small as 512 tokens (two batches at least
    otherwise): many blocks from a few dozen sentences."""
    monkeypatch.setattr(metric.embedder, "_max_tokens", 128)


def token_texts(metric: BERTScore, sentences: list[str]) -> TokenTexts:
    ids = [metric.token_ids(s) for s in sentences]
    lengths = torch.tensor([len(x) for x in ids], dtype=torch.int32)
    return TokenTexts(
        sources=(torch.cat(ids),),
        which=torch.zeros(len(ids), dtype=torch.uint8),
        start=torch.cumsum(lengths.long(), 0) - lengths.long(),
        length=lengths,
    )


@pytest.fixture(scope="module")
def shared_texts(metric, wmt):
    """Long and short WMT sentences where one short reference is matched by candidates of every length,
    so that length-ordered blocks all need it."""
    sentences = list(dict.fromkeys(wmt["hyps_long"][:60] + wmt["refs_long"][:60]))
    texts = token_texts(metric, sentences)
    n = len(sentences)
    cands = list(range(n)) + list(range(0, n, 3))
    refs = [(i + 1) % n for i in range(n)] + [0] * len(range(0, n, 3))
    return texts, torch.tensor(cands, dtype=torch.int32), torch.tensor(refs, dtype=torch.int32)


def test_length_batches_respect_the_token_budget_and_take_every_text_once():
    lengths = [int(x) for x in torch.randint(1, 300, (500,), generator=torch.Generator().manual_seed(0))]
    seen = []
    for batch in length_batches(lengths, batch_size=None, max_tokens=2048):
        longest = max(lengths[i] for i in batch)
        assert lengths[batch[0]] == longest  # longest first: the padded width is known when the batch starts
        if len(batch) > 1:
            assert len(batch) * longest <= 2048
            assert len(batch) * longest * longest <= 2048 * 32
        seen += batch
    assert sorted(seen) == list(range(500))


def test_length_batches_honour_a_count_cap():
    assert all(len(b) <= 7 for b in length_batches([5] * 100, batch_size=7, max_tokens=2048))
    # without a cap, short texts fill the token budget
    assert max(len(b) for b in length_batches([16] * 300, batch_size=None, max_tokens=2048)) == 128


@pytest.mark.slow
def test_small_blocks_give_the_same_best_similarities_as_one_block(metric, shared_texts, small_batches):
    texts, cands, refs = shared_texts
    embedder = metric.embedder
    one_c, one_r = greedy_match(embedder, texts, cands, refs, block_bytes=1 << 30)
    before = embedder.rows_embedded
    # blocks of 512 tokens: dozens of them, the shared reference kept across them
    many_c, many_r = greedy_match(embedder, texts, cands, refs, block_bytes=1 << 17)
    assert embedder.rows_embedded - before == len(texts)  # each distinct text once, however many blocks
    # equal up to the float noise of different batch shapes
    assert torch.allclose(many_c, one_c, atol=1e-6)
    assert torch.allclose(many_r, one_r, atol=1e-6)


@pytest.mark.slow
def test_a_text_shared_across_blocks_is_matched_with_its_own_vectors(metric, shared_texts, small_batches):
    texts, cands, refs = shared_texts
    best_c, _ = greedy_match(metric.embedder, texts, cands, refs, block_bytes=1 << 17)
    vectors, starts = metric.embedder.embed([texts[0], texts[6]])
    # match (6 -> 0) is among the ones that share reference 0; recompute it directly
    sim = vectors[starts[1] : starts[1] + len(texts[6])] @ vectors[: len(texts[0])].T
    lengths = texts.length[cands].long()
    m = int(torch.nonzero((cands == 6) & (refs == 0))[0])
    row = int(lengths[:m].sum())
    assert torch.allclose(best_c[row : row + len(texts[6]), 0], sim.max(dim=1).values, atol=1e-6)


@pytest.mark.slow
def test_working_memory_stays_within_its_budget_whatever_the_number_of_pairs(metric, wmt, monkeypatch, small_batches):
    embedder = metric.embedder
    budget = 4 << 20
    tables = []
    new_table = embedder.new_table

    def recording_new_table(rows):
        tables.append(rows)
        return new_table(rows)

    monkeypatch.setattr(embedder, "new_table", recording_new_table)
    row_bytes = 4 * embedder.hidden_size
    held = []
    for n in (100, 400):
        sentences = wmt["hyps_long"][:n] + wmt["refs_long"][:n]
        texts = token_texts(metric, sentences)
        cands = torch.arange(n, dtype=torch.int32)
        refs = torch.arange(n, 2 * n, dtype=torch.int32)
        best_c, best_r = greedy_match(embedder, texts, cands, refs, block_bytes=budget)
        plan = sum(t.numel() * t.element_size() for t in (texts.which, texts.start, texts.length, cands, refs))
        results = (best_c.numel() + best_r.numel()) * 4
        table = tables[-1] * row_bytes
        held.append(table + results + plan)
        assert table + results + plan <= budget + row_bytes
    assert tables[1] < tables[0]  # the table gives way to the larger plan and results
    # what the two runs hold besides their own ids differs by less than a plan's worth (int64 orders, counts)
    assert abs(held[1] - held[0]) <= 64 * 400


@pytest.mark.slow
@pytest.mark.parametrize("all_layers", [False, True])
def test_batches_of_texts_laid_out_longest_first_are_normalised_straight_into_the_table(wmt, all_layers, monkeypatch):
    """Texts passed longest first fill the table batch by batch, with no copy of a batch's output, and get
    the very bits that copying each text's rows in gives."""
    metric = BERTScore(MINILM, all_layers=all_layers)
    longest_first = sorted((metric.token_ids(line) for line in wmt["hyps_long"][:120]), key=len, reverse=True)
    views = []
    real = embedding_module.table_rows_of
    monkeypatch.setattr(embedding_module, "table_rows_of", lambda *args: views.append(real(*args)) or views[-1])
    direct, starts = metric.embedder.embed(longest_first)
    assert any(len(v) > 1 for v in views) and all(view is not None for view in views)
    monkeypatch.setattr(embedding_module, "table_rows_of", lambda *args: None)  # every batch copied in
    copied, copied_starts = metric.embedder.embed(longest_first)
    assert torch.equal(starts, copied_starts) and torch.equal(direct, copied)


def test_embed_into_refuses_a_table_too_small(metric):
    table = metric.embedder.new_table(3)
    with pytest.raises(ValueError, match="table has 3 rows"):
        metric.embedder.embed_into(table, [metric.token_ids("a sentence longer than three tokens")])


@pytest.mark.slow
def test_a_block_always_holds_two_full_forward_batches(metric, wmt, monkeypatch):
    """However little of the budget the results leave, the table keeps room for two batches of the token
    budget: squeezing it further would shrink the forward batches, and the speed, with it."""
    embedder = metric.embedder
    tables = []
    new_table = embedder.new_table
    monkeypatch.setattr(embedder, "new_table", lambda rows: tables.append(rows) or new_table(rows))
    texts = token_texts(metric, wmt["hyps_long"][:300] + wmt["refs_long"][:300])
    cands, refs = torch.arange(300, dtype=torch.int32), torch.arange(300, 600, dtype=torch.int32)
    greedy_match(embedder, texts, cands, refs, block_bytes=1 << 20)  # less than the results alone
    assert tables[-1] == 2 * embedder.max_tokens + 1  # and the padding row


def test_the_plan_is_pure_and_covers_every_match_once(metric, wmt):
    """Planning needs no model: blocks are contiguous runs of the length order, each holds at most the table's
    rows of distinct text (or one match alone), and a text's last use is the last block that needs it."""
    from bertscore_tm.scoring.matching import plan_matches

    texts = token_texts(metric, wmt["hyps_long"][:80] + wmt["refs_long"][:80])
    cands = torch.tensor(list(range(80)) + [0] * 20, dtype=torch.int32)
    refs = torch.tensor(list(range(80, 160)) + list(range(100, 120)), dtype=torch.int32)
    plan = plan_matches(
        texts, cands, refs, rows=1, row_bytes=4 * 384, budget_bytes=1 << 19, min_block_tokens=256, plan_in_budget=True
    )
    assert sorted(plan.order.tolist()) == list(range(100))
    assert plan.blocks[0][0] == 0 and plan.blocks[-1][1] == 100 and len(plan.blocks) > 3
    assert all(a[1] == b[0] for a, b in zip(plan.blocks, plan.blocks[1:], strict=False))
    lengths = texts.length.tolist()
    last = {}
    for b, (lo, hi) in enumerate(plan.blocks):
        sel = plan.order[lo:hi]
        distinct = set(cands[sel].tolist()) | set(refs[sel].tolist())
        assert sum(lengths[t] for t in distinct) <= plan.capacity or hi - lo == 1
        for t in distinct:
            last[t] = b
    assert all(int(plan.last_use[t]) == b for t, b in last.items())
    assert int(plan.cand_lengths.sum()) == int(texts.length[cands].sum())
    assert int(plan.ref_lengths.sum()) == int(texts.length[refs].sum())


@pytest.mark.parametrize("seed", range(4))
def test_blocks_are_the_longest_runs_of_matches_whose_distinct_texts_fit(seed: int) -> None:
    """`_blocks`' cut, checked against its definition: consecutive runs covering every match, each holding at
    most `block_tokens` tokens of distinct texts (or one match), and none able to take the next match too."""
    import random

    from bertscore_tm.scoring.matching import _blocks

    rng = random.Random(seed)
    lengths = [rng.randrange(1, 40) for _ in range(60)]
    cands = [rng.randrange(60) for _ in range(500)]
    refs = [c if rng.random() < 0.1 else rng.randrange(60) for c in cands]  # a text matched with itself too
    budget = rng.choice([30, 100, 400])
    blocks, sizes = _blocks(cands, refs, lengths, budget)

    def tokens(lo: int, hi: int) -> int:
        return sum(lengths[t] for t in {*cands[lo:hi], *refs[lo:hi]})

    assert [lo for lo, _ in blocks] == [0, *(hi for _, hi in blocks[:-1])] and blocks[-1][1] == len(cands)
    assert sizes == [tokens(lo, hi) for lo, hi in blocks]
    assert all(size <= budget or hi - lo == 1 for (lo, hi), size in zip(blocks, sizes, strict=True))
    assert all(tokens(lo, hi + 1) > budget for lo, hi in blocks[:-1])


def test_a_token_with_an_empty_side_to_match_gets_zero_and_the_others_their_best(metric, wmt):
    """A text of no tokens (a model that adds no special tokens, an empty text): the other side's tokens have
    nothing to match and keep 0, never -inf, in a matching batch that also holds ordinary matches; those get
    the plain maximum of their similarities (checked against float64 products of their vectors)."""
    empty = torch.zeros(0, dtype=torch.long)
    sentences = wmt["hyps"][:6]
    ids = [metric.token_ids(s).long() for s in sentences]
    ids.insert(2, empty)
    lengths = torch.tensor([len(x) for x in ids], dtype=torch.int32)
    texts = TokenTexts(
        (torch.cat(ids),),
        torch.zeros(len(ids), dtype=torch.uint8),
        torch.cumsum(lengths.long(), 0) - lengths.long(),
        lengths,
    )
    cands = torch.tensor([2, 0, 3, 4], dtype=torch.int32)  # the empty text against text 1, then ordinary matches
    refs = torch.tensor([1, 2, 5, 6], dtype=torch.int32)  # and text 0 against the empty one
    best_c, best_r = greedy_match(metric.embedder, texts, cands, refs)
    n1, n0 = len(ids[1]), len(ids[0])
    assert torch.equal(best_r[:n1], torch.zeros(n1, 1)) and torch.equal(best_c[:n0], torch.zeros(n0, 1))
    vectors, _ = metric.embedder.embed([ids[k] for k in (3, 5)])
    c, r = vectors[: len(ids[3])].double(), vectors[len(ids[3]) :].double()
    torch.testing.assert_close(
        best_c[n0 : n0 + len(ids[3]), 0].double(), (c @ r.T).max(dim=1).values, atol=1e-6, rtol=0
    )
