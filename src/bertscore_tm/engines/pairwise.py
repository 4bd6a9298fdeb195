"""All pairs at once: N x M matrices of P, R and F, each distinct text embedded once and matched in tiles (padded
blocks of similar-length texts). The side with fewer tokens is kept, the other streamed against it, so memory is
bounded beyond the outputs; entry (i, j) is the paired engine's bits (docs/pairwise.md)."""

from __future__ import annotations

import math
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from bertscore_tm.embedding.batches import length_batches
from bertscore_tm.embedding.embedder import Embedder, own_precision
from bertscore_tm.embedding.rows import TokenTexts, ragged_arange
from bertscore_tm.errors import warn_undefined
from bertscore_tm.models.prompts import MarkedIds
from bertscore_tm.scoring.baselines import f_beta_baseline, rescale
from bertscore_tm.scoring.distinct import distinct_of, token_index
from bertscore_tm.scoring.kernel import best_similarities, weighted_scores
from bertscore_tm.scoring.results import format_scores, progress_bar
from bertscore_tm.scoring.scorer import Scorer
from bertscore_tm.scoring.token_rules import kept, scored_weights
from bertscore_tm.settings.config import Config
from bertscore_tm.settings.texts import check_texts

#: A tile is cut where a text's length falls below this share of the tile's first (longest) text, bounding padding.
MIN_FILL = 0.75

#: The share of the working budget the stream's vectors may take to be kept, embedded with the store's.
KEEP_SHARE = 0.5


# -- distinct texts and where they occur --------------------------------------------------------------------


class Positions:
    """Where each distinct text occurs among one side's inputs."""

    def __init__(self, text_of: Tensor, num_texts: int) -> None:
        self.order = torch.argsort(text_of, stable=True)
        self.counts = torch.bincount(text_of, minlength=num_texts)
        self.offsets = torch.cumsum(self.counts, 0) - self.counts


# -- tiles and their matching -------------------------------------------------------------------------------


@dataclass
class Tile:
    """Padded token vectors of G groups of K texts: `vectors` [G, rows, K, L, D], `live`, `weights` (float64)
    and `blank` per token or text, `texts` the distinct-text ids (-1: empty slot)."""

    vectors: Tensor
    live: Tensor
    weights: Tensor
    blank: Tensor
    texts: Tensor

    @property
    def nbytes(self) -> int:
        """What the tile keeps: float32 vectors, float64 weights and flags."""
        return self.vectors.numel() * 4 + self.weights.numel() * 9


def make_tile(
    table: Tensor,
    starts: Tensor,
    lengths: Tensor,
    token_weights: Tensor,
    texts: Tensor,
    blank: Tensor,
    groups: int = 1,
    live: Tensor | None = None,
) -> Tile:
    """A tile of the texts at `starts` rows of `table`, `lengths` tokens each (0: empty slot); `live` False
    on tokens out of the matching."""
    device = table.device
    n = len(lengths)
    width = max(1, int(lengths.max()))
    rows, dim = (table.shape[1] if table.dim() == 3 else 1), table.shape[-1]
    lengths, starts = lengths.to(device), starts.to(device)
    pos = torch.arange(width, device=device)
    mask = pos[None, :] < lengths[:, None]  # [n, L]
    vectors = torch.zeros((n, width, rows, dim), dtype=torch.float32, device=device)
    vectors[mask] = table[(starts[:, None] + pos[None, :])[mask]].view(-1, rows, dim)
    on = mask
    if live is not None:
        on = torch.zeros_like(mask)
        on[mask] = live.to(device)
    weights = torch.zeros((n, width), dtype=torch.float64, device=device)
    weights[mask] = token_weights.to(device)
    k = n // groups
    return Tile(
        vectors.view(groups, k, width, rows, dim).permute(0, 3, 1, 2, 4),
        on.view(groups, k, width),
        weights.view(groups, k, width),
        blank.to(device).view(groups, k),
        texts.view(groups, k),
    )


