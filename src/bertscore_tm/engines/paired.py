"""The paired engine: each candidate against its own references. Two stages so the Metric can stream:
`match_pairs` embeds distinct texts and keeps each token's best similarity (`TokenMatches`, the Metric's state);
`weigh_pairs` turns them into P, R, F at compute(). Semantics: docs/semantics.md."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from bertscore_tm.embedding.embedder import own_precision
from bertscore_tm.embedding.rows import TokenTexts, ragged_arange
from bertscore_tm.errors import warn_undefined, warn_user
from bertscore_tm.models.tokenizing import TokenizedPairs
from bertscore_tm.scoring.distinct import distinct_texts
from bertscore_tm.scoring.idf import without_documents
from bertscore_tm.scoring.matching import best_of_references, greedy_match, ragged_scores, segment_sum
from bertscore_tm.scoring.results import progress_bar
from bertscore_tm.scoring.scorer import Scorer
from bertscore_tm.scoring.token_rules import scored_weights

#: Working bytes per token of the weighing step (weights, float64 products and sums, index arithmetic):
#: pairs are weighed in chunks of the working budget over this.
BYTES_PER_SCORED_TOKEN = 128


@dataclass
class PairTokens:
    """Pairs as ragged token ids: candidate i over ``cand_lens[i]`` tokens, its ``ref_counts[i]`` references
    one after another in ``ref_ids``; ``*_marked`` flag each side's marked tokens (`MarkedIds`; None: none)."""

    cand_ids: Tensor
    cand_lens: Tensor
    ref_ids: Tensor
    ref_lens: Tensor
    ref_counts: Tensor
    cand_marked: Tensor | None = None
    ref_marked: Tensor | None = None

    @classmethod
    def of(cls, tokens: TokenizedPairs) -> PairTokens:
        """The pairs of a tokenised batch (`PairTokenizer`)."""
        lens = (tokens.cand_lens.long(), tokens.ref_lens.long(), tokens.ref_counts.long())
        return cls(tokens.cand_ids, lens[0], tokens.ref_ids, *lens[1:], tokens.cand_marked, tokens.ref_marked)

    def __len__(self) -> int:
        return len(self.cand_lens)

    def to(self, device: torch.device) -> PairTokens:
        """These pairs on `device`."""
        ids = (self.cand_ids, self.cand_lens, self.ref_ids, self.ref_lens, self.ref_counts)
        marks = (None if m is None else m.to(device) for m in (self.cand_marked, self.ref_marked))
        return PairTokens(*(x.to(device) for x in ids), *marks)


@dataclass
class TokenMatches:
    """Per-token best similarities (float32, a column per layer), match after match: a row per candidate
    token in ``cand_best``, per reference token in ``ref_best``."""

    cand_best: Tensor
    ref_best: Tensor


def match_pairs(scorer: Scorer, pairs: PairTokens, is_new: Tensor, verbose: bool = False) -> TokenMatches:
    """Embed the distinct texts of the pairs marked `is_new` once each and keep their best similarities."""
    texts, match_cand, match_ref = matches_of(pairs, is_new)
    with progress_bar(verbose, len(texts), "BERTScore: embedding", "text") as progress:
        source = scorer.embedding_source()
        flags = scorer.token_flags(pairs.cand_marked, pairs.ref_marked)
        cand_best, ref_best = greedy_match(source, texts, match_cand, match_ref, progress=progress, ignored=flags)
    return TokenMatches(cand_best, ref_best)


def score_texts(
    scorer: Scorer,
    cands: list[str],
    groups: list[list[str]],
    device: torch.device,
    verbose: bool,
    weights: Tensor | None = None,
    context: list[str] | None = None,
) -> Tensor:
    """Both stages at once, from texts to [pairs, rows, 4] (as `weigh_pairs`), as the functional API and
    resumable shards run them; `weights` None: the setting's, IDF over these references."""
    refs = [r for group in groups for r in group]
    with own_precision(device):
        scorer.follow(device)
        cand, ref = scorer.encode_pairs(cands, refs, context, [len(g) for g in groups])  # one warning per kind
        scorer.check_known_weights(torch.cat([cand.ids, ref.ids]), torch.cat([cand.marked, ref.marked]))
        counts = torch.tensor([len(g) for g in groups], dtype=torch.long)
        pairs = PairTokens(cand.ids, cand.lens.long(), ref.ids, ref.lens.long(), counts, cand.marked, ref.marked)
        matches = match_pairs(scorer, pairs, torch.ones(len(cands), dtype=torch.bool), verbose)
        if weights is None:
            weights = scorer.reference_weights(ref, len(refs)).to(device)
        return weigh_pairs(scorer, pairs.to(device), matches, weights)


