"""Matching: the paired engine's schedule of greedy matching, and the weighing of its results.

Stage one (`greedy_match`: `plan_matches`, a pure plan of blocks, then `run_plan`) embeds the texts of a block
of (candidate, reference) matches, each unique text once, and keeps for every token only its best similarity
on the other side (`kernel.best_similarities`, a batch of matches at a time): the embeddings are dropped after
each block, so memory is bounded by the block and not by the number of pairs. Those best similarities do not
depend on the weights, so IDF (which needs every reference of every rank) is applied afterwards, in stage two
(`ragged_scores`, the kernel's weighing). Padding is masked out and never counts as a match.
Windowed long texts (long_texts="window") may outgrow a block or one similarity matrix: those matches are
streamed and tiled in the same budget by `bertscore_tm.scoring.longpairs`.
"""

from __future__ import annotations

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
from bertscore_tm.scoring.longpairs import match_large_in_tiles, stream_matches
from bertscore_tm.scoring.token_rules import kept


def _blocks(
    match_cand: Sequence[int], match_ref: Sequence[int], lengths: Sequence[int], block_tokens: int
) -> tuple[list[tuple[int, int]], list[int]]:
    """Consecutive ranges of matches whose distinct texts hold at most `block_tokens` tokens (or a single
    match, where that alone holds more), and each range's token count."""
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
    """How `greedy_match` runs: the matches in length order, cut into blocks whose texts fit one table.

    `order` lists the matches in the order they run; block b runs ``order[blocks[b][0] : blocks[b][1]]``.
    `capacity` is the table's row count (a zero padding row comes on top). `last_use[t]` is the last block
    that needs text t (-1: none), so a text a later block needs again is kept aside, and only such texts.
    Match m's best similarities go to rows ``cand_rows[m] ..`` (``+ cand_lengths[m]``) of the candidate
    results and ``ref_rows[m] ..`` of the reference results.
    """

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

    @property
    def cand_tokens(self) -> int:
        """Rows of the candidate results: one per candidate token per match."""
        return int(self.cand_lengths.sum())

    @property
    def ref_tokens(self) -> int:
        return int(self.ref_lengths.sum())


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
    """Plan the blocks of a greedy matching (pure: no model, nothing embedded).

    Matches are sorted by their two texts' total length, so a block's texts are of similar lengths on both
    sides: its forward batches (of one length each) are fewer and fuller than with the candidates sorted and the
    references of any length, and its matching batches hold little padding. The results (`rows` float32
    per token of every match) and, where `plan_in_budget` (on the CPU, where they share memory), the plan's own
    tensors are taken from `budget_bytes` first; the table gets the rest, `row_bytes` a token, but never less
    than `min_block_tokens` rows. With `long_texts` (window mode), a match whose texts alone outgrow the table
    is left out of the blocks and listed in `streamed` instead (`bertscore_tm.scoring.longpairs` runs those).

    >>> texts = TokenTexts((torch.arange(10, dtype=torch.int32),), torch.zeros(3, dtype=torch.uint8),
    ...                    torch.tensor([0, 4, 7]), torch.tensor([4, 3, 3], dtype=torch.int32))
    >>> plan = plan_matches(texts, torch.tensor([0, 1], dtype=torch.int32), torch.tensor([1, 2], dtype=torch.int32),
    ...                     rows=1, row_bytes=16, budget_bytes=1 << 20, min_block_tokens=512, plan_in_budget=True)
    >>> plan.order.tolist(), plan.blocks, plan.capacity, plan.last_use.tolist()
    ([1, 0], [(0, 2)], 10, [0, 0, 0])
    """
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
    """Gathered vector elements per matching batch: on a CPU few enough (4 MiB of float32) that a batch's
    gathered vectors and their float64 copies stay in the processor's cache from the gather through the
    conversion to the product (docs/performance.md, Memory); accelerators take batches four times larger, for
    fewer launches."""
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
    """Best similarity of every token of every match, float32 on the embedder's device.

    `texts` are distinct token-id sequences; match m pairs candidate text `match_cand[m]` with reference
    text `match_ref[m]`. Returns (cand_best, ref_best): cand_best holds, match after match, one row per
    candidate token (its best similarity over the reference's tokens), ref_best one row per reference token;
    each row has one column per layer. A token with nothing to match against gets 0.

    Matches are taken in order of length, in blocks whose texts fit in one table of token vectors,
    allocated once (`plan_matches`, then `run_plan`). The results, and on the CPU the plan itself (a few
    integers per text and per match), share `block_bytes` (default: the embedder's) with that table: so the
    working memory of a compute is the same whatever the number of pairs, and more pairs cost only their
    state, until the table would hold less than two full forward batches; it never gets smaller than that.
    A text a later block needs again is kept aside (and only such texts), so each distinct text is embedded
    once. Matching batches hold at most `gather_budget` gathered vector elements (default: `gather_elements`).

    Where the accelerator has no room for the table, or for one text's forward pass beside it, the plan is made
    again with half the budget (smaller blocks), for as long as that makes the table smaller, with one warning.
    Tokens whose id `ignored` flags (``ignore=``: `token_rules`) are no match and keep 0 as their own best."""
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
    """Run a plan of `plan_matches`: embed each block's new texts into the one table, match, keep the best
    similarities; returns (cand_best, ref_best) as `greedy_match` describes them (its other arguments too)."""
    device = embedder.device
    gather_budget = gather_elements(device) if gather_budget is None else gather_budget
    rows = embedder.num_rows
    cand_best = torch.zeros((plan.cand_tokens, rows), dtype=torch.float32, device=device)
    ref_best = torch.zeros((plan.ref_tokens, rows), dtype=torch.float32, device=device)
    if not plan.blocks and not len(plan.streamed):
        return cand_best, ref_best
    mc, mr = match_cand.int(), match_ref.int()
    lc, lr, out_c, out_r = plan.cand_lengths, plan.ref_lengths, plan.cand_rows, plan.ref_rows
    last_use = plan.last_use
    long_texts = embedder.windows is not None
    # one table for every block, and a zero padding row
    table, pad_row = embedder.new_table(plan.capacity + 1), plan.capacity
    table[pad_row] = 0
    aside = KeptAside(last_use, texts.length)
    for b, (lo, hi) in enumerate(plan.blocks):
        sel = plan.order[lo:hi]
        block_cand, block_ref = mc[sel].tolist(), mr[sel].tolist()
        needed = list(dict.fromkeys(block_cand + block_ref))
        start_of, fresh = aside.fill(embedder, table, needed, texts.many, b, progress)
        c_rows = torch.tensor([start_of[t] for t in block_cand], dtype=torch.long)
        r_rows = torch.tensor([start_of[t] for t in block_ref], dtype=torch.long)
        lens, outs = (lc[sel], lr[sel]), (out_c[sel], out_r[sel])
        live = None if ignored is None else _live_rows(texts, start_of, ignored, pad_row + 1, device)
        _match_block(
            table, pad_row, c_rows, r_rows, *lens, *outs, cand_best, ref_best, rows, gather_budget, long_texts, live
        )
        aside.keep(table, fresh, start_of, b)
    if len(plan.streamed):  # long texts (bertscore_tm.scoring.longpairs)
        stream_matches(
            embedder,
            texts,
            table[: plan.capacity],
            plan.streamed,
            mc,
            mr,
            out_c,
            out_r,
            cand_best,
            ref_best,
            gather_budget,
            counted=last_use >= 0,
            progress=progress,
            ignored=ignored,
        )
    del table, aside
    release_freed_memory()
    return cand_best, ref_best