def score_tiles(cand: Tile, ref: Tile, beta: float | None = None) -> Tensor:
    """Every candidate against every reference of the same group: the kernel's P, R, F (F-beta fourth)."""
    c_live = None if bool(cand.live.all()) else cand.live[:, None]
    r_live = None if bool(ref.live.all()) else ref.live[:, None]
    found = best_similarities(cand.vectors, ref.vectors, c_live, r_live, all_pairs=True)
    blank = cand.blank[:, None, :, None] | ref.blank[:, None, None, :]
    c_weight, r_weight = cand.weights[:, None, :, None, :], ref.weights[:, None, None, :, :]
    return weighted_scores(found.cand, c_weight, found.ref, r_weight, blank, beta)


# -- planning: forward-batch chunks and tiles --------------------------------------------------------------


def forward_chunks(
    lengths: list[int], batch_size: int | None, max_tokens: int, chunk_tokens: int
) -> Iterator[list[int]]:
    """Whole forward batches, longest first, in runs of at most `chunk_tokens` padded tokens.

    >>> list(forward_chunks([5, 5, 5, 5, 5], None, 10, 20))
    [[0, 1, 2, 3], [4]]
    """
    chunk: list[int] = []
    tokens = 0
    for batch in length_batches(lengths, batch_size, max_tokens):
        size = len(batch) * lengths[batch[0]]
        if chunk and tokens + size > chunk_tokens:
            yield chunk
            chunk, tokens = [], 0
        chunk += batch
        tokens += size
    if chunk:
        yield chunk


