"""The similarity of token vectors, one rule for the paired engine's blocks and its tiles of long texts
(`bertscore_tm.scoring.matching`, `bertscore_tm.scoring.longpairs`)."""

from __future__ import annotations

import torch
from torch import Tensor


def similarities(c: Tensor, r: Tensor) -> Tensor:
    """Cosine similarities of unit vectors: [..., Lc, D] and [..., Lr, D] give [..., Lc, Lr] (the same leading
    dimensions, e.g. layers and pairs; any strides, such as a permuted view of gathered rows). On a CPU, float32
    vectors' dot products are summed in float64 and rounded once to float32: a float32 matrix product sums in an
    order that depends on the matrices' shapes, so a pair's similarities would otherwise depend, in their last
    bit, on the texts it is matched with (its block, its shard); summed in float64 they round to the same float32
    whatever the shapes (docs/semantics.md). Accelerators keep float32 products, for speed."""
    shape = (*c.shape[:-1], r.shape[-2])
    if c.device.type == "cpu" and c.dtype == torch.float32:
        c, r = _float64(c), _float64(r)
    c, r = c.reshape(-1, *c.shape[-2:]), r.reshape(-1, *r.shape[-2:])
    return torch.bmm(c, r.transpose(1, 2)).to(torch.float32).view(shape)


def _float64(x: Tensor) -> Tensor:
    """`x` in float64 and contiguous, in one pass over it whatever its strides (``x.double()`` keeps a permuted
    view's strides, and the product would then copy it again)."""
    return torch.empty(x.shape, dtype=torch.float64, device=x.device).copy_(x)
