"""Long pairs: matching texts too long for one similarity matrix, or for one table, in a fixed budget.

Texts cut to a 512-token window always fit: a pair's similarity matrix is at most 512 x 512 and a block of
`greedy_match` holds many pairs. Windowed texts (long_texts="window") have no such bound, so two things
change for them, and only for them:

* a match whose similarity matrix alone would pass the matching budget is matched in tiles, keeping each
  token's running best similarity (`match_in_tiles`): the maximum of the same dot products, so the same
  scores;
* a match whose two texts do not fit in one table of token vectors together is streamed through the table
  (`match_streamed`): the shorter text stays in the table while the longer one passes through in chunks
  if it leaves room for that; otherwise the candidate passes in large chunks and, for each, the reference
  in small ones (so that text is embedded several times: compute is traded for memory). Either way the
  working memory is the table and one tile, as for any other pair; only the per-token results grow.

Tokens out of the matching (a mask's, a prompt's or a context's: `bertscore_tm.scoring.token_rules`) are no match
for the other side and keep 0 here too, as in a block's matching.
"""

from __future__ import annotations

import math
from typing import cast

import torch
from torch import Tensor

from bertscore_tm.embedding.embedder import Embedder
from bertscore_tm.embedding.rows import TokenTexts
from bertscore_tm.scoring.kernel import best_similarities, raise_best
from bertscore_tm.scoring.token_rules import kept


