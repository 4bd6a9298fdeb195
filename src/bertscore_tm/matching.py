"""Matching: greedy cosine matching of token vectors, and the weighted P, R, F it leads to.

Stage one (`greedy_match`) embeds the texts of a block of (candidate, reference) matches, each unique text
once, and keeps for every token only its best similarity on the other side: the embeddings are dropped
after each block, so memory is bounded by the block and not by the number of pairs. Those best
similarities do not depend on the weights, so IDF (which needs every reference of every rank) is applied
afterwards, in stage two (`weighted_scores`). Padding is masked out and never counts as a match.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from bertscore_tm.embedding import Embedder


def ragged_arange(starts: Tensor, lengths: Tensor) -> Tensor:
    """Concatenation of arange(start, start + length) for each pair; int64."""
    lengths = lengths.long()
    total = int(lengths.sum())
    if total == 0:
        return torch.zeros(0, dtype=torch.long, device=starts.device)
    seg_start = torch.cumsum(lengths, 0) - lengths
    shift = torch.repeat_interleave(starts.long() - seg_start, lengths)
    return torch.arange(total, device=starts.device) + shift


def _blocks(match_cand: Sequence[int], match_ref: Sequence[int], lengths: Sequence[int], block_tokens: int) -> list[tuple[int, int]]:
    """Consecutive ranges of matches whose distinct texts hold at most about `block_tokens` tokens."""
    blocks: list[tuple[int, int]] = []
    start, seen, tokens = 0, set(), 0
    for m, (c, r) in enumerate(zip(match_cand, match_ref)):
        new = {t for t in (c, r) if t not in seen}
        extra = sum(lengths[t] for t in new)
        if m > start and tokens + extra > block_tokens:
            blocks.append((start, m))
            start, seen, tokens = m, set(), 0
            new = {c, r}
            extra = sum(lengths[t] for t in new)
        seen |= new
        tokens += extra
    if start < len(match_cand):
        blocks.append((start, len(match_cand)))
    return blocks


def greedy_match(
    embedder: Embedder,
    texts: Sequence[Tensor],
    match_cand: Sequence[int],
    match_ref: Sequence[int],
    block_bytes: int = 32 << 20,
    gather_budget: int = 1 << 22,
    progress: object | None = None,
) -> tuple[Tensor, Tensor]:
    """Best similarity of every token of every match, float32 on the embedder's device.

    `texts` are distinct token-id sequences; match m pairs candidate text `match_cand[m]` with reference
    text `match_ref[m]`. Returns (cand_best, ref_best): cand_best holds, match after match, one row per
    candidate token (its best similarity over the reference's tokens), ref_best one row per reference token;
    each row has one column per layer. A token with nothing to match against gets 0.

    Matches are taken in order of length, in blocks whose new embeddings fit in `block_bytes`; a text
    needed by a later block is kept (and only such texts), so each distinct text is embedded once. Matching
    batches hold at most `gather_budget` gathered vector elements.
    """
    device = embedder.device
    rows = embedder.num_rows
    lengths = [len(t) for t in texts]
    len_t = torch.tensor(lengths, dtype=torch.long)
    mc = torch.tensor(list(match_cand), dtype=torch.long)
    mr = torch.tensor(list(match_ref), dtype=torch.long)
    lc, lr = len_t[mc], len_t[mr]
    out_c_start = torch.cumsum(lc, 0) - lc
    out_r_start = torch.cumsum(lr, 0) - lr
    cand_best = torch.zeros((int(lc.sum()), rows), dtype=torch.float32, device=device)
    ref_best = torch.zeros((int(lr.sum()), rows), dtype=torch.float32, device=device)

    # similar lengths in a block keep padding small; results land at each match's own offsets
    by_length = torch.argsort(lc * 4096 + lr, stable=True).tolist()
    sorted_cand = [match_cand[m] for m in by_length]
    sorted_ref = [match_ref[m] for m in by_length]
    block_tokens = max(512, block_bytes // (4 * rows * embedder.hidden_size))
    last_use: dict[int, int] = {}
    blocks = _blocks(sorted_cand, sorted_ref, lengths, block_tokens)
    for b, (lo, hi) in enumerate(blocks):
        for t in (*sorted_cand[lo:hi], *sorted_ref[lo:hi]):
            last_use[t] = b
    cache: dict[int, Tensor] = {}
    order_t = torch.tensor(by_length, dtype=torch.long)
    for b, (lo, hi) in enumerate(blocks):
        block_texts = list(dict.fromkeys((*sorted_cand[lo:hi], *sorted_ref[lo:hi])))
        fresh = [t for t in block_texts if t not in cache]
        kept = [t for t in block_texts if t in cache]
        spare = sum(lengths[t] for t in kept) + 1  # texts embedded by an earlier block, and a padding row
        table, starts = embedder.embed([texts[t] for t in fresh], progress=progress, spare_rows=spare)
        start_of = dict(zip(fresh, starts.tolist()))
        offset = table.shape[0] - spare
        for t in kept:
            table[offset : offset + lengths[t]] = cache[t]
            start_of[t] = offset
            offset += lengths[t]
        pad_row = table.shape[0] - 1
        table[pad_row] = 0
        # keep what later blocks need, drop the rest
        for t in fresh:
            if last_use[t] > b:
                cache[t] = table[start_of[t] : start_of[t] + lengths[t]].clone()
        for t in kept:
            if last_use[t] <= b:
                del cache[t]
        text_start = torch.full((len(texts),), pad_row, dtype=torch.long)
        for t, s in start_of.items():
            text_start[t] = s
        sel = order_t[lo:hi]
        _match_block(
            table, pad_row, text_start, mc[sel], mr[sel], lc[sel], lr[sel],
            out_c_start[sel], out_r_start[sel], cand_best, ref_best, rows, gather_budget,
        )
        del table
        release_freed_memory()
    return cand_best, ref_best


def _load_malloc_trim():  # noqa: ANN202
    try:
        import ctypes

        return ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):  # not glibc: nothing to do
        return None


_MALLOC_TRIM = _load_malloc_trim()


def release_freed_memory() -> None:
    """Hand the heap memory freed by a block back to the OS (glibc keeps it otherwise, so the resident
    size would creep up block after block even though nothing is held)."""
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)


def _match_block(
    table: Tensor, pad_row: int, text_start: Tensor, mc: Tensor, mr: Tensor, lc: Tensor, lr: Tensor,
    out_c: Tensor, out_r: Tensor, cand_best: Tensor, ref_best: Tensor, rows: int, gather_budget: int,
) -> None:
    device = table.device
    width = table.shape[-1]
    order = torch.argsort(torch.maximum(lc, lr), descending=True, stable=True)
    pos = 0
    n = len(order)
    while pos < n:
        # sorted by the longer side, so no later match has a side longer than this one's longer side
        longest = int(torch.maximum(lc[order[pos]], lr[order[pos]]))
        per = max(1, 2 * longest * width * rows, longest * longest * rows)
        count = max(1, min(n - pos, gather_budget // per))
        idx = order[pos : pos + count]
        pos += count
        bc, br = int(lc[idx].max()), int(lr[idx].max())
        ar_c, ar_r = torch.arange(bc), torch.arange(br)
        cmask = ar_c[None, :] < lc[idx][:, None]
        rmask = ar_r[None, :] < lr[idx][:, None]
        cgather = torch.where(cmask, text_start[mc[idx]][:, None] + ar_c[None, :], pad_row)
        rgather = torch.where(rmask, text_start[mr[idx]][:, None] + ar_r[None, :], pad_row)
        cmask_d, rmask_d = cmask.to(device), rmask.to(device)
        c = table[cgather.to(device)]  # [B, Lc, (rows,) D]
        r = table[rgather.to(device)]
        if rows > 1:
            c = c.permute(2, 0, 1, 3).reshape(rows * len(idx), bc, -1)
            r = r.permute(2, 0, 1, 3).reshape(rows * len(idx), br, -1)
        sim = torch.bmm(c, r.transpose(1, 2)).view(rows, len(idx), bc, br)
        valid = cmask_d[:, :, None] & rmask_d[:, None, :]
        sim = sim.masked_fill(~valid, float("-inf"))
        best_c = sim.amax(dim=3)  # [rows, B, Lc]
        best_r = sim.amax(dim=2)  # [rows, B, Lr]
        best_c = best_c.masked_fill(torch.isinf(best_c), 0.0)
        best_r = best_r.masked_fill(torch.isinf(best_r), 0.0)
        dest_c = (out_c[idx][:, None] + ar_c[None, :])[cmask].to(device)
        dest_r = (out_r[idx][:, None] + ar_r[None, :])[rmask].to(device)
        cand_best[dest_c] = best_c.permute(1, 2, 0)[cmask_d]
        ref_best[dest_r] = best_r.permute(1, 2, 0)[rmask_d]


def segment_sum(values: Tensor, lengths: Tensor) -> Tensor:
    """Sums of consecutive segments of `values` (first dimension) with the given lengths."""
    seg = torch.repeat_interleave(torch.arange(len(lengths), device=values.device), lengths.to(values.device))
    out = torch.zeros((len(lengths), *values.shape[1:]), dtype=values.dtype, device=values.device)
    return out.index_add_(0, seg, values)


def weighted_scores(
    cand_best: Tensor, cand_weight: Tensor, cand_len: Tensor,
    ref_best: Tensor, ref_weight: Tensor, ref_len: Tensor,
    blank: Tensor,
) -> Tensor:
    """P, R, F of each match: [matches, rows, 3] float32.

    P is the weight-averaged best similarity of the candidate's tokens, R of the reference's; F their
    harmonic mean, 0 where undefined. Matches with a blank side (`blank`) score 0, as in the reference.
    """
    cw = cand_weight.to(torch.float64)[:, None]
    rw = ref_weight.to(torch.float64)[:, None]
    p = segment_sum(cand_best.to(torch.float64) * cw, cand_len) / segment_sum(cw, cand_len)
    r = segment_sum(ref_best.to(torch.float64) * rw, ref_len) / segment_sum(rw, ref_len)
    f = 2 * p * r / (p + r)
    blank = blank.to(p.device)[:, None]
    f = f.masked_fill(torch.isnan(f) | blank, 0.0)
    p = p.masked_fill(blank, 0.0)
    r = r.masked_fill(blank, 0.0)
    return torch.stack((p, r, f), dim=-1).to(torch.float32)


def best_of_references(scores: Tensor, ref_counts: Tensor) -> Tensor:
    """Per candidate, the maximum over its references, separately for P, R and F: [cands, rows, 3]."""
    owner = torch.repeat_interleave(torch.arange(len(ref_counts), device=scores.device), ref_counts.to(scores.device))
    out = torch.full((len(ref_counts), *scores.shape[1:]), float("-inf"), dtype=scores.dtype, device=scores.device)
    index = owner.view(-1, *([1] * (scores.dim() - 1))).expand_as(scores)
    return out.scatter_reduce(0, index, scores, reduce="amax", include_self=True)