def tile_cuts(lengths: list[int], tile_tokens: int, min_fill: float = 0.0) -> list[tuple[int, int]]:
    """Ranges of `lengths` (longest first) within `tile_tokens`, cut early where a length falls below
    `min_fill` of the first, bounding the padding.

    >>> tile_cuts([9, 8, 4, 4, 2], 20), tile_cuts([9, 8, 4, 4, 2], 20, min_fill=0.75)
    ([(0, 2), (2, 5)], [(0, 2), (2, 4), (4, 5)])
    """
    cuts: list[tuple[int, int]] = []
    lo = 0
    while lo < len(lengths):
        hi = min(len(lengths), lo + max(1, tile_tokens // max(1, lengths[lo])))
        floor = min_fill * lengths[lo]
        hi = next((i for i in range(lo + 1, hi) if lengths[i] < floor), hi)
        cuts.append((lo, hi))
        lo = hi
    return cuts


def tile_tokens_for(sim_bytes: int, rows: int) -> int:
    """Padded tokens per tile side, so one tile pair's similarities take about `sim_bytes`."""
    return max(64, math.isqrt(sim_bytes // (4 * rows)))


# -- the all-pairs computation ------------------------------------------------------------------------------


class _AllPairs:
    """One all-pairs run: the store side kept as tiles, the stream side matched against it tile by tile. `tokens`:
    the weights and whether each token takes part in the matching (None: all), and which texts score as blank."""

    def __init__(
        self,
        embedder: Embedder,
        texts: TokenTexts,
        tokens: tuple[Tensor, Tensor | None, Tensor],
        cand_text: Tensor,
        ref_text: Tensor,
        beta: float | None = None,
    ) -> None:
        self.embedder, self.texts = embedder, texts
        self.token_weights, self.token_live, self.blank = tokens
        rows = embedder.num_rows
        self.tile_tokens = tile_tokens_for(embedder.block_bytes // 8, rows)
        self.beta = beta
        scores = 3 if beta is None else 4  # P, R, F (and F-beta)
        self.out = torch.empty(
            (scores, rows, len(cand_text), len(ref_text)), dtype=torch.float32, device=embedder.device
        )
        cand_texts, ref_texts = torch.unique(cand_text), torch.unique(ref_text)
        self.length = length = texts.length.long()
        self.store_is_ref = int(length[ref_texts].sum()) <= int(length[cand_texts].sum())
        self.store, stream = (ref_texts, cand_texts) if self.store_is_ref else (cand_texts, ref_texts)
        self.stream_side = self.by_length(stream)
        self.positions = (Positions(cand_text, len(texts)), Positions(ref_text, len(texts)))
        self.in_store = torch.zeros(len(texts), dtype=torch.bool)
        self.in_store[self.store] = True
        self.info = {"store_bytes": 0, "kept_bytes": 0, "tiles": 0, "undefined": 0}  # what it held, for the benchmarks
        self.plan(2 * embedder.max_tokens, int(embedder.block_bytes * KEEP_SHARE))

    def run(self, progress: Any) -> Tensor:
        """P, R, F of every candidate against every reference ([3, rows, N, M]); ``info`` counts the undefined."""
        self.embed_store(progress)
        self.stream(progress)
        return self.out

    def by_length(self, ids: Tensor) -> Tensor:
        return ids[torch.argsort(self.length[ids], descending=True, stable=True)]

    def plan(self, chunk_tokens: int, keep_bytes: int) -> None:
        """The forward-batch runs of both sides, into one table allocated once, so memory does not grow with N;
        the stream's vectors are kept where they fit `keep_bytes`, so both sides run in the same fuller batches."""
        embedder, length, stream = self.embedder, self.length, self.stream_side
        fresh, reused = stream[~self.in_store[stream]], stream[self.in_store[stream]]
        keep = int(length[fresh].sum()) * (embedder.num_rows * embedder.hidden_size * 4 + 9) <= keep_bytes
        first = self.by_length(torch.cat((self.store, fresh)) if keep else self.store)
        batching = (embedder.batch_size, embedder.max_tokens, chunk_tokens)
        chunks = forward_chunks(length[first].tolist(), *batching)
        self.first_chunks = [first[torch.tensor(c, dtype=torch.long)] for c in chunks]
        later = [] if keep else forward_chunks(length[fresh].tolist(), *batching)
        self.stream_chunks = [(fresh[torch.tensor(c, dtype=torch.long)], True) for c in later]
        self.stream_chunks += [(reused[lo:hi], False) for lo, hi in tile_cuts(length[reused].tolist(), chunk_tokens)]
        runs = [*self.first_chunks, *(ids for ids, _ in self.stream_chunks)]
        capacity = max((int(length[ids].sum()) for ids in runs), default=0)
        if max(int(length[self.store].sum()), int(length[stream].sum())) >= chunk_tokens:
            capacity = max(capacity, chunk_tokens)
        self.table = embedder.new_table(capacity)

    def tiles(self, ids: Tensor, starts: Tensor) -> Iterator[tuple[Tensor, Tile]]:
        length = self.length
        for lo, hi in tile_cuts(length[ids].tolist(), self.tile_tokens, MIN_FILL):
            part = ids[lo:hi]
            index = token_index(self.texts, part)
            live = None if self.token_live is None else self.token_live[index]
            weights = self.token_weights[index]
            yield part, make_tile(self.table, starts[lo:hi], length[part], weights, part, self.blank[part], live=live)

    def embedded(self, ids: Tensor) -> Tensor:
        chosen = ids.tolist()
        seqs = [self.texts[t] for t in chosen]
        return torch.tensor(
            self.embedder.embed_into(self.table, seqs, heads=self.texts.heads(chosen)), dtype=torch.long
        )

    def embed_store(self, progress: Any) -> None:
        """Embed the store (and the kept stream) run by run into tiles, and keep them."""
        self.store_tiles: list[Tile] = []
        self.kept: list[tuple[Tensor, Tile]] = []
        self.where: dict[int, tuple[int, int]] = {}  # store text -> (tile, slot)
        for ids in self.first_chunks:
            starts = self.embedded(ids)
            mine = self.in_store[ids]
            for part, tile in self.tiles(ids[mine], starts[mine]):
                for slot, t in enumerate(part.tolist()):
                    self.where[t] = (len(self.store_tiles), slot)
                self.store_tiles.append(tile)
            self.kept += self.tiles(ids[~mine], starts[~mine])
            if progress is not None:
                progress.update(len(ids))
        self.info["store_bytes"] = sum(t.nbytes for t in self.store_tiles)
        self.info["kept_bytes"] = sum(t.nbytes for _, t in self.kept)
        side = self.positions[1 if self.store_is_ref else 0]
        device = self.embedder.device
        self.store_side = [_Occurrences(side, t.texts[0], device) for t in self.store_tiles]

    def match(self, part: Tensor, tile: Tile) -> None:
        """One stream tile against every tile of the store."""
        side = _Occurrences(self.positions[0 if self.store_is_ref else 1], part, self.embedder.device)
        for stored, stored_side in zip(self.store_tiles, self.store_side, strict=True):
            if self.store_is_ref:  # the stream holds the candidates
                scores = score_tiles(tile, stored, self.beta)[0]
                self.info["undefined"] += _write(self.out, scores, side, stored_side)
            else:
                scores = score_tiles(stored, tile, self.beta)[0]
                self.info["undefined"] += _write(self.out, scores, stored_side, side)
            self.info["tiles"] += 1

    def copied(self, ids: Tensor) -> Tensor:
        """Copy store texts' vectors into the table end to end; each one's first row."""
        lens, table = self.length[ids], self.table
        starts = torch.cumsum(lens, 0) - lens
        for t, start, n in zip(ids.tolist(), starts.tolist(), lens.tolist(), strict=True):
            tile, slot = self.where[t]
            rows_of = self.store_tiles[tile].vectors[0, :, slot, :n]  # [rows, n, D]
            table[start : start + n] = rows_of.permute(1, 0, 2) if table.dim() == 3 else rows_of[0]
        return starts

    def stream(self, progress: Any) -> None:
        """The kept stream, then the rest run by run, each tile against the whole store."""
        while self.kept:
            self.match(*self.kept.pop(0))
        for ids, embed in self.stream_chunks:
            starts = self.embedded(ids) if embed else self.copied(ids)
            for part, tile in self.tiles(ids, starts):
                self.match(part, tile)
                del tile
            if progress is not None:
                progress.update(len(ids))


class _Occurrences:
    """For a tile's texts: every input position where they occur and the index into `texts` of the text there, on
    the output's device."""

    def __init__(self, side: Positions, texts: Tensor, device: torch.device) -> None:
        texts = texts.cpu()
        counts = side.counts[texts]
        local = torch.repeat_interleave(torch.arange(len(texts)), counts)
        self.positions = side.order[ragged_arange(side.offsets[texts], counts)].to(device)
        self.local, self.all_once = local.to(device), bool(torch.equal(local, torch.arange(len(texts))))


def _write(out: Tensor, scores: Tensor, cands: _Occurrences, refs: _Occurrences) -> int:
    """Write one tile pair's scores to every position of `out` where its texts occur; return the NaN count."""
    scores = scores.movedim(-1, 0)
    if not (cands.all_once and refs.all_once):  # a text occurring more than once: repeat its scores
        scores = scores[:, :, cands.local[:, None], refs.local[None, :]]
    out[:, :, cands.positions[:, None], refs.positions[None, :]] = scores
    return int(torch.isnan(scores[:2]).any(dim=1).any(dim=0).sum())


# -- the public entry points ------------------------------------------------------------------------------


def scored_blank(scorer: Scorer, texts: TokenTexts, side: MarkedIds, flags: Tensor | None) -> Tensor:
    """Which of the distinct `texts` (of `side`'s one source) score as blank (`Scorer.blank`)."""
    distinct = token_index(texts, torch.arange(len(texts)))
    return scorer.blank(side.ids[distinct], side.marked[distinct], texts.length, flags)


def pairwise_scores(
    scorer: Scorer, cands: str | Sequence[str], refs: str | Sequence[str], device: torch.device, verbose: bool = False
) -> Tensor:
    """P, R, F of every candidate against every reference, stacked: [3, N, M] ([3, L + 1, N, M] with
    all_layers)."""
    cands = check_texts(cands, "cands", what="candidate", empty=False)
    refs = check_texts(refs, "refs", what="reference", empty=False)
    with own_precision(device):  # the setting's precision, whatever autocast the caller runs under
        out, _ = all_pairs(scorer, cands, refs, device, verbose)
    return out


def all_pairs(
    scorer: Scorer, cands: list[str], refs: list[str], device: torch.device, verbose: bool = False
) -> tuple[Tensor, dict[str, int]]:
    """The stacked scores of `pairwise_scores`, and what the computation held (the benchmarks' memory counts)."""
    scorer.follow(device)
    cand, ref = scorer.encode_pairs(cands, refs)  # one warning per kind, both sides counted
    both = MarkedIds.joined(cand, ref)
    texts, text_of = distinct_of(both)
    weights = scorer.reference_weights(ref, len(refs))  # IDF over the M references as given
    flags = scorer.token_flags(both.marked)  # a mask's, or a prompt's marked tokens: out of the matching
    c_lens, r_lens = cand.lens, ref.lens
    del cand, ref
    token_weights = scored_weights(weights, both.ids, both.marked, flags)
    blank = scored_blank(scorer, texts, both, flags)
    cand_text, ref_text = text_of[: len(cands)], text_of[len(cands) :]
    total = len(torch.unique(cand_text)) + len(torch.unique(ref_text))  # each side's distinct texts
    with progress_bar(verbose, total, "BERTScore: all pairs", "text") as progress:
        run = _AllPairs(
            scorer.embedder,
            texts,
            (token_weights, kept(both.ids, both.marked, flags), blank),
            cand_text,
            ref_text,
            scorer.beta,
        )
        out = run.run(progress)
    warn_undefined(run.info["undefined"])  # once the progress bar is closed
    held = (
        both.ids,
        both.marked,
        texts.which,
        texts.start,
        texts.length,
        text_of,
        token_weights,
        blank,
        c_lens,
        r_lens,
    )
    run.info["text_bytes"] = sum(t.numel() * t.element_size() for t in held)
    if scorer.baseline is not None:  # in place: the N x M outputs are the largest thing held
        baseline = scorer.baseline
        if scorer.beta is not None:
            baseline = torch.cat((baseline, f_beta_baseline(baseline, scorer.beta)), -1)
        rescale(out, baseline.to(out.device).T[:, :, None, None], in_place=True)
    return (out if scorer.all_layers else out[:, 0]), run.info


def pairwise_bert_score(
    cands: str | Sequence[str],
    refs: str | Sequence[str],
    model_name_or_path: str | os.PathLike[str] | None = None,
    **kwargs: Any,
) -> dict[str, Tensor | str] | Tensor:
    """BERTScore of every candidate against every reference: ``{"precision", "recall", "f1"}``,
    each ``[N, M]`` (``[L + 1, N, M]`` with ``all_layers=True``); entry (i, j) exactly what :func:`bert_score` gives
    that pair. Keyword arguments are :class:`BERTScore`'s but ``reduction``; IDF is over the M references. For many
    sets with one model, call :meth:`BERTScore.pairwise`.

    >>> from bertscore_tm import PACKAGED_MINILM
    >>> s = pairwise_bert_score(["The cat sat.", "A dog barked."], ["A cat was sitting.", "It rained.", "Dogs bark."],
    ...                         PACKAGED_MINILM)
    >>> s["f1"].shape
    torch.Size([2, 3])
    >>> s["f1"].argmax(dim=1).tolist()  # each candidate's closest reference
    [0, 2]
    """
    cands = check_texts(cands, "cands", what="candidate", empty=False)
    refs = check_texts(refs, "refs", what="reference", empty=False)
    arguments = {"model_name_or_path": model_name_or_path, **kwargs}
    config = Config.of(arguments, caller="pairwise_bert_score", unused=("reduction",))
    scorer, out = Scorer(config), config.output
    per = pairwise_scores(scorer, cands, refs, torch.device(config.runtime.device or "cpu"), config.runtime.verbose)
    return format_scores(per, out.output, scorer.hash_code if out.return_hash else None)
