"""Long pairs (long_texts="window" alone has no bound on a text's length): a match whose similarity matrix
passes the budget is matched in tiles (`match_in_tiles`: the same maxima, so the same scores), one whose texts do
not fit in the table together is streamed through it (`match_streamed`), trading compute for memory."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import cast

import torch
from torch import Tensor

from bertscore_tm.embedding.embedder import Embedder
from bertscore_tm.embedding.rows import TokenTexts
from bertscore_tm.scoring.kernel import best_similarities, raise_best
from bertscore_tm.scoring.token_rules import kept


@dataclass(frozen=True)
class Bests:
    """Where a matching's bests go: match m's candidate tokens' at rows ``cand_at[m]`` on of `cand`, its
    reference tokens' at ``ref_at[m]`` on of `ref` ([tokens, layers] float32); `budget`: the similarities (or
    gathered elements) computed at once."""

    cand: Tensor
    ref: Tensor
    cand_at: Tensor
    ref_at: Tensor
    budget: int

    def of(self, matches: Tensor) -> Bests:
        """The bundle of these `matches` alone, numbered in their order."""
        return replace(self, cand_at=self.cand_at[matches], ref_at=self.ref_at[matches])

    def running(self, m: int, len_c: int, len_r: int) -> tuple[Tensor, Tensor]:
        """Match m's views, set to -inf for a running maximum (`settle` ends it)."""
        c, r = int(self.cand_at[m]), int(self.ref_at[m])
        return self.cand[c : c + len_c].fill_(float("-inf")), self.ref[r : r + len_r].fill_(float("-inf"))


