"""The paired engine's schedule: embed a block of matches' texts (each distinct text once), keep each token's
best similarity, drop the vectors; memory is bounded by the block, not by the number of pairs. IDF needs every
reference of every rank, so the weights are applied afterwards (`ragged_scores`)."""

from __future__ import annotations

import ctypes
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import cast

import torch
from torch import Tensor

from bertscore_tm.embedding.embedder import Embedder
from bertscore_tm.embedding.rows import TokenTexts, ragged_arange, send
from bertscore_tm.errors import DeviceMemoryError, warn_user
from bertscore_tm.scoring.kernel import best_similarities, f_scores, weighted_mean
from bertscore_tm.scoring.longpairs import Bests, match_large_in_tiles, stream_matches
from bertscore_tm.scoring.token_rules import kept


def _blocks(
    match_cand: Sequence[int], match_ref: Sequence[int], lengths: Sequence[int], block_tokens: int
) -> tuple[list[tuple[int, int]], list[int]]:
    """Consecutive ranges of matches whose distinct texts hold at most `block_tokens` tokens (at least one match
    each), and their token counts."""
    blocks: list[tuple[int, int]] = []
    sizes: list[int] = []
    start, tokens = 0, 0
    seen: set[int] = set()
    for m, (c, r) in enumerate(zip(match_cand, match_ref, strict=True)):  # plain ints and sets: 100,000s of matches
        extra = (c not in seen) * lengths[c] + (r != c and r not in seen) * lengths[r]
        if m > start and tokens + extra > block_tokens:
            blocks.append((start, m))
            sizes.append(tokens)
            start, seen, tokens = m, set(), 0
            extra = lengths[c] + (r != c) * lengths[r]
        seen.add(c)
        seen.add(r)
        tokens += extra
    if start < len(match_cand):
        blocks.append((start, len(match_cand)))
        sizes.append(tokens)
    return blocks, sizes


@dataclass(frozen=True)
class MatchPlan:
    """`greedy_match`'s plan: block b runs ``order[blocks[b][0] : blocks[b][1]]`` in one table of `capacity` rows.
    `last_use[t]` is the last block needing text t (-1: none), so only texts needed again are kept aside; match m's
    bests go to rows ``cand_rows[m]`` and ``ref_rows[m]`` on."""

    order: Tensor
    blocks: list[tuple[int, int]]
    capacity: int
    last_use: Tensor
    cand_lengths: Tensor
    ref_lengths: Tensor
    cand_rows: Tensor
    ref_rows: Tensor
    #: matches (window mode only) whose texts alone outgrow the table: streamed through it after the blocks
    streamed: Tensor = field(default_factory=lambda: torch.zeros(0, dtype=torch.long))


