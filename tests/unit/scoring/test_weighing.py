"""compute() weighs the pairs' per-token best similarities a chunk of pairs at a time, so that its float64
sums and weight gathers stay within the working budget however many pairs there are; the chunks change
nothing in the scores."""

from __future__ import annotations

import itertools

import pytest
import torch

import bertscore_tm.engines.paired
from bertscore_tm import BERTScore
from bertscore_tm.engines.paired import pair_chunks
from tests.conftest import MINILM


def test_chunks_cover_every_pair_once_in_order_within_the_budget():
    cost = torch.randint(1, 50, (1000,), generator=torch.Generator().manual_seed(0))
    chunks = pair_chunks(cost, budget=120)
    assert chunks[0][0] == 0 and chunks[-1][1] == 1000
    assert all(a[1] == b[0] for a, b in itertools.pairwise(chunks))
    assert all(int(cost[lo:hi].sum()) <= 120 for lo, hi in chunks)


@pytest.mark.slow
def test_scores_are_the_same_in_chunks_of_one_pair(wmt, monkeypatch):
    metric = BERTScore(MINILM, idf=True)
    cands = wmt["hyps"] + wmt["hyps_long"][:12] + [" "]  # a blank candidate too
    pairs = [[a, b] for a, b in zip(wmt["refs"], wmt["refs2"], strict=True)]
    targets = pairs + [[r] for r in wmt["refs_long"][:12]] + [["x"]]
    metric.update(cands, targets)
    whole = metric.compute()
    calls = []
    real = bertscore_tm.engines.paired.pair_chunks
    monkeypatch.setattr(
        bertscore_tm.engines.paired, "pair_chunks", lambda cost, budget: calls.append(1) or real(cost, 1)
    )
    metric.reset()  # (compute() would return its cached result)
    metric.update(cands, targets)
    chunked = metric.compute()
    assert calls and len(real(torch.ones(len(cands)), 1)) == len(cands)
    for key in ("precision", "recall", "f1"):
        assert torch.equal(chunked[key], whole[key]), key


def test_distinct_texts_are_found_exactly_and_numbered_by_first_appearance():
    """compute()'s list of texts to embed is built with tensor operations (no Python object per pair); it still
    finds every repeat exactly and numbers texts as a pair-by-pair walk first meets them."""
    from bertscore_tm.engines.paired import PairTokens, matches_of

    g = torch.Generator().manual_seed(0)
    for _ in range(50):
        n = int(torch.randint(1, 30, (1,), generator=g))
        counts = torch.randint(1, 4, (n,), generator=g, dtype=torch.int32)
        c_lens = torch.randint(0, 5, (n,), generator=g, dtype=torch.int32)
        r_lens = torch.randint(0, 5, (int(counts.sum()),), generator=g, dtype=torch.int32)
        c_ids = torch.randint(0, 3, (int(c_lens.sum()),), generator=g, dtype=torch.int32)  # 3 ids: many repeats
        r_ids = torch.randint(0, 3, (int(r_lens.sum()),), generator=g, dtype=torch.int32)
        is_new = torch.rand(n, generator=g) < 0.7
        texts, match_cand, match_ref = matches_of(PairTokens(c_ids, c_lens, r_ids, r_lens, counts), is_new)
        cands = [c.tolist() for c in torch.split(c_ids, c_lens.tolist())]
        refs = [r.tolist() for r in torch.split(r_ids, r_lens.tolist())]
        walk, matches, first_ref = [], [], 0
        for i in range(n):
            mine = refs[first_ref : first_ref + int(counts[i])]
            first_ref += int(counts[i])
            if is_new[i]:
                walk += [tuple(cands[i])] + [tuple(r) for r in mine]
                matches += [(tuple(cands[i]), tuple(r)) for r in mine]
        found = [tuple(texts[t].tolist()) for t in range(len(texts))]
        assert found == list(dict.fromkeys(walk))  # each distinct text once, in order of first appearance
        assert [(found[c], found[r]) for c, r in zip(match_cand.tolist(), match_ref.tolist(), strict=True)] == matches


def test_matches_laid_end_to_end_weigh_as_each_padded_alone():
    """The kept per-token bests are weighed a run of similar lengths at a time (`ragged_scores`); each match's
    P, R, F and F-beta are the very bits of the kernel's weighing of that match alone, as all pairs and
    explanations weigh it."""
    from bertscore_tm.scoring.kernel import weighted_scores
    from bertscore_tm.scoring.matching import ragged_scores

    g = torch.Generator().manual_seed(1)
    c_len = torch.tensor([0, 1, 3, 4, 7, 9, 40, 41, 300, 5])
    r_len = torch.tensor([2, 1, 5, 0, 7, 30, 8, 41, 2, 299])
    c_best, r_best = torch.rand(int(c_len.sum()), 2, generator=g), torch.rand(int(r_len.sum()), 2, generator=g)
    c_w, r_w = torch.rand(int(c_len.sum()), generator=g).double(), torch.rand(int(r_len.sum()), generator=g).double()
    blank = torch.zeros(10, dtype=torch.bool)
    blank[3] = True
    got = ragged_scores(c_best, c_w, c_len, r_best, r_w, r_len, blank, beta=3.0)
    c_at, r_at = torch.cumsum(c_len, 0) - c_len, torch.cumsum(r_len, 0) - r_len
    for m in range(10):
        cs, rs = slice(int(c_at[m]), int(c_at[m] + c_len[m])), slice(int(r_at[m]), int(r_at[m] + r_len[m]))
        alone = weighted_scores(c_best[cs].T, c_w[cs], r_best[rs].T, r_w[rs], blank[m], beta=3.0)
        assert torch.equal(got[m], alone) or (m == 0 and torch.equal(got[m].isnan(), alone.isnan())), m


@pytest.mark.slow
def test_best_reference_is_the_one_of_highest_f1_and_the_lowest_index_on_a_tie(wmt):
    """`Scores.best_reference` against each reference scored alone (an independent argmax over those runs)."""
    from bertscore_tm.engines.functional import score

    cands = wmt["hyps"]
    pairs = zip(wmt["refs"], wmt["refs2"], strict=True)
    triples = [[a, b, a] if i % 2 else [b, a, b] for i, (a, b) in enumerate(pairs)]  # the third ties the first
    metric = BERTScore(MINILM)
    metric.update(cands, triples)
    scores = metric.compute_scores()
    alone = torch.stack([score(cands, [t[k] for t in triples], MINILM)[2] for k in range(3)])  # [3, pairs]
    assert scores.best_reference is not None
    assert scores.best_reference.tolist() == alone.argmax(dim=0).tolist()  # argmax: the first of equal maxima
    assert torch.equal(scores.f1, alone.max(dim=0).values)
    assert set(scores.best_reference.tolist()) == {0, 1}  # both positions win somewhere; the repeat never does
    layers = BERTScore(MINILM, all_layers=True)
    layers.update(cands, triples)
    per_layer = layers.compute_scores().best_reference
    assert per_layer is not None and per_layer.shape == (7, len(cands))
    assert per_layer[5].tolist() == scores.best_reference.tolist()
