"""Minimum-Bayes-risk selection: per group of hypotheses, the one with the highest mean score against the others
(or pseudo-references). Blocks of groups run together, so each distinct text is embedded once in full batches and
similar groups are matched at once (docs/pairwise.md)."""

from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from bertscore_tm.embedding.embedder import own_precision
from bertscore_tm.embedding.rows import TokenTexts
from bertscore_tm.engines.pairwise import Tile, make_tile, score_tiles, scored_blank, tile_cuts, tile_tokens_for
from bertscore_tm.errors import ArgumentValueError
from bertscore_tm.models.prompts import MarkedIds
from bertscore_tm.scoring.baselines import f_beta_baseline, rescale
from bertscore_tm.scoring.distinct import distinct_of, token_index
from bertscore_tm.scoring.idf import idf_weights
from bertscore_tm.scoring.matching import KeptAside
from bertscore_tm.scoring.results import progress_bar
from bertscore_tm.scoring.scorer import Scorer
from bertscore_tm.scoring.token_rules import kept, scored_weights
from bertscore_tm.settings.config import Config
from bertscore_tm.settings.rules import boolean
from bertscore_tm.settings.texts import check_groups

# -- input checks (before any model is loaded) --------------------------------------------------------------


def check_mbr_inputs(
    groups: Sequence[Sequence[str]], references: Sequence[Sequence[str]] | None
) -> tuple[list[list[str]], list[list[str]] | None]:
    """Both checked, and as many reference groups as groups."""
    hyps = check_groups(groups)
    if references is None:
        return hyps, None
    refs = check_groups(references, "references", "reference")
    if len(refs) != len(hyps):
        raise ArgumentValueError(
            f"references has {len(refs)} groups but groups has {len(hyps)}: "
            "give one list of pseudo-references per group",
            argument="references",
            allowed=f"{len(hyps)} groups",
            value=len(refs),
            others=("groups",),
        )
    return hyps, refs


#: The scores MBR can average, each with its place among `kernel.weighted_scores`' (F-beta's with a beta).
UTILITIES = {"precision": 0, "recall": 1, "f1": 2, "f_beta": 3}


def check_utility(utility: object, beta: float | None) -> int:
    """`utility`'s row among the scores, or an error (``"f_beta"`` needs a beta).

    >>> check_utility("recall", None), check_utility("f_beta", 3.0)
    (1, 3)
    """
    if not isinstance(utility, str) or utility not in UTILITIES:
        raise ArgumentValueError(
            f"utility must be one of {', '.join(map(repr, UTILITIES))}, got {utility!r}",
            argument="utility",
            allowed=" | ".join(UTILITIES),
            value=utility,
        )
    if utility == "f_beta" and beta is None:
        raise ArgumentValueError(
            'utility="f_beta" needs beta= in the settings (e.g. beta=3 for F3): without a beta there is no F-beta',
            argument="utility",
            allowed='"f1", "precision" or "recall" without beta',
            value=utility,
            others=("beta",),
        )
    return UTILITIES[utility]


# -- the groups, as distinct texts --------------------------------------------------------------------------


@dataclass
class _Group:
    """One group: its distinct hypotheses and references (text ids) with how often each occurs."""

    hyps: list[int]  # distinct hypothesis texts
    hyp_slot: list[int]  # for each hypothesis as given, its index in `hyps`
    refs: list[int]  # distinct reference texts (the hypotheses again without `references`)
    ref_count: list[int]  # how often each occurs among the references as given
    ref_docs: list[int]  # the references as given (for IDF)
    own: bool  # references are the hypotheses themselves: leave each one's own position out
    ref_slot: list[int]  # with `own`, for each hypothesis as given, its index in `refs` (its own position)


def _distinct(ids: list[int]) -> tuple[list[int], list[int], list[int]]:
    """(distinct values in order, each value's index among them, how often each occurs)."""
    counts = Counter(ids)  # in the order of first occurrence
    index = {t: n for n, t in enumerate(counts)}
    return list(counts), [index[t] for t in ids], list(counts.values())