def plan_matches(
    texts: TokenTexts,
    match_cand: Tensor,
    match_ref: Tensor,
    *,
    rows: int,
    row_bytes: int,
    budget_bytes: int,
    min_block_tokens: int,
    plan_in_budget: bool,
    long_texts: bool = False,
) -> MatchPlan:
    """Plan a greedy matching's blocks (pure: nothing embedded). Matches are sorted by their texts' total
    length, so a block's forward and matching batches are full and hold little padding. The results (and on the
    CPU the plan itself) come out of `budget_bytes` first; the table gets the rest, never under `min_block_tokens`
    rows. With `long_texts`, a match too long for the table is `streamed` instead."""
    mc, mr = match_cand.int(), match_ref.int()
    lc, lr = texts.length[mc].long(), texts.length[mr].long()
    out_c, out_r = torch.cumsum(lc, 0) - lc, torch.cumsum(lr, 0) - lr  # where each match's rows go
    order = torch.argsort(lc + lr, stable=True)
    if len(mc) == 0:
        return MatchPlan(order, [], 0, torch.full((len(texts),), -1, dtype=torch.int32), lc, lr, out_c, out_r)
    held_bytes = 4 * rows * int(lc.sum() + lr.sum())  # the results
    if plan_in_budget:
        plan = [texts.which, texts.start, texts.length, match_cand, match_ref, mc, mr, lc, lr, out_c, out_r, order]
        held_bytes += sum(t.numel() * t.element_size() for t in {t.data_ptr(): t for t in plan}.values())
    held_bytes += 4 * len(texts)  # last_use, below
    block_tokens = max(min_block_tokens, (budget_bytes - held_bytes) // row_bytes)
    alone = torch.where(mc == mr, lc, lc + lr) if long_texts else torch.zeros_like(lc)
    streamed = order[alone[order] > block_tokens]
    order = order[alone[order] <= block_tokens]
    sorted_c, sorted_r = mc[order].long(), mr[order].long()
    blocks, block_sizes = _blocks(sorted_c.tolist(), sorted_r.tolist(), texts.length.tolist(), block_tokens)
    block_of = torch.repeat_interleave(
        torch.arange(len(blocks), dtype=torch.int32), torch.tensor([hi - lo for lo, hi in blocks], dtype=torch.long)
    )
    last_use = torch.full((len(texts),), -1, dtype=torch.int32)
    last_use.scatter_reduce_(0, sorted_c, block_of, reduce="amax")
    last_use.scatter_reduce_(0, sorted_r, block_of, reduce="amax")
    capacity = max(block_sizes) if len(blocks) == 1 and not len(streamed) else max([block_tokens, *block_sizes])
    return MatchPlan(order, blocks, capacity, last_use, lc, lr, out_c, out_r, streamed)


def gather_elements(device: torch.device) -> int:
    """Gathered elements per matching batch: on a CPU few enough that a batch stays in cache from the gather
    to the product; accelerators take larger batches, for fewer launches."""
    return 1 << 20 if device.type == "cpu" else 1 << 22


def greedy_match(
    embedder: Embedder,
    texts: TokenTexts,
    match_cand: Tensor,
    match_ref: Tensor,
    block_bytes: int | None = None,
    gather_budget: int | None = None,
    progress: object | None = None,
    ignored: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    """Best similarity of every token of every match, float32 [tokens, layers] on the embedder's device.

    Match m pairs text `match_cand[m]` with text `match_ref[m]`; (cand_best, ref_best) lie match after match, 0
    where a token has nothing to match. Blocks share one table of vectors within `block_bytes`, so a compute's
    working memory does not grow with the pairs. Where an accelerator runs out of memory the plan is made again with
    half the budget, while that shrinks the table, with one warning. Tokens `ignored` flags are no match."""
    first = budget = embedder.block_bytes if block_bytes is None else block_bytes
    tokens = embedder.max_tokens
    lost: DeviceMemoryError | None = None  # the error of the last plan that ran out of memory
    capacity = 0  # that plan's table rows
    while True:
        plan = plan_matches(
            texts,
            match_cand,
            match_ref,
            rows=embedder.num_rows,
            row_bytes=4 * embedder.num_rows * embedder.hidden_size,
            budget_bytes=budget,
            min_block_tokens=max(512, 2 * embedder.max_tokens),
            plan_in_budget=embedder.device.type == "cpu",
            long_texts=embedder.windows is not None,
        )
        if lost is not None and plan.capacity >= capacity:  # a smaller budget no longer shrinks the table
            raise lost
        try:
            best = run_plan(embedder, texts, match_cand, match_ref, plan, gather_budget, progress, ignored)
        except DeviceMemoryError as err:  # the work of this plan is dropped; the next starts from the first block
            lost, capacity, budget = err, plan.capacity, budget // 2
            embedder.max_tokens = tokens  # the forward passes beside a smaller table may fit in larger batches
            continue
        if budget != first:
            warn_user(
                f"The memory of {embedder.device} could not hold the table of token vectors of a {first >> 20} MiB "
                f"working budget together with the forward passes; it went on with {budget >> 20} MiB (smaller "
                "blocks; the same scores, to the last float32 bit of an accelerator's products: docs/semantics.md)."
            )
        return best


def run_plan(
    embedder: Embedder,
    texts: TokenTexts,
    match_cand: Tensor,
    match_ref: Tensor,
    plan: MatchPlan,
    gather_budget: int | None = None,
    progress: object | None = None,
    ignored: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    """Run a `plan_matches` plan: embed each block's new texts into the one table, match, keep the bests."""
    device = embedder.device
    rows = embedder.num_rows
    cand_best = torch.zeros((int(plan.cand_lengths.sum()), rows), dtype=torch.float32, device=device)
    ref_best = torch.zeros((int(plan.ref_lengths.sum()), rows), dtype=torch.float32, device=device)
    if not plan.blocks and not len(plan.streamed):
        return cand_best, ref_best
    budget = gather_elements(device) if gather_budget is None else gather_budget
    bests = Bests(cand_best, ref_best, plan.cand_rows, plan.ref_rows, budget)
    mc, mr = match_cand.int(), match_ref.int()
    # one table for every block, and a zero padding row
    table, pad_row = embedder.new_table(plan.capacity + 1), plan.capacity
    table[pad_row] = 0
    aside = KeptAside(plan.last_use, texts.length)
    for b, (lo, hi) in enumerate(plan.blocks):
        sel = plan.order[lo:hi]
        block_cand, block_ref = mc[sel].tolist(), mr[sel].tolist()
        needed = list(dict.fromkeys(block_cand + block_ref))
        start_of, fresh = aside.fill(embedder, table, needed, texts.many, texts.heads, b, progress)
        c_rows = torch.tensor([start_of[t] for t in block_cand], dtype=torch.long)
        r_rows = torch.tensor([start_of[t] for t in block_ref], dtype=torch.long)
        live = None if ignored is None else _live_rows(texts, start_of, ignored, pad_row + 1, device)
        lengths = (plan.cand_lengths[sel], plan.ref_lengths[sel])
        _match_block(table, pad_row, c_rows, r_rows, *lengths, bests.of(sel), embedder.windows is not None, live)
        aside.keep(table, fresh, start_of, b)
    if len(plan.streamed):  # long texts (bertscore_tm.scoring.longpairs)
        counted = plan.last_use >= 0
        stream_matches(embedder, texts, table[:pad_row], plan.streamed, mc, mr, bests, counted, progress, ignored)
    del table, aside
    if _MALLOC_TRIM is not None:  # hand what the blocks freed back to the OS: glibc keeps it, block after block
        _MALLOC_TRIM(0)
    return cand_best, ref_best


def _live_rows(texts: TokenTexts, start_of: dict[int, int], ignored: Tensor, size: int, device: torch.device) -> Tensor:
    """Which table rows hold a token that takes part in the matching (padding and unused rows none)."""
    live = torch.zeros(size, dtype=torch.bool)
    flags = ignored.cpu()
    for t, start in start_of.items():
        ids = texts[t].long()
        live[start : start + len(ids)] = cast(Tensor, kept(ids, texts.marks(t), flags))
    return live.to(device)


class KeptAside:
    """The vectors of texts a later block needs again, kept between blocks so that each text is embedded once."""

    def __init__(self, last_use: Tensor, length: Tensor) -> None:
        self.last_use, self.length = last_use, length
        self.kept: dict[int, Tensor] = {}

    def fill(
        self,
        embedder: Embedder,
        table: Tensor,
        needed: list[int],
        seqs_of: Callable[[list[int]], Sequence[Tensor]],
        heads_of: Callable[[list[int]], list[int] | None],
        block: int,
        progress: object | None = None,
    ) -> tuple[dict[int, int], list[int]]:
        """Put the `needed` texts' vectors into `table` from row 0: the new ones (their ids `seqs_of`, their heads
        `heads_of`) embedded longest first (the embedder's batch order, so each batch is normalised straight into
        its rows), the kept ones copied in. Returns each text's first row and the texts embedded now."""
        new = torch.tensor([t for t in needed if t not in self.kept] if self.kept else needed, dtype=torch.long)
        sizes = self.length[new]
        by_length = torch.argsort(sizes, descending=True, stable=True)
        fresh, lengths = new[by_length].tolist(), sizes[by_length].tolist()
        starts = embedder.embed_into(table, seqs_of(fresh), progress=progress, lengths=lengths, heads=heads_of(fresh))
        start_of = dict(zip(fresh, starts, strict=True))
        row = starts[-1] + lengths[-1] if fresh else 0
        for t in needed:
            if t in self.kept:  # embedded by an earlier block
                vectors = self.kept.pop(t) if int(self.last_use[t]) <= block else self.kept[t]
                table[row : row + len(vectors)] = vectors
                start_of[t] = row
                row += len(vectors)
        return start_of, fresh

    def keep(self, table: Tensor, fresh: list[int], start_of: dict[int, int], block: int) -> None:
        """Keep aside the texts `block` embedded that a later block needs."""
        index = torch.tensor(fresh, dtype=torch.long)
        later = (self.last_use[index] > block).tolist()
        for t, size, needed_later in zip(fresh, self.length[index].tolist(), later, strict=True):
            if needed_later:
                self.kept[t] = table[start_of[t] : start_of[t] + size].clone()


try:
    _MALLOC_TRIM: Callable[[int], int] | None = ctypes.CDLL("libc.so.6").malloc_trim
except (OSError, AttributeError):  # not glibc: nothing to do
    _MALLOC_TRIM = None


def _match_block(
    table: Tensor,
    pad_row: int,
    c_rows: Tensor,
    r_rows: Tensor,
    lc: Tensor,
    lr: Tensor,
    bests: Bests,
    tiled: bool = False,
    live: Tensor | None = None,
) -> None:
    """Match i: the candidate at table rows ``c_rows[i]`` on (``lc[i]`` of them) against the reference at
    ``r_rows[i]`` on, into `bests`' match i. With `tiled` (long texts), a match whose matrix alone passes the
    budget is matched in tiles; rows `live` does not flag are no match and keep 0."""
    device = table.device
    rows = 1 if table.dim() == 2 else table.shape[1]
    order = torch.argsort(torch.maximum(lc, lr), descending=True, stable=True)
    if tiled:
        done = match_large_in_tiles(table, c_rows, r_rows, lc, lr, bests, live)
        order = order[~done[order]]
    if not len(order):
        return
    # the matches in that order, cut into batches; their rows made on the host and sent once a side (no device wait)
    sorted_rows = (t[order].cpu() for t in (lc, lr, c_rows, r_rows, bests.cand_at, bests.ref_at))
    lc, lr, c_rows, r_rows, out_c, out_r = sorted_rows
    sizes_c, sizes_r = lc.tolist(), lr.tolist()
    batches = matching_batches(sizes_c, sizes_r, table.shape[-1] * rows, rows, bests.budget)
    sides = [
        _BatchRows([(lo, hi, batch[side]) for lo, hi, *batch in batches], at, lengths, out, pad_row, device)
        for side, at, lengths, out in ((0, c_rows, lc, out_c), (1, r_rows, lr, out_r))
    ]
    for b, (lo, hi, _, _) in enumerate(batches):
        (c_at, cmask), (r_at, rmask) = sides[0].gathered(b), sides[1].gathered(b)
        c, r = table[c_at], table[r_at]  # [B, Lc, (rows,) D], [B, Lr, (rows,) D]
        if rows > 1:  # [rows, B, L, D], as views: the kernel lays them out as it converts them
            c, r = c.permute(2, 0, 1, 3), r.permute(2, 0, 1, 3)
        else:
            c, r = c[None], r[None]
        padded = not (min(sizes_c[lo:hi]) == max(sizes_c[lo:hi]) and min(sizes_r[lo:hi]) == max(sizes_r[lo:hi]))
        live_c, live_r = (cmask, rmask) if live is None else (live[c_at], live[r_at])
        found = best_similarities(c, r, *((live_c, live_r) if padded or live is not None else (None, None)))
        sides[0].put(b, bests.cand, found.cand)  # [rows, B, Lc]
        sides[1].put(b, bests.ref, found.ref)  # [rows, B, Lr]


def matching_batches(
    sizes_c: Sequence[int], sizes_r: Sequence[int], row_elements: int, rows: int, gather_budget: int
) -> list[tuple[int, int, int, int]]:
    """Batches (first, end, longest candidate, longest reference) of matches sorted longest first, each
    within `gather_budget` gathered elements or similarities, and at least one match.

    >>> matching_batches([5, 4, 2, 1], [3, 4, 2, 1], row_elements=2, rows=1, gather_budget=50)
    [(0, 2, 5, 4), (2, 4, 2, 2)]
    """
    out, pos, n = [], 0, len(sizes_c)
    while pos < n:
        # sorted by the longer side, so no later match has a side longer than this one's longer side
        longest = max(sizes_c[pos], sizes_r[pos])
        per = max(1, 2 * longest * row_elements, longest * longest * rows)
        end = pos + max(1, min(n - pos, gather_budget // per))
        out.append((pos, end, max(sizes_c[pos:end]), max(sizes_r[pos:end])))
        pos = end
    return out


class _BatchRows:
    """One side's gather and scatter rows for every batch of a block, made on the host and sent once, so that a
    batch only slices them and nothing is sent or read back per batch."""

    def __init__(
        self,
        batches: list[tuple[int, int, int]],
        at: Tensor,
        lengths: Tensor,
        out: Tensor,
        pad_row: int,
        device: torch.device,
    ) -> None:
        lo, hi, width = torch.tensor(batches, dtype=torch.long).unbind(1)
        lo_of, width_of = (torch.repeat_interleave(t, hi - lo) for t in (lo, width))
        first = (torch.arange(len(lengths)) - lo_of) * width_of  # each match's first element in its batch's [B, L]
        edges = torch.nn.functional.pad(torch.cumsum(lengths, 0), (1, 0))  # each match's first result token
        self.tokens = list(zip(edges[lo].tolist(), edges[hi].tolist(), strict=True))
        self.src = send(ragged_arange(first, lengths), device)
        self.dst = send(ragged_arange(out, lengths), device)
        # the gather: each match's row of its batch's [B, L], its own rows then the padding row
        position = ragged_arange(torch.zeros_like(width_of), width_of)
        owner = torch.repeat_interleave(torch.arange(len(lengths)), width_of)
        inside = position < lengths[owner]
        self.at = send(torch.where(inside, at[owner] + position, pad_row), device)
        self.inside = send(inside, device)
        ends = torch.cumsum((hi - lo) * width, 0)
        self.spans = list(zip((ends - (hi - lo) * width).tolist(), (hi - lo).tolist(), width.tolist(), strict=True))

    def gathered(self, b: int) -> tuple[Tensor, Tensor]:
        """Batch `b`'s table rows to gather ([B, L]) and which of them are its texts' own tokens."""
        first, count, width = self.spans[b]
        span = slice(first, first + count * width)
        return self.at[span].view(count, width), self.inside[span].view(count, width)

    def put(self, b: int, best: Tensor, batch: Tensor) -> None:
        """Write batch `b`'s bests ([rows, B, L]) into their rows of `best`."""
        a, z = self.tokens[b]
        flat = batch.permute(1, 2, 0).reshape(-1, batch.shape[0])  # [B * L, rows]
        best[self.dst[a:z]] = flat[self.src[a:z]]


def segment_sum(values: Tensor, lengths: Tensor) -> Tensor:
    """Sums of consecutive segments of `values` (first dimension) with the given lengths."""
    seg = torch.repeat_interleave(torch.arange(len(lengths), device=values.device), lengths.to(values.device))
    out = torch.zeros((len(lengths), *values.shape[1:]), dtype=values.dtype, device=values.device)
    return out.index_add_(0, seg, values)


def ragged_scores(
    cand_best: Tensor,
    cand_weight: Tensor,
    cand_len: Tensor,
    ref_best: Tensor,
    ref_weight: Tensor,
    ref_len: Tensor,
    blank: Tensor,
    beta: float | None = None,
) -> Tensor:
    """P, R, F (F-beta fourth) [matches, rows, 3 or 4] from per-token bests laid end to end (`cand_len`
    tokens a match), by the kernel's rules; a match with a blank side scores 0."""
    p = ragged_mean(cand_best, cand_weight, cand_len)
    r = ragged_mean(ref_best, ref_weight, ref_len)
    return f_scores(p, r, blank.to(p.device)[:, None], beta)


def ragged_mean(best: Tensor, weight: Tensor, lengths: Tensor) -> Tensor:
    """`kernel.weighted_mean` of consecutive segments: float64 [segments, rows]. Segments are padded in runs of
    lengths within a quarter of each other, so padding adds at most a third."""
    device = best.device
    lengths = lengths.to(device).long()
    starts = torch.cumsum(lengths, 0) - lengths
    out = torch.empty((len(lengths), best.shape[1]), dtype=torch.float64, device=device)
    run = torch.floor(torch.log(lengths.clamp(min=1).double()) / math.log(4 / 3)).long()
    for k in torch.unique(run).tolist():
        members = torch.nonzero(run == k).flatten()
        size = lengths[members]
        inside = torch.arange(int(size.max()), device=device)[None, :] < size[:, None]
        at = ragged_arange(starts[members], size)
        padded = torch.zeros((*inside.shape, best.shape[1]), dtype=best.dtype, device=device)
        padded[inside] = best[at]
        weights = torch.zeros(inside.shape, dtype=torch.float64, device=device)
        weights[inside] = weight[at].to(torch.float64)
        out[members] = weighted_mean(padded.transpose(1, 2), weights[:, None, :])
    return out


def best_of_references(scores: Tensor, ref_counts: Tensor) -> Tensor:
    """Per candidate, the maximum over its references of each score: [cands, rows, 3 or 4]."""
    owner = torch.repeat_interleave(torch.arange(len(ref_counts), device=scores.device), ref_counts.to(scores.device))
    out = torch.full((len(ref_counts), *scores.shape[1:]), float("-inf"), dtype=scores.dtype, device=scores.device)
    index = owner.view(-1, *([1] * (scores.dim() - 1))).expand_as(scores)
    return out.scatter_reduce(0, index, scores, reduce="amax", include_self=True)
