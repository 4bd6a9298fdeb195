"""The matching kernel and the weighing every engine calls (`scoring/kernel.py`), against independent float64
computations in plain torch: random unit vectors, masks of tokens out of the matching, ties; a value never
depends on the shapes it is computed in, nor a weighted mean on the width its row is padded to."""

from __future__ import annotations

import math

import pytest
import torch

from bertscore_tm.scoring import kernel
from bertscore_tm.scoring.kernel import best_similarities, f_scores, weighted_mean, weighted_scores
from bertscore_tm.scoring.longpairs import match_in_tiles, settle


def unit(gen: torch.Generator, *shape: int) -> torch.Tensor:
    x = torch.randn(*shape, generator=gen)
    return x / x.norm(dim=-1, keepdim=True)


def float64_best(c: torch.Tensor, r: torch.Tensor, c_live: torch.Tensor, r_live: torch.Tensor):
    """One pair, token by token: each live token's best over the other side's live tokens, the float64 dot
    product (elementwise products summed) rounded once to float32, and the first index of that best; 0 and -1
    for a token out of the matching or with nothing live to match."""
    sim = (c.double()[:, None, :] * r.double()[None, :, :]).sum(-1).float()
    out = []
    for s, mine, theirs in ((sim, c_live, r_live), (sim.T, r_live, c_live)):
        best = torch.zeros(len(s))
        index = torch.full((len(s),), -1)
        for i in range(len(s)):
            values = [(float(s[i, j]), j) for j in range(s.shape[1]) if theirs[j]]
            if mine[i] and values:
                top = max(v for v, _ in values)
                best[i], index[i] = top, next(j for v, j in values if v == top)
        out += [best, index]
    return out


@pytest.fixture
def pairs():
    """Layers x pairs of padded texts: masks with tokens out, a pair whose reference is all out, and ties
    (reference vectors repeated, so a candidate token has equal best matches)."""
    gen = torch.Generator().manual_seed(0)
    c, r = unit(gen, 2, 5, 7, 16), unit(gen, 2, 5, 9, 16)
    r[:, :, 6] = r[:, :, 2]  # equal vectors: equal similarities, the first index wins
    c[:, :, 4] = c[:, :, 1]
    c_live, r_live = torch.rand(5, 7, generator=gen) > 0.25, torch.rand(5, 9, generator=gen) > 0.25
    c_live[:, 1] = r_live[:, 2] = r_live[:, 6] = True
    r_live[3] = False
    return c, r, c_live, r_live


def test_paired_bests_and_indices_equal_a_float64_computation(pairs) -> None:
    c, r, c_live, r_live = pairs
    found = best_similarities(c, r, c_live, r_live, indices=True)
    assert found.cand.shape == (2, 5, 7) and found.ref.shape == (2, 5, 9) and found.cand.dtype == torch.float32
    ties = 0
    for layer in range(2):
        for b in range(5):
            best_c, at_c, best_r, at_r = float64_best(c[layer, b], r[layer, b], c_live[b], r_live[b])
            assert torch.equal(found.cand[layer, b], best_c) and torch.equal(found.cand_index[layer, b], at_c)
            assert torch.equal(found.ref[layer, b], best_r) and torch.equal(found.ref_index[layer, b], at_r)
            ties += int((at_c == 2).sum())
    assert ties > 0  # some best matches were the tie of columns 2 and 6, named 2
    assert torch.equal(found.cand[:, 3], torch.zeros(2, 7)) and bool((found.cand_index[:, 3] == -1).all())
    plain = best_similarities(c, r, c_live, r_live)
    assert torch.equal(plain.cand, found.cand) and plain.cand_index is None


def test_all_pairs_equal_each_pair_matched_alone(pairs) -> None:
    """N x M at once gives every pair's bests as the paired call of that pair alone: the same bits."""
    c, r, c_live, r_live = pairs
    found = best_similarities(c, r[:, :4], c_live, r_live[:4], all_pairs=True, indices=True)
    assert found.cand.shape == (2, 5, 4, 7) and found.ref.shape == (2, 5, 4, 9)
    for n in range(5):
        for m in range(4):
            alone = best_similarities(c[:, n], r[:, m], c_live[n], r_live[m], indices=True)
            for got, want in zip(
                (found.cand[:, n, m], found.ref[:, n, m], found.cand_index[:, n, m], found.ref_index[:, n, m]),
                alone,
                strict=True,
            ):
                assert torch.equal(got, want)


def test_a_value_does_not_depend_on_the_shapes_it_is_computed_in() -> None:
    """A pair's bests are the same float32 numbers alone, padded into a batch of longer pairs (its padding
    masked), and with its float64 products cut into slices (`PRODUCT_ELEMENTS`) on a CPU; each equals the
    float64 dot product rounded once."""
    gen = torch.Generator().manual_seed(1)
    c, r = unit(gen, 37, 384), unit(gen, 29, 384)
    alone = best_similarities(c, r)
    block_c, block_r = unit(gen, 6, 211, 384), unit(gen, 6, 173, 384)
    block_c[3, :37], block_r[3, :29] = c, r
    live_c, live_r = torch.ones(6, 211, dtype=torch.bool), torch.ones(6, 173, dtype=torch.bool)
    live_c[3, 37:] = live_r[3, 29:] = False
    in_block = best_similarities(block_c, block_r, live_c, live_r)
    assert torch.equal(alone.cand, in_block.cand[3, :37]) and torch.equal(alone.ref, in_block.ref[3, :29])
    full = torch.ones(37, dtype=torch.bool), torch.ones(29, dtype=torch.bool)
    assert torch.equal(alone.cand, float64_best(c, r, *full)[0])