def tile_size(rows: int, budget: int) -> int:
    """Side of a square tile of similarities (for `rows` layers) within `budget` elements.

    >>> tile_size(1, 1 << 22)
    2048
    """
    return max(1, math.isqrt(max(1, budget // rows)))


def _layers_first(vectors: Tensor) -> Tensor:
    """[tokens, D] or [tokens, layers, D] -> [layers, tokens, D]."""
    return vectors.unsqueeze(0) if vectors.dim() == 2 else vectors.transpose(0, 1)


def match_in_tiles(
    c: Tensor,
    r: Tensor,
    c_best: Tensor,
    r_best: Tensor,
    budget: int,
    live: tuple[Tensor, Tensor] | None = None,
    index: tuple[Tensor, Tensor] | None = None,
) -> None:
    """Raise `c_best` (a view [len(c), layers]) to each candidate vector's best similarity with the vectors
    `r`, and `r_best` likewise, in tiles of at most `budget` similarities (`kernel.best_similarities` each,
    `kernel.raise_best` across them: a token nothing live matches stays -inf, for `settle`); with `live` (a
    flag per vector of `c` and of `r`), only live vectors of both sides meet; with `index` (int64 views shaped
    as the bests), each best's index on the other side is raised with it (the first on a tie).

    >>> c, r = torch.eye(3)[:2], torch.eye(3)[1:]
    >>> c_best, r_best = torch.full((2, 1), -1.0), torch.full((2, 1), -1.0)
    >>> match_in_tiles(c, r, c_best, r_best, budget=1)
    >>> c_best.flatten().tolist(), r_best.flatten().tolist()
    ([0.0, 1.0], [1.0, 0.0])
    """
    rows = 1 if c.dim() == 2 else c.shape[1]
    side = tile_size(rows, budget)
    c_at, r_at = (None, None) if index is None else index
    for a in range(0, len(c), side):
        tile_c = _layers_first(c[a : a + side])
        for b in range(0, len(r), side):
            tile_r = _layers_first(r[b : b + side])
            lc, lr = (None, None) if live is None else (live[0][a : a + side], live[1][b : b + side])
            found = best_similarities(tile_c, tile_r, lc, lr, indices=index is not None, unmatched=float("-inf"))
            own_c = own_r = None
            if found.cand_index is not None and found.ref_index is not None:
                own_c, own_r = found.cand_index.T + b, found.ref_index.T + a
            raise_best(c_best[a : a + side], found.cand.T, None if c_at is None else c_at[a : a + side], own_c)
            raise_best(r_best[b : b + side], found.ref.T, None if r_at is None else r_at[b : b + side], own_r)


def settle(*bests: Tensor) -> None:
    """Best similarities that stayed -inf (a token out of the matching, or with nothing live to match) set to 0,
    as a block's matching leaves them."""
    for best in bests:
        best.masked_fill_(torch.isinf(best), 0.0)


def chunk_plan(len_c: int, len_r: int, capacity: int) -> tuple[int, int]:
    """Chunk sizes (candidate rows, reference rows) for streaming a pair through `capacity` table rows: the
    shorter text whole where it leaves at least half the table to the other, else 7/8 of the table for the
    candidate and 1/8 for the reference (which is then embedded once per candidate chunk).

    >>> chunk_plan(100_000, 3_000, 20_000)  # the reference stays, the candidate passes in chunks
    (17000, 3000)
    >>> chunk_plan(100_000, 100_000, 20_000)
    (17500, 2500)
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
    """Best similarities of a match whose texts do not fit in `table` together: candidate text `cand`
    against reference text `ref`, results into the views `c_best` [rows of cand, layers] and `r_best`.
    Only `table`'s rows are used for vectors; matching runs in tiles of at most `budget` similarities.
    `ignored`: the ignored-token table (`token_rules`), or None where every token is matched."""
    seq_c, seq_r = texts[cand], texts[ref]
    live_c = live_r = None
    if ignored is not None:
        live_c, live_r = (cast(Tensor, kept(s.long(), ignored)).to(table.device) for s in (seq_c, seq_r))
    len_c, len_r = len(seq_c), len(seq_r)
    step_c, step_r = chunk_plan(len_c, len_r, table.shape[0])
    c_best.fill_(float("-inf"))
    r_best.fill_(float("-inf"))
    resident = step_r >= len_r  # the reference is embedded once, before the first candidate chunk
    if resident:
        embedder.embed_into(table[step_c:], [seq_r], ranges=[(0, len_r)])
    for a in range(0, len_c, step_c):
        hi_c = min(a + step_c, len_c)
        embedder.embed_into(table, [seq_c], ranges=[(a, hi_c)])
        for b in range(0, len_r, step_r):
            hi_r = min(b + step_r, len_r)
            if not resident:
                embedder.embed_into(table[step_c:], [seq_r], ranges=[(b, hi_r)])
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
    out_c: Tensor,
    out_r: Tensor,
    cand_best: Tensor,
    ref_best: Tensor,
    budget: int,
    counted: Tensor | None = None,
    progress: object | None = None,
    ignored: Tensor | None = None,
) -> None:
    """`match_streamed` for each of `matches` (indices into match_cand/match_ref, whose rows of
    cand_best/ref_best start at out_c/out_r), with the ignored-token table `ignored`. The progress bar counts
    each text once: texts already `counted` (a bool per text) are not counted again."""
    seen = torch.zeros(len(texts), dtype=torch.bool) if counted is None else counted.clone()
    for m in matches.tolist():
        cand, ref = int(match_cand[m]), int(match_ref[m])
        oc, orr = int(out_c[m]), int(out_r[m])
        c_best = cand_best[oc : oc + int(texts.length[cand])]
        r_best = ref_best[orr : orr + int(texts.length[ref])]
        match_streamed(embedder, texts, table, cand, ref, c_best, r_best, budget, ignored)
        if progress is not None:
            fresh = {t for t in (cand, ref) if not bool(seen[t])}
            seen[list(fresh)] = True
            progress.update(len(fresh))  # type: ignore[attr-defined]


def match_large_in_tiles(
    table: Tensor,
    c_rows: Tensor,
    r_rows: Tensor,
    lc: Tensor,
    lr: Tensor,
    out_c: Tensor,
    out_r: Tensor,
    cand_best: Tensor,
    ref_best: Tensor,
    rows: int,
    budget: int,
    live: Tensor | None = None,
) -> Tensor:
    """Match in tiles the matches (candidate at table rows c_rows[i] .. + lc[i], reference likewise) whose
    similarity matrix alone holds more than `budget` elements; return which matches that was (bool). `live`:
    which table rows take part in the matching (None: all)."""
    large = lc.long() * lr.long() * rows > budget
    for i in torch.nonzero(large).flatten().tolist():
        c_best = cand_best[int(out_c[i]) : int(out_c[i]) + int(lc[i])].fill_(float("-inf"))
        r_best = ref_best[int(out_r[i]) : int(out_r[i]) + int(lr[i])].fill_(float("-inf"))
        c = table[int(c_rows[i]) : int(c_rows[i]) + int(lc[i])]
        r = table[int(r_rows[i]) : int(r_rows[i]) + int(lr[i])]
        if live is None:
            match_in_tiles(c, r, c_best, r_best, budget)
            continue
        rows_c, rows_r = (live[int(at[i]) : int(at[i]) + int(n[i])] for at, n in ((c_rows, lc), (r_rows, lr)))
        match_in_tiles(c, r, c_best, r_best, budget, (rows_c, rows_r))
        settle(c_best, r_best)
    return large
