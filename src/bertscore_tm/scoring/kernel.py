"""The numeric core every engine calls: each token's best similarity on the other side (`best_similarities`),
and the weighted P, R, F and F-beta those give (`weighted_scores`). Paired blocks, tiles of long texts, all
pairs, MBR and explanations only schedule work around these two, so a pair's scores are the same bits
whichever of them computed it (on a CPU; docs/semantics.md, "Properties")."""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import Tensor

#: Float64 products computed at once before they are rounded to float32 (CPU): a few MiB, so that they stay
#: in the processor's cache, and the float32 similarities stay what their callers' budgets count.
PRODUCT_ELEMENTS = 1 << 19


class Best(NamedTuple):
    """Each token's best similarity on the other side (float32) and, where asked, the index of that token
    among the other side's (int64, the first on a tie; -1 where the token has no match)."""

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
    """Greedy matching of padded token vectors: each token's best cosine similarity over the other text's.

    Paired: `cand` [..., Lc, D] against `ref` [..., Lr, D] (the same leading dimensions, e.g. layers and
    pairs) give [..., Lc] and [..., Lr]. With `all_pairs`, `cand` [..., N, Lc, D] and `ref` [..., M, Lr, D]
    give every pair's: [..., N, M, Lc] and [..., N, M, Lr]. The live masks (broadcast to [..., (N,) Lc] and
    [..., (M,) Lr]; None: every token) say which tokens take part: padding, a mask's, a prompt's and a
    context's tokens are no match, and they and any token left with nothing to match get `unmatched`.
    On a CPU the float32 vectors' dot products are summed in float64 and rounded once to float32: a float32
    matrix product sums in an order that depends on its shapes, so a value would otherwise depend on the texts
    it was computed with; accelerators keep float32 products, for speed."""
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
    """[..., N, Lc, D] and [..., M, Lr, D] -> float32 [..., Lc, N, Lr, M] (any strides in, e.g. permuted views
    of gathered rows: the copy to float64 lays them out token-major in one pass)."""
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
    """Raise a running best (`best`, in place) by one tile's (`part`), the index with it: only a strictly
    greater value replaces, so over tiles taken in order the first index of a tie stays."""
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
    """P, R, F (and F-beta fourth with `beta`) of pairs laid out as padded rows of tokens: bests [..., L]
    (float32, tokens last), weights broadcast to them (float64, 0 on padding and on tokens out of the
    matching), `blank` broadcast to [...]; returns [..., 3 or 4] float32 (`weighted_mean`, `f_scores`)."""
    return f_scores(weighted_mean(cand_best, cand_weight), weighted_mean(ref_best, ref_weight), blank, beta)


def weighted_mean(best: Tensor, weight: Tensor) -> Tensor:
    """The weight-averaged best similarity of each padded row of tokens, float64 [...]: NaN where the weights
    sum to 0. The sums run token by token in order (a cumulative sum: on a CPU one serial float64 pass per row),
    so padding adds exact zeros and a row gives the same bits whatever width it is padded to."""
    if best.shape[-1] == 0:
        return torch.full(torch.broadcast_shapes(best.shape, weight.shape)[:-1], float("nan"), dtype=torch.float64)
    num = torch.cumsum(best.to(torch.float64) * weight.to(best.device, torch.float64), -1)[..., -1]
    den = torch.cumsum(weight.to(best.device, torch.float64), -1)[..., -1]
    return num / den


def f_scores(p: Tensor, r: Tensor, blank: Tensor, beta: float | None = None) -> Tensor:
    """The one F rule: P, R, F = 2PR / (P + R) and, with `beta`, F-beta = (1 + beta^2) PR / (beta^2 P + R)
    (recall weighing beta times precision; beta = 1 is F to the bit) stacked last as float32 [..., 3 or 4].
    F and F-beta are 0 where undefined (a NaN P or R, or both 0); a pair with a blank side scores 0 throughout.

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