def weigh_pairs(scorer: Scorer, pairs: PairTokens, matches: TokenMatches, weights: Tensor) -> Tensor:
    """P, R, F (F-beta with `beta`) and best reference per candidate, rescaled, weighed in chunks within the
    working budget; the best reference's index is exact in float32, so it travels with the scores."""
    device = weights.device
    rows = scorer.embedder.num_rows
    c_lens, r_lens, ref_counts = pairs.cand_lens.long(), pairs.ref_lens.long(), pairs.ref_counts.long()
    if c_lens.numel() == 0:
        return torch.zeros((0, rows, 4), dtype=torch.float32, device=device)
    spans = _Spans(c_lens, r_lens, ref_counts)
    flags = scorer.token_flags(pairs.cand_marked, pairs.ref_marked)
    pieces, undefined, left_empty = [], 0, 0
    for lo, hi in pair_chunks(spans.best_len + spans.ref_tokens, scorer.embedder.block_bytes // BYTES_PER_SCORED_TOKEN):
        c_tok, refs, r_tok, best = spans.of(lo, hi)
        counts = ref_counts[lo:hi]
        owner = torch.repeat_interleave(torch.arange(hi - lo, device=device), counts)
        lens = c_lens[lo:hi]
        match_c_lens = lens[owner]
        local_start = torch.cumsum(lens, 0) - lens
        cand_at = ragged_arange(local_start[owner], match_c_lens)
        cand_tokens = pairs.cand_ids[c_tok][cand_at].long()
        cand_marks = None if pairs.cand_marked is None else pairs.cand_marked[c_tok][cand_at]
        ref_tokens = pairs.ref_ids[r_tok].long()
        ref_marks = None if pairs.ref_marked is None else pairs.ref_marked[r_tok]
        blank = scorer.blank(cand_tokens, cand_marks, match_c_lens, flags)
        blank |= scorer.blank(ref_tokens, ref_marks, r_lens[refs], flags)
        left_empty += int(
            (blank & ~scorer.encoder.is_blank(match_c_lens) & ~scorer.encoder.is_blank(r_lens[refs])).sum()
        )
        scores = ragged_scores(
            matches.cand_best[best],
            scored_weights(weights, cand_tokens, cand_marks, flags),
            match_c_lens,
            matches.ref_best[r_tok],
            scored_weights(weights, ref_tokens, ref_marks, flags),
            r_lens[refs],
            blank,
            scorer.beta,
        )
        undefined += int((torch.isnan(scores[..., :2]).any(dim=(1, 2)) & ~blank).sum())
        top = best_of_references(scores, counts)
        which = best_reference(scores[..., -1], top[..., -1], counts)  # by F, or by F-beta with beta
        pieces.append(torch.cat((scorer.rescaled(top), which[..., None].to(top.dtype)), dim=-1))
    warn_undefined(undefined)
    if left_empty:
        warn_user(
            f"{left_empty} match(es) have a side with no token but the special ones once the mask (ignore=) or the "
            "prompt is left out: they score P = R = F = 0, as a blank text does."
        )
    return torch.cat(pieces)


def best_reference(f1: Tensor, best_f1: Tensor, ref_counts: Tensor) -> Tensor:
    """Per candidate and row, the index of its reference whose F is best: the lowest on a tie.

    >>> best_reference(torch.tensor([[0.5], [0.7], [0.7], [0.2]]), torch.tensor([[0.7], [0.2]]), torch.tensor([3, 1]))
    tensor([[1],
            [0]])
    """
    counts = ref_counts.to(f1.device)
    owner = torch.repeat_interleave(torch.arange(len(counts), device=f1.device), counts)
    position = torch.arange(len(owner), device=f1.device) - (torch.cumsum(counts, 0) - counts)[owner]
    hits = torch.where(f1 == best_f1[owner], position[:, None], len(owner))
    out = torch.full_like(best_f1, len(owner), dtype=torch.long)
    return out.scatter_reduce(0, owner[:, None].expand_as(hits), hits, reduce="amin")


class _Spans:
    """Where a range of pairs lies in the ragged tensors."""

    def __init__(self, c_lens: Tensor, r_lens: Tensor, ref_counts: Tensor) -> None:
        self.c_lens, self.r_lens, self.ref_counts = c_lens, r_lens, ref_counts
        self.c_start, self.r_start = torch.cumsum(c_lens, 0) - c_lens, torch.cumsum(r_lens, 0) - r_lens
        self.first_ref = torch.cumsum(ref_counts, 0) - ref_counts
        self.best_len = c_lens * ref_counts
        self.best_start = torch.cumsum(self.best_len, 0) - self.best_len
        self.ref_tokens = segment_sum(r_lens, ref_counts)

    def of(self, lo: int, hi: int) -> tuple[slice, slice, slice, slice]:
        last = hi - 1
        refs = slice(int(self.first_ref[lo]), int(self.first_ref[last] + self.ref_counts[last]))
        c_tok = slice(int(self.c_start[lo]), int(self.c_start[last] + self.c_lens[last]))
        r_tok = slice(int(self.r_start[refs.start]), int(self.r_start[refs.stop - 1] + self.r_lens[refs.stop - 1]))
        best = slice(int(self.best_start[lo]), int(self.best_start[last] + self.best_len[last]))
        return c_tok, refs, r_tok, best


def corpus_counts(
    doc_freq: Tensor, num_refs: Tensor, pairs: PairTokens, dropped: Tensor | None, collective: bool, group: Any
) -> tuple[Tensor, Tensor]:
    """The corpus's IDF document and reference counts: this rank's less its `dropped` pairs, summed over
    ranks when `collective`, before any weight, so the weights equal one process's."""
    if dropped is not None and bool(dropped.any()):
        ref_dropped = torch.repeat_interleave(dropped.to(doc_freq.device), pairs.ref_counts)
        tok_dropped = torch.repeat_interleave(ref_dropped, pairs.ref_lens)
        marked = None if pairs.ref_marked is None else pairs.ref_marked[tok_dropped]
        doc_freq, num_refs = without_documents(
            doc_freq, num_refs, pairs.ref_ids[tok_dropped].long(), pairs.ref_lens[ref_dropped], len(doc_freq), marked
        )
    if collective:
        torch.distributed.all_reduce(doc_freq, group=group)
        torch.distributed.all_reduce(num_refs, group=group)
    return doc_freq, num_refs


def pair_chunks(cost: Tensor, budget: int) -> list[tuple[int, int]]:
    """Consecutive ranges of items whose `cost` sums to at most `budget` (an item alone may exceed it).

    >>> pair_chunks(torch.tensor([3, 3, 3, 9, 1]), budget=6)
    [(0, 2), (2, 3), (3, 4), (4, 5)]
    """
    ends = torch.cumsum(cost.long(), 0)
    chunks, lo, n = [], 0, len(cost)
    while lo < n:
        before = int(ends[lo - 1]) if lo else 0
        hi = max(lo + 1, int(torch.searchsorted(ends, before + budget, right=True)))
        chunks.append((lo, min(hi, n)))
        lo = hi
    return chunks


def interleave(old: Tensor, new: Tensor, is_new: Tensor, counts: Tensor) -> Tensor:
    """The per-pair concatenation in pair order, from the old pairs' part and the new pairs' part."""
    if bool(is_new.all()):
        return new
    starts = torch.cumsum(counts, 0) - counts
    out = torch.empty((int(counts.sum()), *new.shape[1:]), dtype=new.dtype, device=new.device)
    out[ragged_arange(starts[~is_new], counts[~is_new]).to(new.device)] = old.to(new.device)
    out[ragged_arange(starts[is_new], counts[is_new]).to(new.device)] = new
    return out


def matches_of(pairs: PairTokens, is_new: Tensor) -> tuple[TokenTexts, Tensor, Tensor]:
    """The new pairs' distinct texts (numbered by first appearance) and each match's candidate and reference
    text; tensor operations only, so millions of pairs cost a few integers a text."""
    c_lens, r_lens, ref_counts = pairs.cand_lens.long(), pairs.ref_lens.long(), pairs.ref_counts.long()
    c_start = torch.cumsum(c_lens, 0) - c_lens
    r_start = torch.cumsum(r_lens, 0) - r_lens
    new_pairs = torch.nonzero(is_new).flatten()
    new_refs = torch.nonzero(torch.repeat_interleave(is_new, ref_counts)).flatten()
    counts = ref_counts[new_pairs]
    # every occurrence of a text, in the order a pair-by-pair walk meets them: candidate, then its references
    cand_at = torch.cumsum(counts + 1, 0) - (counts + 1)
    is_cand = torch.zeros(len(new_pairs) + len(new_refs), dtype=torch.bool)
    is_cand[cand_at] = True
    start = torch.empty(len(is_cand), dtype=torch.long)
    length = torch.empty(len(is_cand), dtype=torch.long)
    start[is_cand], length[is_cand] = c_start[new_pairs], c_lens[new_pairs]
    start[~is_cand], length[~is_cand] = r_start[new_refs], r_lens[new_refs]
    sources = (pairs.cand_ids, pairs.ref_ids)
    marks = None  # both sides' token marks, or None where neither side has any
    if pairs.cand_marked is not None or pairs.ref_marked is not None:
        sides = ((pairs.cand_marked, pairs.cand_ids), (pairs.ref_marked, pairs.ref_ids))
        marks = tuple(torch.zeros(len(ids), dtype=torch.bool) if m is None else m for m, ids in sides)
    texts, text_of = distinct_texts(sources, (~is_cand).to(torch.uint8), start, length, marks)
    match_cand = torch.repeat_interleave(text_of[is_cand], counts)
    return texts, match_cand.to(torch.int32), text_of[~is_cand].to(torch.int32)
