"""The similarity of token vectors, one rule for the paired engine's blocks and its tiles of long texts
(`bertscore_tm.matching`, `bertscore_tm.longpairs`)."""

from __future__ import annotations

import torch
from torch import Tensor


def similarities(c: Tensor, r: Tensor) -> Tensor:
    """Cosine similarities of unit vectors: [B, Lc, D] and [B, Lr, D] give [B, Lc, Lr]. On a CPU, float32 vectors'
    dot products are summed in float64 and rounded once to float32: a float32 matrix product sums in an order
    that depends on the matrices' shapes, so a pair's similarities would otherwise depend, in their last bit, on
    the texts it is matched with (its block, its shard); summed in float64 they round to the same float32
    whatever the shapes (docs/semantics.md). Accelerators keep float32 products, for speed."""
    if c.device.type == "cpu" and c.dtype == torch.float32:
        return torch.bmm(c.double(), r.double().transpose(1, 2)).float()
    return torch.bmm(c, r.transpose(1, 2))