def match_in_tiles(
    c: Tensor,
    r: Tensor,
    c_best: Tensor,
    r_best: Tensor,
    budget: int,
    live: tuple[Tensor, Tensor] | None = None,
    index: tuple[Tensor, Tensor] | None = None,
) -> None:
    """Raise `c_best` (a view [len(c), layers]) to each candidate vector's best similarity with `r`, and `r_best`
    likewise, in tiles of at most `budget` similarities; a token nothing live matches stays -inf (`settle`). `live`:
    a flag per vector of each side; `index`: int64 views raised with the bests (the first on a tie)."""
    rows = 1 if c.dim() == 2 else c.shape[1]
    side = max(1, math.isqrt(max(1, budget // rows)))  # a square tile of `rows` layers within the budget
    c_at, r_at = (None, None) if index is None else index
    # [tokens, D] or [tokens, layers, D] as [layers, tokens, D] views
    c_layers, r_layers = (x.unsqueeze(0) if x.dim() == 2 else x.transpose(0, 1) for x in (c, r))
    for a in range(0, len(c), side):
        tile_c = c_layers[:, a : a + side]
        for b in range(0, len(r), side):
            tile_r = r_layers[:, b : b + side]
            lc, lr = (None, None) if live is None else (live[0][a : a + side], live[1][b : b + side])
            found = best_similarities(tile_c, tile_r, lc, lr, indices=index is not None, unmatched=float("-inf"))
            own_c = own_r = None
            if found.cand_index is not None and found.ref_index is not None:
                own_c, own_r = found.cand_index.T + b, found.ref_index.T + a
            raise_best(c_best[a : a + side], found.cand.T, None if c_at is None else c_at[a : a + side], own_c)
            raise_best(r_best[b : b + side], found.ref.T, None if r_at is None else r_at[b : b + side], own_r)


def settle(*bests: Tensor) -> None:
    """Bests left -inf (out of the matching, or nothing live to match) set to 0, as a block leaves them."""
    for best in bests:
        best.masked_fill_(torch.isinf(best), 0.0)


def chunk_plan(len_c: int, len_r: int, capacity: int) -> tuple[int, int]:
    """Chunk sizes (candidate, reference) for streaming a pair through `capacity` rows: the shorter text whole
    where it leaves half the table to the other, else 7/8 and 1/8 (the reference then embedded once per chunk).

    >>> chunk_plan(100_000, 3_000, 20_000)  # the reference stays, the candidate passes in chunks
    (17000, 3000)
    """
    if min(len_c, len_r) <= capacity // 2:
        if len_c <= len_r:
            return len_c, capacity - len_c
        return capacity - len_r, len_r
    inner = max(1, capacity // 8)
    return capacity - inner, inner


def match_streamed(
    embedder: Embedder,
    texts: TokenTexts,
    table: Tensor,
    cand: int,
    ref: int,
    c_best: Tensor,
    r_best: Tensor,
    budget: int,
    ignored: Tensor | None = None,
) -> None:
    """Bests of a match whose texts do not fit in `table` together, raised in the views `c_best` and `r_best`
    (-inf, `Bests.running`), in tiles of at most `budget` similarities (`ignored`: the ignored-token table)."""
    seq_c, seq_r = texts[cand], texts[ref]
    head_c, head_r = texts.heads([cand]), texts.heads([ref])  # the marked tokens riding in each window
    live_c = live_r = None
    if ignored is not None:
        live_c, live_r = (
            cast(Tensor, kept(texts[t].long(), texts.marks(t), ignored)).to(table.device) for t in (cand, ref)
        )
    len_c, len_r = len(seq_c), len(seq_r)
    step_c, step_r = chunk_plan(len_c, len_r, table.shape[0])
    resident = step_r >= len_r  # the reference is embedded once, before the first candidate chunk
    if resident:
        embedder.embed_into(table[step_c:], [seq_r], ranges=[(0, len_r)], heads=head_r)
    for a in range(0, len_c, step_c):
        hi_c = min(a + step_c, len_c)
        embedder.embed_into(table, [seq_c], ranges=[(a, hi_c)], heads=head_c)
        for b in range(0, len_r, step_r):
            hi_r = min(b + step_r, len_r)
            if not resident:
                embedder.embed_into(table[step_c:], [seq_r], ranges=[(b, hi_r)], heads=head_r)
            live = None if live_c is None or live_r is None else (live_c[a:hi_c], live_r[b:hi_r])
            match_in_tiles(
                table[: hi_c - a], table[step_c : step_c + hi_r - b], c_best[a:hi_c], r_best[b:hi_r], budget, live
            )
    if ignored is not None:
        settle(c_best, r_best)


def stream_matches(
    embedder: Embedder,
    texts: TokenTexts,
    table: Tensor,
    matches: Tensor,
    match_cand: Tensor,
    match_ref: Tensor,
    bests: Bests,
    counted: Tensor | None = None,
    progress: object | None = None,
    ignored: Tensor | None = None,
) -> None:
    """`match_streamed` for each of `matches`; the progress bar counts each text once (`counted`: texts
    counted already)."""
    seen = torch.zeros(len(texts), dtype=torch.bool) if counted is None else counted.clone()
    for m in matches.tolist():
        cand, ref = int(match_cand[m]), int(match_ref[m])
        c_best, r_best = bests.running(m, int(texts.length[cand]), int(texts.length[ref]))
        match_streamed(embedder, texts, table, cand, ref, c_best, r_best, bests.budget, ignored)
        if progress is not None:
            fresh = {t for t in (cand, ref) if not bool(seen[t])}
            seen[list(fresh)] = True
            progress.update(len(fresh))  # type: ignore[attr-defined]


def match_large_in_tiles(
    table: Tensor, c_rows: Tensor, r_rows: Tensor, lc: Tensor, lr: Tensor, bests: Bests, live: Tensor | None = None
) -> Tensor:
    """Match in tiles the matches whose similarity matrix alone passes the budget; return which those were."""
    rows = 1 if table.dim() == 2 else table.shape[1]
    large = lc.long() * lr.long() * rows > bests.budget
    for i in torch.nonzero(large).flatten().tolist():
        c0, r0, nc, nr = (int(t[i]) for t in (c_rows, r_rows, lc, lr))
        c_best, r_best = bests.running(i, nc, nr)
        pair_live = None if live is None else (live[c0 : c0 + nc], live[r0 : r0 + nr])
        match_in_tiles(table[c0 : c0 + nc], table[r0 : r0 + nr], c_best, r_best, bests.budget, pair_live)
        if live is not None:
            settle(c_best, r_best)
    return large
