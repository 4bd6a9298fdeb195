"""The numeric core every engine calls: each token's best similarity on the other side, and the weighted P, R,
F they give. The engines only schedule work around these, so a pair scores the same bits whichever computed it."""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import Tensor

#: Float64 products computed at once before they are rounded to float32 (CPU): a few MiB, so that they stay
#: in the processor's cache, and the float32 similarities stay what their callers' budgets count.
PRODUCT_ELEMENTS = 1 << 19


class Best(NamedTuple):
    """Each token's best similarity on the other side (float32) and, where asked, that token's index (the first
    on a tie; -1: no match)."""

    cand: Tensor
    ref: Tensor
    cand_index: Tensor | None = None
    ref_index: Tensor | None = None


def best_similarities(
    cand: Tensor,
    ref: Tensor,
    cand_live: Tensor | None = None,
    ref_live: Tensor | None = None,
    *,
    all_pairs: bool = False,
    indices: bool = False,
    unmatched: float = 0.0,
) -> Best:
    """Greedy matching: each token's best cosine similarity over the other text's tokens.

    Paired, [..., Lc, D] and [..., Lr, D] give [..., Lc] and [..., Lr]; with `all_pairs`, [..., N, Lc, D] and
    [..., M, Lr, D] give [..., N, M, Lc] and [..., N, M, Lr]. Tokens the live masks leave out (padding, a mask's, a
    prompt's) are no match; they, and tokens left with nothing to match, get `unmatched`. On a CPU the products are
    summed in float64 and rounded once: float32 sums in an order that depends on the shapes, so a value would
    depend on the texts it was batched with."""
    if not all_pairs:
        cand, ref = cand.unsqueeze(-3), ref.unsqueeze(-3)
        cand_live = None if cand_live is None else cand_live.unsqueeze(-2)
        ref_live = None if ref_live is None else ref_live.unsqueeze(-2)
    if cand.shape[-2] and ref.shape[-2]:
        sim = _similarities(cand, ref)  # [..., Lc, N, Lr, M]: token-major, both maxima reduce an outer dimension
        if cand_live is not None:
            sim.masked_fill_(~cand_live.transpose(-1, -2)[..., None, None], float("-inf"))
        if ref_live is not None:
            sim.masked_fill_(~ref_live.transpose(-1, -2)[..., None, None, :, :], float("-inf"))
        if indices:
            (best_c, at_c), (best_r, at_r) = sim.max(dim=-2), sim.max(dim=-4)
            found = [best_c, best_r, at_c, at_r]
        else:
            found = [sim.amax(dim=-2), sim.amax(dim=-4)]
        del sim
        found = [t.movedim(-2 - (k % 2 == 0), -1) for k, t in enumerate(found)]  # [..., N, M, Lc], [..., N, M, Lr]
    else:  # a side of no tokens: nothing to match
        lead = torch.broadcast_shapes(cand.shape[:-3], ref.shape[:-3])
        sizes = (*lead, cand.shape[-3], ref.shape[-3])
        found = [torch.full((*sizes, n), float("-inf"), device=cand.device) for n in (cand.shape[-2], ref.shape[-2])]
        found += [torch.full_like(t, -1, dtype=torch.long) for t in found] if indices else []
    if cand_live is not None or ref_live is not None or not (cand.shape[-2] and ref.shape[-2]):
        none = [torch.isinf(t) for t in found[:2]]
        found = [t.masked_fill(n, unmatched) for t, n in zip(found[:2], none, strict=True)] + [
            t.masked_fill(n, -1) for t, n in zip(found[2:], none, strict=False)
        ]
    if not all_pairs:
        found = [t.squeeze(-2).squeeze(-2) for t in found]
    return Best(*found)