@pytest.mark.parametrize("elements", [1, 100, 5_000], ids=["rows-of-one", "rows", "items"])
def test_slices_of_the_float64_products_give_the_same_bits(monkeypatch, elements) -> None:
    gen = torch.Generator().manual_seed(2)
    c, r = unit(gen, 3, 4, 11, 24), unit(gen, 3, 5, 13, 24)
    whole = best_similarities(c, r, all_pairs=True, indices=True)
    monkeypatch.setattr(kernel, "PRODUCT_ELEMENTS", elements)
    sliced = best_similarities(c, r, all_pairs=True, indices=True)
    assert all(torch.equal(a, b) for a, b in zip(whole, sliced, strict=True))


def test_a_side_of_no_tokens_leaves_the_other_unmatched() -> None:
    gen = torch.Generator().manual_seed(3)
    c, r = unit(gen, 2, 0, 8), unit(gen, 2, 5, 8)
    found = best_similarities(c, r, indices=True)
    assert found.cand.shape == (2, 0) and torch.equal(found.ref, torch.zeros(2, 5))
    assert bool((found.ref_index == -1).all())
    tile = best_similarities(c, r, unmatched=float("-inf"))
    assert bool(torch.isinf(tile.ref).all())
    pairs = best_similarities(unit(gen, 3, 0, 8), unit(gen, 4, 5, 8), all_pairs=True)
    assert pairs.cand.shape == (3, 4, 0) and torch.equal(pairs.ref, torch.zeros(3, 4, 5))


def test_tiles_give_the_untiled_bests_and_first_indices(pairs) -> None:
    """`longpairs.match_in_tiles` raises running bests tile by tile with the kernel's: the same values and,
    ties included, the same first indices as one call on the whole pair."""
    c, r, c_live, r_live = pairs
    c, r = c[0, 0].repeat(3, 1), r[0, 0].repeat(2, 1)  # 21 x 18 tokens, each vector repeated: ties across tiles
    live = (c_live[0].repeat(3), r_live[0].repeat(2))
    whole = best_similarities(c, r, *live, indices=True)
    c_best, r_best = torch.full((21, 1), float("-inf")), torch.full((18, 1), float("-inf"))
    c_at, r_at = torch.full((21, 1), -1), torch.full((18, 1), -1)
    match_in_tiles(c, r, c_best, r_best, budget=16, live=live, index=(c_at, r_at))  # tiles of 4 x 4
    settle(c_best, r_best)
    assert torch.equal(c_best[:, 0], whole.cand) and torch.equal(r_best[:, 0], whole.ref)
    assert torch.equal(c_at[:, 0], whole.cand_index) and torch.equal(r_at[:, 0], whole.ref_index)


def test_weighted_scores_equal_a_float64_computation() -> None:
    gen = torch.Generator().manual_seed(4)
    best_c, best_r = torch.rand(6, 2, 9, generator=gen) * 2 - 1, torch.rand(6, 2, 7, generator=gen) * 2 - 1
    w_c, w_r = torch.rand(6, 1, 9, generator=gen, dtype=torch.float64), torch.rand(6, 1, 7, generator=gen).double()
    w_c[0], w_r[1] = 0.0, 0.0  # weights summing to 0: P (R) is NaN, F 0
    blank = torch.tensor([False, False, True, False, False, False])[:, None]
    got = weighted_scores(best_c, w_c, best_r, w_r, blank, beta=2.0)
    assert got.shape == (6, 2, 4) and got.dtype == torch.float32
    for i in range(6):
        for layer in range(2):
            p, r = (
                math.fsum((w[i, 0] * b[i, layer].double()).tolist()) / math.fsum(w[i, 0].tolist())
                if math.fsum(w[i, 0].tolist())
                else math.nan
                for b, w in ((best_c, w_c), (best_r, w_r))
            )
            f = 2 * p * r / (p + r) if p + r else math.nan
            f2 = 5 * p * r / (4 * p + r) if 4 * p + r else math.nan
            want = [0.0] * 4 if bool(blank[i]) else [p, r, 0.0 if math.isnan(f) else f, 0.0 if math.isnan(f2) else f2]
            expected = torch.tensor(want, dtype=torch.float64)
            torch.testing.assert_close(got[i, layer].double(), expected, rtol=0, atol=1e-7, equal_nan=True)
    assert bool(torch.isnan(got[0, :, 0]).all()) and bool((got[0, :, 2] == 0).all())


def test_a_weighted_mean_does_not_depend_on_the_width_of_its_padding() -> None:
    """The sums run token by token in order: a row padded with zeros to any width gives the same bits (a
    vectorised sum would regroup its terms with the width)."""
    gen = torch.Generator().manual_seed(5)
    best, weight = torch.rand(3, 23, generator=gen), torch.rand(3, 23, generator=gen, dtype=torch.float64)
    first = weighted_mean(best, weight)
    for width in (24, 31, 64, 517):
        padded_best, padded_weight = torch.zeros(3, width), torch.zeros(3, width, dtype=torch.float64)
        padded_best[:, :23], padded_weight[:, :23] = best, weight
        assert torch.equal(weighted_mean(padded_best, padded_weight), first)


def test_f_beta_at_one_is_f_to_the_bit() -> None:
    gen = torch.Generator().manual_seed(6)
    p, r = torch.rand(50, generator=gen, dtype=torch.float64), torch.rand(50, generator=gen, dtype=torch.float64)
    scores = f_scores(p, r, torch.zeros(50, dtype=torch.bool), beta=1.0)
    assert torch.equal(scores[:, 3], scores[:, 2])
    assert torch.equal(scores[:, :3], f_scores(p, r, torch.zeros(50, dtype=torch.bool)))