def _live_rows(texts: TokenTexts, start_of: dict[int, int], ignored: Tensor, size: int, device: torch.device) -> Tensor:
    """Which rows of the table hold a token that takes part in the matching (bool [size]): the block's texts'
    tokens whose id `ignored` does not flag; the rest (padding, unused rows) none."""
    live = torch.zeros(size, dtype=torch.bool)
    flags = ignored.cpu()
    for t, start in start_of.items():
        ids = texts[t].long()
        live[start : start + len(ids)] = cast(Tensor, kept(ids, flags))
    return live.to(device)


class KeptAside:
    """The vectors of texts that a later block needs again, kept between blocks of one table, so that each
    distinct text is embedded once (and only such texts are kept). `last_use[t]` is the last block needing text
    `t`, `length[t]` its number of table rows (both read a block's texts at a time, not a text at a time)."""

    def __init__(self, last_use: Tensor, length: Tensor) -> None:
        self.last_use, self.length = last_use, length
        self.kept: dict[int, Tensor] = {}

    def fill(
        self,
        embedder: Embedder,
        table: Tensor,
        needed: list[int],
        seqs_of: Callable[[list[int]], Sequence[Tensor]],
        block: int,
        progress: object | None = None,
    ) -> tuple[dict[int, int], list[int]]:
        """Put the vectors of the `needed` texts of `block` into `table` from its first row: the new ones
        embedded, the kept ones copied in (and let go after their last block). Returns each text's first row
        and the texts embedded now. The new ones are laid out longest first, the order of the embedder's batches,
        so that each batch is normalised straight into its rows (`Embedder.embed_into`)."""
        new = torch.tensor([t for t in needed if t not in self.kept] if self.kept else needed, dtype=torch.long)
        sizes = self.length[new]
        by_length = torch.argsort(sizes, descending=True, stable=True)
        fresh, lengths = new[by_length].tolist(), sizes[by_length].tolist()
        starts = embedder.embed_into(table, seqs_of(fresh), progress=progress, lengths=lengths)
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
        """Keep aside what later blocks need from the texts `block` embedded."""
        index = torch.tensor(fresh, dtype=torch.long)
        later = (self.last_use[index] > block).tolist()
        for t, size, needed_later in zip(fresh, self.length[index].tolist(), later, strict=True):
            if needed_later:
                self.kept[t] = table[start_of[t] : start_of[t] + size].clone()


