"""The attention of a model we loaded, registered with transformers and selected once: packed streams attend text
by text, short or bfloat16 CPU batches run the eager products, the rest transformers' SDPA. The choice depends on
a text's length alone, so its vectors depend on the text alone (docs/performance.md)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from dataclasses import dataclass
from functools import cache
from itertools import accumulate, groupby
from typing import Any

import torch
from torch import Tensor, nn
from torch.nn.functional import scaled_dot_product_attention

from bertscore_tm.embedding.rows import send
from bertscore_tm.models.compat_transformers import attention_implementation
from bertscore_tm.models.model_family import packed_positions

#: The name the function is registered under with transformers.
ATTENTION_NAME = "bertscore_tm"

#: On a CPU, float32 batches of at most this many tokens run the eager products, faster than SDPA on sentences.
EAGER_CPU_TOKENS = 48

#: Keywords of attention calls that only transformers' own functions honour (relative position biases,
#: soft caps, attention sinks): such a call never runs the eager products here.
_OWN_KEYWORDS = ("position_bias", "softcap", "s_aux", "sinks")

#: Why variable-length attention was given up in this process (its first failure): packs then attend per run.
VARLEN_REFUSED: list[str] = []


@dataclass
class Pack:
    """A packed pass's runs of same-length texts, their device bounds, and its attention-score budget."""

    runs: list[tuple[int, int, int]]
    bounds: Tensor
    score_budget: int


_PACK: ContextVar[Pack | None] = ContextVar("bertscore_tm_pack", default=None)


def attention(
    module: nn.Module,
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attention_mask: Tensor | None,
    scaling: float | None = None,
    dropout: float = 0.0,
    **kwargs: Any,
) -> tuple[Tensor, None]:
    """The registered attention ([B, heads, T, size] in, [B, T, heads, size] out)."""
    packed = kwargs.get("cu_seq_lens_q") is not None
    scale = query.shape[-1] ** -0.5 if scaling is None else scaling
    if packed:
        return _packed(query, key, value, scale, kwargs["cu_seq_lens_q"]), None
    plain = not getattr(module, "is_causal", False) and key.shape[1] == query.shape[1]
    if plain and _eager(query) and all(kwargs.get(name) is None for name in _OWN_KEYWORDS):
        return _products(query, key, value, attention_mask, scale).transpose(1, 2).contiguous(), None
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    return sdpa_attention_forward(module, query, key, value, attention_mask, dropout, scaling, **kwargs)


def _eager(query: Tensor) -> bool:
    """Whether a batch runs the eager products (not while compiling: one attention for every length)."""
    if query.device.type != "cpu":
        return False
    short = query.shape[2] <= EAGER_CPU_TOKENS and not torch.compiler.is_compiling()
    return query.dtype == torch.bfloat16 or (query.dtype == torch.float32 and short)


def _products(query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None, scale: float) -> Tensor:
    """Transformers' eager attention products, the same operations in the same order."""
    weights = torch.matmul(query, key.transpose(2, 3)) * scale
    if mask is not None:
        weights = (
            weights.masked_fill(~mask, torch.finfo(weights.dtype).min) if mask.dtype == torch.bool else weights + mask
        )
    return torch.matmul(torch.softmax(weights, dim=-1), value)


