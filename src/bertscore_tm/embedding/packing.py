"""Packed forward passes: texts of many lengths run through the model as one stream of tokens.

Batches of one length (`bertscore_tm.embedding.batches.length_batches`) are never padded, but a corpus has
dozens of lengths with a few texts each, so most forward passes multiply small matrices (a few hundred rows). A packed
pass lays the texts of many lengths end to end, [1, tokens, hidden], so every linear layer (three quarters of
the time) multiplies one tall matrix; only attention works text by text: our attention function (registered
with transformers' `AttentionInterface`) attends within each run of same-length texts, so no token ever sees
another text. Embeddings are looked up once a pack (positions restart at each text) and the encoder's blocks
run on the packed stream; the pooler, unused by BERTScore, never runs.

Where it is used: bfloat16 on a CPU, for the model families whose blocks reach attention through that
interface and whose embeddings need nothing between them and the encoder (`configs/packing.json`). There it
gives the very same vectors as batches of one length, bit for bit (the bfloat16 matrix products round each
row alike whatever the number of rows; tests pin it), in less time: on a 2-core CPU packing cut the whole
metric's bfloat16 time by 12-16% against batches of one length (every `make bench` run). In float32 a packed
pass gave vectors up to 6e-7 away from those of batches of one length, and up to 2e-7 apart with other
companions (the CPU's float32 products round by shape), so float32 keeps its batches of one length, which are
exact and batch-invariant.

On accelerators (accelerator batching: `bertscore_tm.embedding.embedder`) the same packs run in every dtype,
their attention through fused kernels: one variable-length call over the whole stream on CUDA in bfloat16 and
float16 (`torch.nn.attention.varlen`), scaled-dot-product attention per run of same-length texts elsewhere.

Which texts a pack holds: `bertscore_tm.embedding.batches.packs`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from itertools import accumulate, groupby
from typing import Any

import torch
from torch import Tensor, nn
from torch.nn.functional import scaled_dot_product_attention

from bertscore_tm.models.loading import model_depth
from bertscore_tm.models.model_family import can_pack as can_pack  # the family fact, asked for through packing
from bertscore_tm.models.model_family import packed_positions
from bertscore_tm.models.prompts import unmarked

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
    #: Accelerator batching: attention through fused kernels (`_fused_attention`) rather than the eager
    #: products the CPU's bfloat16 packing pins bit for bit.
    fused: bool = False
    #: Each text's first token and the stream's end on the device (int32), for variable-length attention: made
    #: once per pack, at its first attention call.
    bounds: Tensor | None = None


def send(host: Tensor, device: torch.device) -> Tensor:
    """A host tensor on `device`: on CUDA from pinned memory and not waited for, so the host goes on preparing
    the next batch while the device runs (a copy from pageable memory, or a read back, would wait for it)."""
    if device.type == "cuda":
        host = host.pin_memory()
    return host.to(device, non_blocking=True)


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
    if bertscore_runs.fused and _varlen_usable(query):
        try:
            return _varlen_attention(query, key, value, scale, bertscore_runs), None
        except (TypeError, RuntimeError, NotImplementedError) as err:  # per run from now on: the same vectors
            VARLEN_REFUSED.append(f"{type(err).__name__}: {err}"[:300])
    out = torch.empty((1, query.shape[2], heads, size), dtype=query.dtype, device=query.device)
    for first, count, length in bertscore_runs.runs:
        step = max(1, bertscore_runs.score_budget // (length * length))
        for lo in range(0, count, step):
            n = min(step, count - lo)
            a, b = first + lo * length, first + (lo + n) * length
            q, k, v = (x[0, :, a:b].unflatten(1, (n, length)).transpose(0, 1) for x in (query, key, value))
            if bertscore_runs.fused:  # one fused kernel per piece (flash or memory-efficient where it can)
                attended = scaled_dot_product_attention(q, k, v, scale=scale)
            else:
                attended = torch.matmul(torch.softmax(torch.matmul(q, k.transpose(2, 3)) * scale, dim=-1), v)
            out[0, a:b] = attended.permute(0, 2, 1, 3).reshape(n * length, heads, size)
    return out, None


#: Why variable-length attention was given up in this process (its first failure), or None: a torch whose
#: varlen call takes other arguments, or a card or shape its flash kernel refuses. Packs then attend per run.
VARLEN_REFUSED: list[str] = []


def _varlen() -> Any:
    """torch's variable-length attention (`torch.nn.attention.varlen.varlen_attn`, flash attention over texts
    laid end to end), or None where this torch has none."""
    try:
        from torch.nn.attention.varlen import varlen_attn
    except ImportError:
        return None
    return varlen_attn


def _varlen_usable(query: Tensor) -> bool:
    """Variable-length attention runs on CUDA in float16 and bfloat16 (flash attention's types) only, and only
    until it failed once."""
    wanted = query.is_cuda and query.dtype in (torch.float16, torch.bfloat16)
    return wanted and not VARLEN_REFUSED and _varlen() is not None


def _varlen_attention(query: Tensor, key: Tensor, value: Tensor, scale: float, found: Runs) -> Tensor:
    """The whole packed stream's attention in one call, each text attending only within itself: [1, heads,
    tokens, size] in, [1, tokens, heads, size] out. The texts' bounds go to the device once per pack, from
    pinned memory and without waiting (no host sync per layer)."""
    longest = max(length for _, _, length in found.runs)
    if found.bounds is None:
        lengths = torch.tensor([length for _, count, length in found.runs for _ in range(count)], dtype=torch.int32)
        bounds = torch.nn.functional.pad(lengths.cumsum(0, dtype=torch.int32), (1, 0))
        found.bounds = send(bounds, query.device)
    q, k, v = (x[0].transpose(0, 1).contiguous() for x in (query, key, value))  # [tokens, heads, size]
    out = _varlen()(q, k, v, found.bounds, found.bounds, longest, longest, scale=scale)
    return out.unsqueeze(0)


@cache
def _register() -> None:
    from transformers import AttentionInterface

    AttentionInterface.register(ATTENTION_NAME, packed_attention)


def packed_forward(
    model: Any, seqs: Sequence[Tensor], score_budget: int, fused: bool = False, lengths: Sequence[int] | None = None
) -> tuple[Tensor, list[int]] | None:
    """The last hidden states of `seqs` from one packed pass of `model` (`packed_pass`, their ids laid end to end
    longest first): the stream ([tokens, hidden], the model's dtype) and each sequence's first row in it; None
    where the model's blocks did not all attend through our function (the caller then runs the texts in batches
    of one length). `lengths`: the sequences' lengths, where known."""
    sizes = [len(s) for s in seqs] if lengths is None else lengths
    order = sorted(range(len(seqs)), key=lambda i: -sizes[i])
    ordered = [sizes[k] for k in order]
    hidden = packed_pass(model, torch.cat([seqs[k] for k in order]), ordered, score_budget, fused)
    if hidden is None:
        return None
    starts = [0] * len(seqs)
    for k, first in zip(order, accumulate([0, *ordered]), strict=False):
        starts[k] = first
    return hidden, starts