def _similarities(cand: Tensor, ref: Tensor) -> Tensor:
    """[..., N, Lc, D] and [..., M, Lr, D] -> float32 [..., Lc, N, Lr, M]: token-major, so that both maxima
    reduce an outer dimension."""
    *lead, n, lc, dim = cand.shape
    m, lr = ref.shape[-3:-1]
    exact = cand.device.type == "cpu" and cand.dtype == torch.float32
    dtype = torch.float64 if exact else cand.dtype
    c = torch.empty((*lead, lc, n, dim), dtype=dtype, device=cand.device)
    r = torch.empty((*ref.shape[:-3], lr, m, dim), dtype=dtype, device=ref.device)
    c.copy_(cand.transpose(-3, -2))
    r.copy_(ref.transpose(-3, -2))
    c, r = c.view(*lead, lc * n, dim), r.view(*r.shape[:-3], lr * m, dim).transpose(-1, -2)
    if not exact:
        return torch.matmul(c, r).to(torch.float32).view(*lead, lc, n, lr, m)
    # the float64 products a slice at a time (whole leading items, or rows of one), each rounded once
    c, r = c.reshape(-1, lc * n, dim), r.expand(*lead, dim, lr * m).reshape(-1, dim, lr * m)
    out = torch.empty((c.shape[0], lc * n, lr * m), dtype=torch.float32)
    per_item = max(1, lc * n * lr * m)
    if per_item <= PRODUCT_ELEMENTS:
        step = max(1, PRODUCT_ELEMENTS // per_item)
        for lo in range(0, len(c), step):
            out[lo : lo + step] = torch.bmm(c[lo : lo + step], r[lo : lo + step])
    else:
        step = max(1, PRODUCT_ELEMENTS // max(1, lr * m))
        for item in range(len(c)):
            for lo in range(0, lc * n, step):
                out[item, lo : lo + step] = torch.mm(c[item, lo : lo + step], r[item])
    return out.view(*lead, lc, n, lr, m)


def raise_best(best: Tensor, part: Tensor, at: Tensor | None = None, part_at: Tensor | None = None) -> None:
    """Raise a running best in place by one tile's: only a strictly greater value replaces, so over tiles in
    order the first index of a tie stays."""
    if at is None or part_at is None:
        torch.maximum(best, part, out=best)
        return
    better = part > best
    best.copy_(torch.where(better, part, best))
    at.copy_(torch.where(better, part_at, at))


def weighted_scores(
    cand_best: Tensor,
    cand_weight: Tensor,
    ref_best: Tensor,
    ref_weight: Tensor,
    blank: Tensor,
    beta: float | None = None,
) -> Tensor:
    """P, R, F (F-beta fourth with `beta`) of padded rows of tokens: float32 bests, float64 weights (0 off the
    matching)."""
    return f_scores(weighted_mean(cand_best, cand_weight), weighted_mean(ref_best, ref_weight), blank, beta)


def weighted_mean(best: Tensor, weight: Tensor) -> Tensor:
    """Each padded row's weight-averaged best, float64 (NaN where the weights sum to 0). A cumulative sum adds
    token by token, so padding adds exact zeros and a row's bits do not depend on its padded width."""
    if best.shape[-1] == 0:
        return torch.full(torch.broadcast_shapes(best.shape, weight.shape)[:-1], float("nan"), dtype=torch.float64)
    num = torch.cumsum(best.to(torch.float64) * weight.to(best.device, torch.float64), -1)[..., -1]
    den = torch.cumsum(weight.to(best.device, torch.float64), -1)[..., -1]
    return num / den


def f_scores(p: Tensor, r: Tensor, blank: Tensor, beta: float | None = None) -> Tensor:
    """The one F rule: F = 2PR / (P + R) and, with `beta`, F-beta = (1 + b²)PR / (b²P + R), stacked last as
    float32; F is 0 where undefined, and a pair with a blank side scores 0 throughout.

    >>> f_scores(torch.tensor([0.8, 0.0]), torch.tensor([0.6, 0.0]), torch.tensor([False, False]), 3.0)
    tensor([[0.8000, 0.6000, 0.6857, 0.6154],
            [0.0000, 0.0000, 0.0000, 0.0000]])
    """
    p, r, blank = torch.broadcast_tensors(p, r, blank.to(p.device))
    scores = [p.masked_fill(blank, 0.0), r.masked_fill(blank, 0.0)]
    for b2 in (1.0,) if beta is None else (1.0, float(beta) ** 2):
        f = (1 + b2) * p * r / (b2 * p + r)
        scores.append(f.masked_fill(torch.isnan(f) | blank, 0.0))
    return torch.stack(scores, dim=-1).to(torch.float32)