def _packed(query: Tensor, key: Tensor, value: Tensor, scale: float, bounds: Tensor) -> Tensor:
    """Attention within each text of a packed stream: variable-length on CUDA, else run by run within budget."""
    pack = _PACK.get()
    if pack is None or pack.bounds is not bounds:
        raise RuntimeError("a packed attention call came without the pack it belongs to (`packed_pass` makes both)")
    varlen = _varlen(query)
    if varlen is not None:
        q, k, v = (x[0].transpose(0, 1).contiguous() for x in (query, key, value))  # [tokens, heads, size]
        longest = pack.runs[0][2]
        try:
            return varlen(q, k, v, bounds, bounds, longest, longest, scale=scale).unsqueeze(0)
        except (TypeError, RuntimeError, NotImplementedError) as err:  # per run from now on: the same vectors
            VARLEN_REFUSED.append(f"{type(err).__name__}: {err}"[:300])
    heads, size = query.shape[1], query.shape[3]
    out = torch.empty((1, query.shape[2], heads, size), dtype=query.dtype, device=query.device)
    for first, count, length in pack.runs:
        step = max(1, pack.score_budget // (length * length))
        for lo in range(0, count, step):
            n = min(step, count - lo)
            a, b = first + lo * length, first + (lo + n) * length
            q, k, v = (x[0, :, a:b].unflatten(1, (n, length)).transpose(0, 1) for x in (query, key, value))
            attended = (
                _products(q, k, v, None, scale) if _eager(q) else scaled_dot_product_attention(q, k, v, scale=scale)
            )
            out[0, a:b] = attended.permute(0, 2, 1, 3).reshape(n * length, heads, size)
    return out


def _varlen(query: Tensor) -> Any:
    """torch's variable-length attention where it runs (CUDA, half precision, not yet failed), else None."""
    if not (query.is_cuda and query.dtype in (torch.float16, torch.bfloat16)) or VARLEN_REFUSED:
        return None
    try:
        from torch.nn.attention.varlen import varlen_attn
    except ImportError:
        return None
    return varlen_attn


def packed_forward(
    model: Any, seqs: Sequence[Tensor], score_budget: int, lengths: Sequence[int]
) -> tuple[Tensor, list[int]]:
    """`packed_pass` of sequences (of these `lengths`) in any order: the stream and each sequence's first row."""
    order = sorted(range(len(seqs)), key=lambda i: -lengths[i])
    ordered = [lengths[k] for k in order]
    hidden = packed_pass(model, torch.cat([seqs[k] for k in order]), ordered, score_budget)
    starts = [0] * len(seqs)
    for k, first in zip(order, accumulate([0, *ordered]), strict=False):
        starts[k] = first
    return hidden, starts


def packed_pass(model: Any, ids: Tensor, lengths: Sequence[int], score_budget: int) -> Tensor:
    """Last hidden states of one packed pass over texts end to end, longest first: positions restart
    per text and the bounds go as transformers' variable-length keywords."""
    device = next(model.parameters()).device
    host = ids.to(torch.long)
    runs: list[tuple[int, int, int]] = []
    first = 0
    for length, run in groupby(lengths):
        count = sum(1 for _ in run)
        if runs and length > runs[-1][2]:
            raise ValueError(f"packed_pass takes its texts longest first; a text of {length} tokens follows shorter")
        runs.append((first, count, length))
        first += count * length
    sizes = torch.tensor(lengths, dtype=torch.int32)
    bounds = send(torch.nn.functional.pad(sizes.cumsum(0, dtype=torch.int32), (1, 0)), device)
    positions = packed_positions(model, host, sizes.long())
    longest = runs[0][2]
    token = _PACK.set(Pack(runs, bounds, score_budget))
    try:
        out = model(
            input_ids=send(host, device)[None],
            position_ids=send(positions, device)[None],
            cu_seq_lens_q=bounds,
            cu_seq_lens_k=bounds,
            max_length_q=longest,
            max_length_k=longest,
        )
    finally:
        _PACK.reset(token)
    return out[0][0]


@cache
def _register() -> None:
    from transformers import AttentionInterface, AttentionMaskInterface
    from transformers.masking_utils import sdpa_mask

    AttentionInterface.register(ATTENTION_NAME, attention)
    AttentionMaskInterface.register(ATTENTION_NAME, sdpa_mask)  # the masks scaled-dot-product attention takes


def install(model: nn.Module, packing_family: bool) -> bool:
    """Select our attention for a model whose own is SDPA; return whether it packs (its family may and a
    packed pass of two texts matches each alone)."""
    if attention_implementation(model) not in ("sdpa", ATTENTION_NAME):  # (ours: a model installed before)
        return False
    _register()
    with _quiet(), suppress(AttributeError, ValueError):
        model.set_attn_implementation(ATTENTION_NAME)  # type: ignore[operator]
    if attention_implementation(model) != ATTENTION_NAME or not packing_family:
        return False
    try:
        vocab = int(getattr(model.config, "vocab_size", 0) or 16)
        device = next(model.parameters()).device
        texts = [torch.arange(5, 9) % vocab, torch.arange(9, 12) % vocab]
        with torch.inference_mode():
            alone = [
                model(input_ids=t[None].to(device), attention_mask=torch.ones_like(t)[None].to(device))[0][0]
                for t in texts
            ]
            stream = packed_pass(model, torch.cat(texts), [len(t) for t in texts], 1 << 20)
        return torch.allclose(stream.float(), torch.cat(alone).float(), atol=1e-4, rtol=0)
    except (TypeError, ValueError, RuntimeError, IndexError):  # a forward that refuses the packing keywords
        return False


@contextmanager
def _quiet() -> Iterator[None]:
    """transformers' warnings off while switching (the probe finds a family that cannot)."""
    from transformers.utils import logging as hf_logging

    before = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        yield
    finally:
        hf_logging.set_verbosity(before)