def packed_pass(
    model: Any, ids: Tensor, lengths: Sequence[int], score_budget: int, fused: bool = False
) -> Tensor | None:
    """The last hidden states ([tokens, hidden], the model's dtype) of one packed pass of `model` over texts
    whose ids lie end to end in `ids`, longest first, `lengths` theirs (see the module's docstring); its attention
    in pieces of at most `score_budget` scores (texts x length x length) per head (`fused`: through fused kernels,
    for accelerators). None where the model's blocks did not all attend through our function.

    The ids and their positions go to the device in one copy each (pinned on CUDA, not waited for) and are
    looked up in one call, positions restarting at every text as the family counts them (`packed_positions`:
    RoBERTa's start after the padding id). A lookup per run of one length, as before, cost a dozen launches a
    run, as many as the encoder's blocks on an accelerator. Work is per run, never per text."""
    device = next(model.parameters()).device  # a loaded encoder (`can_pack`): its submodules are typed Any here
    host = unmarked(ids.to(torch.long))  # as the model reads them
    runs: list[tuple[int, int, int]] = []
    first = 0
    for length, run in groupby(lengths):  # texts of one length: one run
        count = sum(1 for _ in run)
        if runs and length > runs[-1][2]:
            raise ValueError(f"packed_pass takes its texts longest first; a text of {length} tokens follows shorter")
        runs.append((first, count, length))
        first += count * length
    positions = packed_positions(model, host, torch.tensor(lengths, dtype=torch.long))
    stream = model.embeddings(input_ids=send(host, device)[None], position_ids=send(positions, device)[None])
    found = Runs(runs, score_budget, fused=fused)
    config = model.config
    own = config._attn_implementation
    _register()
    config._attn_implementation = ATTENTION_NAME
    try:
        hidden = model.encoder(stream, attention_mask=None, bertscore_runs=found)[0][0]
    finally:
        config._attn_implementation = own
    return hidden if found.calls == model_depth(model) else None