def _groups(text_of_input: Tensor, hyps: list[list[str]], refs: list[list[str]] | None) -> list[_Group]:
    """The groups as distinct texts; without `refs` the hypotheses come again as references, so each side
    gets its own prompt."""
    out = []
    text_of = text_of_input.tolist()
    total = sum(len(group) for group in hyps)
    pos, ref_pos = 0, total
    for g, group in enumerate(hyps):
        ids = text_of[pos : pos + len(group)]
        pos += len(group)
        uniq, slot, _ = _distinct(ids)
        size = len(group) if refs is None else len(refs[g])
        r_ids = text_of[ref_pos : ref_pos + size]
        ref_pos += size
        r_uniq, r_slot, r_counts = _distinct(r_ids)
        out.append(_Group(uniq, slot, r_uniq, r_counts, r_ids, own=refs is None, ref_slot=r_slot))
    return out


class _Weights:
    """Token weights per group, IDF over each group's references as given; prompt and masked tokens weigh 0."""

    def __init__(
        self, scorer: Scorer, texts: TokenTexts, marked: Tensor, groups: list[_Group], flags: Tensor | None
    ) -> None:
        self.texts, self.ids, self.marked, self.flags = texts, texts.sources[0], marked, flags
        self.vocab = scorer.vocab_size
        self.idf = scorer.counts_idf
        if not self.idf:  # fixed IDF (idf_texts, idf_weights) or plain: one table for every group
            self.plain = scorer.weights()
            return
        docs = torch.tensor([t for grp in groups for t in grp.ref_docs], dtype=torch.long)
        doc_group = torch.repeat_interleave(
            torch.arange(len(groups)), torch.tensor([len(grp.ref_docs) for grp in groups])
        )
        lengths = texts.length[docs].long()
        index = token_index(texts, docs)
        tokens, counted = self.ids[index].long(), ~marked[index]  # a prompt's (marked) tokens are not counted
        doc = torch.repeat_interleave(torch.arange(len(docs)), lengths)
        doc, tokens = doc[counted], tokens[counted]
        first = torch.unique(doc * self.vocab + tokens)  # each (document, token) once
        keys = doc_group[first // self.vocab] * self.vocab + first % self.vocab
        self.keys, self.df = torch.unique(keys, return_counts=True)
        self.num_refs = torch.tensor([len(grp.ref_docs) for grp in groups], dtype=torch.float64)

    def of(self, group_of_slot: Tensor, slot_texts: Tensor) -> Tensor:
        """Float64 weights of the tokens of `slot_texts`, each in group `group_of_slot`."""
        index = token_index(self.texts, slot_texts)
        ids, marked = self.ids[index].long(), self.marked[index]
        if not self.idf:
            return scored_weights(self.plain, ids, marked, self.flags)
        group = torch.repeat_interleave(group_of_slot, self.texts.length[slot_texts].long())
        keys = group * self.vocab + ids
        at = torch.searchsorted(self.keys, keys).clamp(max=len(self.keys) - 1)
        df = torch.where(self.keys[at] == keys, self.df[at], 0)
        weights = idf_weights(df, self.num_refs[group])
        keep = kept(ids, marked, self.flags)
        return weights if keep is None else weights.masked_fill(~keep, 0.0)


# -- planning: batches of similar groups, blocks of batches -------------------------------------------------


def _padded(grp: _Group, length: list[int]) -> tuple[int, int, int, int]:
    """A group's padded similarities: (hypotheses, the longest's tokens, references, the longest's tokens)."""
    hyps, refs = [length[t] for t in grp.hyps], [length[t] for t in grp.refs]
    return (len(hyps), max([1, *hyps]), len(refs), max([1, *refs]))


def _plan(
    groups: list[_Group], padded: list[tuple[int, int, int, int]], length: list[int], sim_bytes: int, block_tokens: int
) -> list[list[list[int]]]:
    """Blocks of batches of similar groups (`padded`: each one's `_padded`): a batch grows while its padded
    similarities fit `sim_bytes` (a group too large alone is tiled), a block until its new texts hold
    `block_tokens`."""
    order = sorted(range(len(groups)), key=lambda g: (-padded[g][0], -padded[g][2], -max(padded[g][1], padded[g][3])))
    batches: list[list[int]] = []
    dims: tuple[int, ...] = (0, 0, 0, 0)
    for g in order:
        new = padded[g]
        if batches:
            merged = tuple(max(a, b) for a, b in zip(dims, new, strict=True))
            if (len(batches[-1]) + 1) * math.prod(merged) * 4 <= sim_bytes:
                batches[-1].append(g)
                dims = merged
                continue
        batches.append([g])
        dims = new
    blocks: list[list[list[int]]] = []
    seen: set[int] = set()
    tokens = 0
    for batch in batches:
        if not blocks or tokens >= block_tokens:
            blocks.append([])
            tokens = 0
        blocks[-1].append(batch)
        for g in batch:
            for t in (*groups[g].hyps, *groups[g].refs):
                if t not in seen:
                    seen.add(t)
                    tokens += length[t]
    return blocks


# -- scoring ------------------------------------------------------------------------------------------------


def _utilities(grp: _Group, f: list[list[float]]) -> list[float]:
    """Each hypothesis's mean score, summed exactly so equal texts tie; against its own group, less its own
    position."""
    total = sum(grp.ref_count)
    out = []
    for i, d in enumerate(grp.hyp_slot):
        row = f[d]
        terms = [c * x for c, x in zip(grp.ref_count, row, strict=True)]
        if grp.own:
            terms.append(-row[grp.ref_slot[i]])  # its own position
            out.append(math.fsum(terms) / (total - 1) if total > 1 else math.nan)
        else:
            out.append(math.fsum(terms) / total)
    return out


def select(
    scorer: Scorer,
    device: torch.device,
    groups: Sequence[Sequence[str]],
    references: Sequence[Sequence[str]] | None = None,
    return_utilities: bool = False,
    verbose: bool = False,
    sim_bytes: int | None = None,
    block_tokens: int | None = None,
    utility: str = "f1",
) -> list[int] | tuple[list[int], list[Tensor]]:
    """MBR with `scorer` on `device`: see :func:`mbr_select`; `sim_bytes` and `block_tokens` bound the memory."""
    hyps, refs = check_mbr_inputs(groups, references)
    boolean("return_utilities", return_utilities)
    which = check_utility(utility, scorer.beta)
    if scorer.all_layers:
        raise ArgumentValueError(
            "mbr_select scores with one layer: use a metric with all_layers=False",
            argument="all_layers",
            allowed="False",
            value=True,
        )
    with own_precision(device):  # the setting's precision, whatever autocast the caller runs under
        run = _Run(scorer, device, hyps, refs, (sim_bytes, block_tokens), which)
        with progress_bar(verbose, len(run.groups), "BERTScore: MBR", "group") as progress:
            utilities = run.utilities(progress)
    chosen = [max(range(len(u)), key=lambda i: (u[i], -i)) if len(u) > 1 else 0 for u in utilities]
    if return_utilities:
        return chosen, [torch.tensor(u, dtype=torch.float64) for u in utilities]
    return chosen


class _Run:
    """One MBR run: the distinct texts, the groups, their weights and the plan of blocks."""

    def __init__(
        self,
        scorer: Scorer,
        device: torch.device,
        hyps: list[list[str]],
        refs: list[list[str]] | None,
        budgets: tuple[int | None, int | None],
        which: int,
    ) -> None:
        scorer.follow(device)
        self.scorer, embedder = scorer, scorer.embedder
        sim_bytes, block_tokens = budgets
        self.sim_bytes = embedder.block_bytes // 8 if sim_bytes is None else sim_bytes
        self.which = which
        block_tokens = 4 * embedder.max_tokens if block_tokens is None else block_tokens
        both = MarkedIds.joined(*_encoded(scorer, hyps, refs))
        ids, marked = both.ids, both.marked
        self.texts, text_of = distinct_of(both)
        self.groups = _groups(text_of, hyps, refs)
        flags = scorer.token_flags(marked)  # a mask's, or a prompt's marked tokens: out of the matching
        self.weights = _Weights(scorer, self.texts, marked, self.groups, flags)
        self.live = kept(ids, marked, flags)
        self.blank = scored_blank(scorer, self.texts, both, flags)
        baseline = scorer.baseline  # the utility's own column (F-beta's made from P, R, F as the paired scores do)
        if baseline is not None and scorer.beta is not None:
            baseline = torch.cat((baseline, f_beta_baseline(baseline, scorer.beta)), -1)
        self.u_baseline = None if baseline is None else baseline[0, which].to(embedder.device)
        self.length = self.texts.length.tolist()
        self.padded = [_padded(grp, self.length) for grp in self.groups]
        self.blocks = _plan(self.groups, self.padded, self.length, self.sim_bytes, block_tokens)
        last_use = [-1] * len(self.length)  # the last block needing each text
        for b, block in enumerate(self.blocks):
            for g in (g for batch in block for g in batch):
                for t in (*self.groups[g].hyps, *self.groups[g].refs):
                    last_use[t] = b
        self.last_use = torch.tensor(last_use, dtype=torch.long)

    def utilities(self, progress: Any) -> list[list[float]]:
        """Each group's utilities, a block at a time; texts a later block needs are kept aside."""
        utilities: list[list[float]] = [[] for _ in self.groups]
        aside = KeptAside(self.last_use, self.texts.length)
        embedder = self.scorer.embedder
        for b, block in enumerate(self.blocks):
            grps = self.groups
            needed = list(dict.fromkeys(t for batch in block for g in batch for t in (*grps[g].hyps, *grps[g].refs)))
            table = embedder.new_table(sum(self.length[t] for t in needed))
            row_of, fresh = aside.fill(
                embedder, table, needed, lambda ts: [self.texts[t] for t in ts], self.texts.heads, b
            )
            for batch in block:
                for g, f in zip(batch, self.group_scores(table, row_of, batch), strict=True):
                    f = f if self.u_baseline is None else rescale(f, self.u_baseline)
                    utilities[g] = _utilities(grps[g], f.tolist())
            aside.keep(table, fresh, row_of, b)
            del table
            if progress is not None:
                progress.update(sum(len(batch) for batch in block))
        return utilities

    def group_scores(self, table: Tensor, row_of: dict[int, int], batch: list[int]) -> list[Tensor]:
        """The utility's score of each distinct hypothesis against each distinct reference, per group of
        `batch`; one large group in tiles of its own."""
        length, groups, beta = self.texts.length.long(), self.groups, self.scorer.beta

        def tile(slots: list[list[int]]) -> Tile:
            k = max(len(s) for s in slots)
            ids = torch.tensor([s[i] if i < len(s) else -1 for s in slots for i in range(k)], dtype=torch.long)
            real = ids >= 0
            group_of = torch.tensor([g for g in batch for _ in range(k)], dtype=torch.long)
            starts = torch.tensor([row_of.get(t, 0) for t in ids.tolist()], dtype=torch.long)
            lengths = torch.where(real, length[ids.clamp(min=0)], 0)
            on = None if self.live is None else self.live[token_index(self.texts, ids[real])]
            token_weights = self.weights.of(group_of[real], ids[real])
            blank = self.blank[ids.clamp(min=0)]
            return make_tile(table, starts, lengths, token_weights, ids, blank, groups=len(slots), live=on)

        if len(batch) > 1 or math.prod(self.padded[batch[0]]) * 4 <= self.sim_bytes:
            hyps = tile([groups[g].hyps for g in batch])
            refs = tile([groups[g].refs for g in batch])
            f = score_tiles(hyps, refs, beta)[:, 0, :, :, self.which]  # [G, Kh, Kr]
            return [f[i, : len(groups[g].hyps), : len(groups[g].refs)] for i, g in enumerate(batch)]
        # one large group: tiles of its own hypotheses against tiles of its references
        grp = groups[batch[0]]
        tile_tokens = tile_tokens_for(self.sim_bytes, 1)
        f = torch.empty((len(grp.hyps), len(grp.refs)), dtype=torch.float32, device=table.device)
        h_order = sorted(range(len(grp.hyps)), key=lambda i: -int(length[grp.hyps[i]]))
        r_order = sorted(range(len(grp.refs)), key=lambda i: -int(length[grp.refs[i]]))
        for hl, hh in tile_cuts([int(length[grp.hyps[i]]) for i in h_order], tile_tokens):
            h_at = h_order[hl:hh]
            hyps = tile([[grp.hyps[i] for i in h_at]])
            for rl, rh in tile_cuts([int(length[grp.refs[i]]) for i in r_order], tile_tokens):
                r_at = r_order[rl:rh]
                part = score_tiles(hyps, tile([[grp.refs[i] for i in r_at]]), beta)[0, 0, :, :, self.which]
                f[torch.tensor(h_at)[:, None], torch.tensor(r_at)[None, :]] = part
        return [f]


def _encoded(scorer: Scorer, hyps: list[list[str]], refs: list[list[str]] | None) -> tuple[MarkedIds, MarkedIds]:
    """Hypotheses as candidates, then references; without `refs` the hypotheses again, re-encoded only
    where a prompt is set."""
    flat = [h for group in hyps for h in group]
    if refs is not None:
        return scorer.encode_pairs(flat, [r for group in refs for r in group])
    if scorer.prompts == (None, None):
        side = MarkedIds.plain(*scorer.encoder.encode(flat))
        return side, side
    return scorer.encode_pairs(flat, flat)


def mbr_select(
    groups: Sequence[Sequence[str]],
    model_name_or_path: str | os.PathLike[str] | None = None,
    *,
    references: Sequence[Sequence[str]] | None = None,
    return_utilities: bool = False,
    utility: str = "f1",
    **kwargs: Any,
) -> list[int] | tuple[list[int], list[Tensor]]:
    """Minimum-Bayes-risk selection with BERTScore F1 (or `utility`): per group of hypotheses, the index
    of the one with the highest mean score against the others of its group (ties: the lowest index; alone: 0).

    Args:
        groups: one list of hypotheses per source.
        model_name_or_path: as for :class:`BERTScore`.
        references: optional pseudo-references, one list per group: then the mean is over all of them.
        return_utilities: also return each group's means (float64 per group, NaN for a lone hypothesis).
        utility: ``"f1"`` (default), ``"f_beta"`` (needs ``beta=``), ``"precision"`` or ``"recall"``.
        kwargs: :class:`BERTScore`'s settings; with ``idf=True`` each group's IDF is over its references as
            given. For many batches with one model, call :meth:`BERTScore.mbr_select`.

    Returns:
        The chosen index per group; with ``return_utilities``, ``(indices, utilities)``.

    >>> from bertscore_tm import PACKAGED_MINILM
    >>> mbr_select([["The cat sat on the mat.", "A cat sat on the mat.", "Dogs bark loudly."], ["Hello."]],
    ...            PACKAGED_MINILM)
    [0, 0]
    """
    check_mbr_inputs(groups, references)
    boolean("return_utilities", return_utilities)
    unused = ("all_layers", "reduction", "output", "return_hash")  # one layer, and its own result
    config = Config.of({"model_name_or_path": model_name_or_path, **kwargs}, caller="mbr_select", unused=unused)
    check_utility(utility, config.scoring.beta)
    device, verbose = torch.device(config.runtime.device or "cpu"), config.runtime.verbose
    return select(Scorer(config), device, groups, references, return_utilities, verbose=verbose, utility=utility)
