"""Packed forward passes: texts of many lengths run through the model as one stream of tokens.

Batches of one length (`bertscore_tm.embedding.embedder.length_batches`) are never padded, but a corpus has dozens of
lengths with a few texts each, so most forward passes multiply small matrices (a few hundred rows). A packed
pass lays the texts of many lengths end to end, [1, tokens, hidden], so every linear layer (three quarters of
the time) multiplies one tall matrix; only attention works text by text: our attention function (registered
with transformers' `AttentionInterface`) attends within each run of same-length texts, so no token ever sees
another text. Embeddings are looked up per length (positions restart at each text) and the encoder's blocks
run on the packed stream; the pooler, unused by BERTScore, never runs.

Where it is used: bfloat16 on a CPU, for the model families whose blocks reach attention through that
interface and whose embeddings need nothing between them and the encoder (`configs/packing.json`). There it
gives the very same vectors as batches of one length, bit for bit (the bfloat16 matrix products round each
row alike whatever the number of rows; tests pin it), in less time: on a 2-core CPU packing cut the whole
metric's bfloat16 time by 12-16% against batches of one length (every `make bench` run). In float32 a packed
pass gave vectors up to 6e-7 away from those of batches of one length, and up to 2e-7 apart with other
companions (the CPU's float32 products round by shape), so float32 keeps its batches of one length, which are
exact and batch-invariant.

>>> list(packs([5, 3, 5, 2], max_tokens=8))
[[0], [2, 1], [3]]
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

import torch
from torch import Tensor, nn

from bertscore_tm.models.loading import model_depth
from bertscore_tm.models.model_family import can_pack as can_pack  # the family fact, asked for through packing

#: The name our attention function is registered under with transformers.
ATTENTION_NAME = "bertscore_tm_packed"


@dataclass
class Runs:
    """The runs of same-length texts in a packed stream, handed to the attention function through the
    model's keyword arguments: (first token, texts, length) each. `score_budget` bounds one piece's attention
    scores (texts x length x length), as `length_batches` bounds a batch's. `calls` counts the attention calls,
    so the caller can tell that every block attended text by text (a model that bypassed the interface would
    not)."""

    runs: list[tuple[int, int, int]]
    score_budget: int
    calls: int = 0


def packs(lengths: Sequence[int], max_tokens: int, batch_size: int | None = None) -> Iterator[list[int]]:
    """Indices of `lengths` sorted longest first, cut into packs of at most `max_tokens` tokens in all (a text
    longer than that alone) and of at most `batch_size` texts where one is given.

    >>> list(packs([4, 4, 9, 1], max_tokens=9)), list(packs([4, 4, 9, 1], max_tokens=9, batch_size=2))
    ([[2], [0, 1, 3]], [[2], [0, 1], [3]])
    """
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    pack: list[int] = []
    tokens = 0
    for i in order:
        full = batch_size is not None and len(pack) >= batch_size
        if pack and (full or tokens + lengths[i] > max_tokens):
            yield pack
            pack, tokens = [], 0
        pack.append(i)
        tokens += lengths[i]
    if pack:
        yield pack


def packed_attention(
    module: nn.Module,
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attention_mask: Tensor | None,
    scaling: float | None = None,
    dropout: float = 0.0,
    bertscore_runs: Runs | None = None,
    **kwargs: object,
) -> tuple[Tensor, None]:
    """Scaled dot-product attention within each text of a packed stream ([1, heads, tokens, head size] in,
    [1, tokens, heads, head size] out), run by run of same-length texts, each run in pieces whose scores stay
    within `score_budget`. The same products and softmax as the model's eager attention, batch by batch."""
    if bertscore_runs is None:
        raise RuntimeError("packed attention was called without the runs of its packed stream")
    bertscore_runs.calls += 1
    heads, size = query.shape[1], query.shape[3]
    scale = size**-0.5 if scaling is None else scaling
    out = torch.empty((1, query.shape[2], heads, size), dtype=query.dtype, device=query.device)
    for first, count, length in bertscore_runs.runs:
        step = max(1, bertscore_runs.score_budget // (length * length))
        for lo in range(0, count, step):
            n = min(step, count - lo)
            a, b = first + lo * length, first + (lo + n) * length
            q, k, v = (x[0, :, a:b].unflatten(1, (n, length)).transpose(0, 1) for x in (query, key, value))
            weights = torch.softmax(torch.matmul(q, k.transpose(2, 3)) * scale, dim=-1)
            out[0, a:b] = torch.matmul(weights, v).permute(0, 2, 1, 3).reshape(n * length, heads, size)
    return out, None


@cache
def _register() -> None:
    from transformers import AttentionInterface

    AttentionInterface.register(ATTENTION_NAME, packed_attention)


def packed_forward(model: Any, seqs: Sequence[Tensor], score_budget: int) -> tuple[Tensor, list[int]] | None:
    """The last hidden states of `seqs` from one packed pass of `model` (see the module's docstring), its
    attention in pieces of at most `score_budget` scores (texts x length x length) per head: the
    stream ([tokens, hidden], the model's dtype, longest texts first) and each sequence's first row in it;
    None where the model's blocks did not all attend through our function (the caller then runs the texts in
    batches of one length)."""
    device = next(model.parameters()).device  # a loaded encoder (`can_pack`): its submodules are typed Any here
    order = sorted(range(len(seqs)), key=lambda i: -len(seqs[i]))
    starts = [0] * len(seqs)
    runs: list[tuple[int, int, int]] = []
    pieces: list[Tensor] = []
    first = i = 0
    while i < len(order):  # texts of one length: one embedding lookup, one run
        length = len(seqs[order[i]])
        j = i
        while j < len(order) and len(seqs[order[j]]) == length:
            starts[order[j]] = first + (j - i) * length
            j += 1
        ids = torch.stack([seqs[k] for k in order[i:j]]).to(device=device, dtype=torch.long)
        pieces.append(model.embeddings(input_ids=ids).flatten(0, 1))
        runs.append((first, j - i, length))
        first += (j - i) * length
        i = j
    stream = torch.cat(pieces).unsqueeze(0)
    del pieces
    found = Runs(runs, score_budget)
    config = model.config
    own = config._attn_implementation
    _register()
    config._attn_implementation = ATTENTION_NAME
    try:
        hidden = model.encoder(stream, attention_mask=None, bertscore_runs=found)[0][0]
    finally:
        config._attn_implementation = own
    if found.calls != model_depth(model):
        return None
    return hidden, starts