def _load_malloc_trim() -> Callable[[int], int] | None:
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
    table: Tensor,
    pad_row: int,
    c_rows: Tensor,
    r_rows: Tensor,
    lc: Tensor,
    lr: Tensor,
    out_c: Tensor,
    out_r: Tensor,
    cand_best: Tensor,
    ref_best: Tensor,
    rows: int,
    gather_budget: int,
    tiled: bool = False,
    live: Tensor | None = None,
) -> None:
    """Match i pairs the candidate at table rows c_rows[i] .. + lc[i] with the reference at r_rows[i] ..
    + lr[i]; the candidate's best similarities go to cand_best rows out_c[i] .., the reference's likewise.
    With `tiled` (window mode), a match whose similarity matrix alone passes the budget is matched in tiles.
    With `live` (a flag per table row), rows not live are no match for the other side and keep 0."""
    device = table.device
    order = torch.argsort(torch.maximum(lc, lr), descending=True, stable=True)
    if tiled:  # long texts: a match whose similarity matrix alone passes the budget is matched in tiles
        done = match_large_in_tiles(
            table, c_rows, r_rows, lc, lr, out_c, out_r, cand_best, ref_best, rows, gather_budget, live
        )
        order = order[~done[order]]
    if not len(order):
        return
    # the matches in that order, cut into batches; their rows made on the host and sent once a side (no device wait)
    lc, lr, c_rows, r_rows, out_c, out_r = (t[order].cpu() for t in (lc, lr, c_rows, r_rows, out_c, out_r))
    sizes_c, sizes_r = lc.tolist(), lr.tolist()
    batches = matching_batches(sizes_c, sizes_r, table.shape[-1] * rows, rows, gather_budget)
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
        sides[0].put(b, cand_best, found.cand)  # [rows, B, Lc]
        sides[1].put(b, ref_best, found.ref)  # [rows, B, Lr]


def matching_batches(
    sizes_c: Sequence[int], sizes_r: Sequence[int], row_elements: int, rows: int, gather_budget: int
) -> list[tuple[int, int, int, int]]:
    """Batches of matches sorted by their longer side, longest first: (first, end, longest candidate, longest
    reference) each, each holding at most `gather_budget` gathered elements (`row_elements` a token: its
    vector's, times the layers) or similarities, and at least one match.

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
    """One side's rows for each matching batch of a block, made on the host for the whole block at once and sent
    to the device in one copy each, so that a batch only slices them: no row numbers are made, sent or read
    back per batch. Match k gathers its tokens from table rows ``at[k] ..`` (``lengths[k]`` of them, then the
    zero padding row up to its batch's width L), and its best similarities ([rows, B, L] a batch) go to rows
    ``out[k] ..`` of the kept results."""

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
        """Write batch `b`'s best similarities ([rows, B, L]) into `best`'s rows."""
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
    """P, R, F of each match (F-beta fourth with `beta`): [matches, rows, 3 or 4] float32, from per-token bests
    laid end to end as `greedy_match` keeps them (`cand_best` [tokens, rows], `cand_len` tokens a match) and
    the tokens' weights; matches with a blank side (`blank`) score 0. Each side is weighed by `ragged_mean`,
    then `kernel.f_scores`: the sums and the F rule of every engine."""
    p = ragged_mean(cand_best, cand_weight, cand_len)
    r = ragged_mean(ref_best, ref_weight, ref_len)
    return f_scores(p, r, blank.to(p.device)[:, None], beta)


def ragged_mean(best: Tensor, weight: Tensor, lengths: Tensor) -> Tensor:
    """`kernel.weighted_mean` of consecutive segments (`lengths`) of per-token bests ([tokens, rows]) and weights
    ([tokens]): float64 [segments, rows]. Segments are padded a run of similar lengths at a time (within a
    quarter of each other: the padding adds at most a third to the tokens held)."""
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
    """Per candidate, the maximum over its references, separately for P, R and F (and F-beta): [cands, rows,
    3 or 4]."""
    owner = torch.repeat_interleave(torch.arange(len(ref_counts), device=scores.device), ref_counts.to(scores.device))
    out = torch.full((len(ref_counts), *scores.shape[1:]), float("-inf"), dtype=scores.dtype, device=scores.device)
    index = owner.view(-1, *([1] * (scores.dim() - 1))).expand_as(scores)
    return out.scatter_reduce(0, index, scores, reduce="amax", include_self=True)
