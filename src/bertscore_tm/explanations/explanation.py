"""Why this score? The token-level account of one pair, adding up exactly to its P and R.

Each token's contribution is weight x similarity / its side's sum of weights, so the candidate's add up to P
and the reference's to R; a word is weak where its support falls below a threshold. Every rule (weights, best
similarities, P/R/F, the best reference, rescaling) is the scoring core's own, so the scores are the engine's
bits (docs/explain.md)."""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from bertscore_tm.embedding.embedder import own_precision
from bertscore_tm.engines.paired import best_reference
from bertscore_tm.errors import ArgumentValueError, warn_undefined
from bertscore_tm.explanations.tokens import TokenSpans, WordSpan, best_matches, token_spans, words_of
from bertscore_tm.explanations.types import (
    PairExplanation,
    PairScores,
    ScoreTriple,
    Threshold,
    TokenExplanation,
    WordExplanation,
)
from bertscore_tm.explanations.weighting import Weighting, weak_threshold, weighting
from bertscore_tm.models.prompts import MarkedIds, check_context, prompted_ids
from bertscore_tm.scoring.distinct import distinct_of
from bertscore_tm.scoring.hashcode import names_context
from bertscore_tm.scoring.matching import best_of_references, ragged_scores
from bertscore_tm.scoring.scorer import Scorer
from bertscore_tm.scoring.token_rules import kept, scored_weights
from bertscore_tm.settings.config import Config
from bertscore_tm.settings.rules import finite_number, integer
from bertscore_tm.settings.texts import check_corpus, check_text, check_texts

# -- the engine ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Side:
    """One side of the explained match: its text, ids and their marks (a prompt's and a context's), bests,
    matches, weights, blankness and roles."""

    text: str
    ids: Tensor
    marked: Tensor
    best: Tensor
    match: Tensor
    weights: Tensor
    blank: bool
    roles: list[str | None]


def explain_pairs(
    scorer: Scorer,
    cands: Sequence[str],
    groups: Sequence[Sequence[str]],
    weights: Weighting,
    *,
    device: torch.device | str | None = None,
    layer: int | None = None,
    threshold: float | None = None,
    context: Sequence[str] | None = None,
) -> list[PairExplanation]:
    """Explain each candidate against its references with `scorer`'s model and rules and the given `weights`,
    each distinct text embedded once on `device`. The mask, the prompts and each pair's `context` apply as in the
    paired scores: their tokens are encoded with the text, shown with their role, and take no part in the matching."""
    layer, row = _layer(scorer, layer)
    limit = weak_threshold(scorer, layer, threshold)
    context = check_context(context, len(cands))  # the command line's --text context comes unchecked
    if not cands:
        return []
    device = scorer.embedder.device if device is None else torch.device(device)
    refs = [r for group in groups for r in group]
    counts = torch.tensor([len(g) for g in groups], dtype=torch.long)
    owner = torch.repeat_interleave(torch.arange(len(cands)), counts).tolist()
    with own_precision(device):
        scorer.follow(device)
        cand, ref = scorer.encode_pairs(cands, refs, context, counts.tolist())
        both = MarkedIds.joined(cand, ref)
        scorer.check_known_weights(both.ids, both.marked)
        flags = scorer.token_flags(cand.marked, ref.marked)
        seqs, marks = torch.split(both.ids, both.lens.tolist()), torch.split(both.marked, both.lens.tolist())
        vectors = _vectors(scorer, both, row)
        live = [kept(s, m, flags) for s, m in zip(seqs, marks, strict=True)]
        n = len(cands)  # the references' sequences come after the candidates'
        found = [best_matches(vectors[i], vectors[n + j], live[i], live[n + j]) for j, i in enumerate(owner)]
    matched = MarkedIds(torch.cat([seqs[i] for i in owner]), cand.lens[owner], torch.cat([marks[i] for i in owner]))
    raw, per_ref, top, best = _scores(scorer, weights.table, (matched, ref, flags), found, counts, row)
    out, first = [], 0
    for i, group in enumerate(groups):
        k = first + int(best[i])
        has_context = names_context(None if context is None else [context[i]])
        sides = (
            _side(scorer, 0, (cands[i], seqs[i], marks[i]), found[k][:2], (weights.table, flags), has_context),
            _side(scorer, 1, (refs[k], seqs[n + k], marks[n + k]), found[k][2:], (weights.table, flags), has_context),
        )
        scores = PairScores(
            ScoreTriple(*top[i].tolist()),
            tuple(ScoreTriple(*s) for s in per_ref[first : first + len(group)].tolist()),
            ScoreTriple(*raw[k].tolist()),
            int(best[i]),
        )
        code = scorer.signature_for(has_context).format()  # names the context where the pair had one
        out.append(_explanation(scorer, sides, tuple(group), scores, (limit, layer, row, weights.note, code)))
        first += len(group)
    return out


def _side(
    scorer: Scorer,
    which: int,
    text: tuple[str, Tensor, Tensor],
    found: tuple[Tensor, Tensor],
    weights: tuple[Tensor, Tensor | None],
    has_context: bool,
) -> _Side:
    """One side (`which`: 0 the candidate's, 1 the reference's): its weights as the scores take them, blank where
    the text is, or where the mask or a prompt left it only special tokens; each token's role: "masked" where the
    mask leaves it out, a marked token "prompt" or "context". The prompt comes first, so with both, as many marked
    tokens as the prompt alone marks are the prompt's."""
    original, ids, marked = text
    table, flags = weights
    prompt, name = scorer.prompts[which], ("candidate_prompt", "reference_prompt")[which]
    prompt_tokens = 0
    if prompt is not None:
        prompt_tokens = len(ids)  # without a context, every marked token is the prompt's
        if has_context:
            prompt_tokens = int(prompted_ids(scorer.encoder, [original], prompt, None, name)[0].marked.sum())
    roles: list[str | None] = []
    for t, is_marked in zip(ids.tolist(), marked.tolist(), strict=True):
        if is_marked:
            roles.append("prompt" if prompt_tokens > 0 else "context")
            prompt_tokens -= 1
        elif scorer.ignored is not None and bool(scorer.ignored[t]):
            roles.append("masked")
        else:
            roles.append(None)
    blank = bool(scorer.blank(ids, marked, torch.tensor([len(ids)]), flags)[0])
    return _Side(original, ids, marked, *found, scored_weights(table, ids, marked, flags), blank, roles)


def _layer(scorer: Scorer, layer: int | None) -> tuple[int, int]:
    """The layer explained and its row among the scorer's vectors (any layer with all_layers)."""
    if layer is None:
        layer = scorer.num_layers
    else:
        integer(0)("layer", layer)
        layer = int(layer)
    if not scorer.all_layers:
        if layer != scorer.num_layers:
            raise ArgumentValueError(
                f"layer={layer}: this setting scores with layer {scorer.num_layers} only; explain another layer "
                "with a setting of num_layers=<that layer> (or all_layers=True)",
                argument="layer",
                allowed=f"{scorer.num_layers} or None",
                value=layer,
            )
        return layer, 0
    rows = scorer.embedder.num_rows
    if not 0 <= layer < rows:
        raise ArgumentValueError(
            f"layer={layer} is not a layer of this model (0 to {rows - 1})",
            argument="layer",
            allowed=f"0 to {rows - 1}",
            value=layer,
        )
    return layer, layer


def _vectors(scorer: Scorer, seqs: MarkedIds, row: int) -> list[Tensor]:
    """Each sequence's vectors at the explained layer, as the engine makes them (each distinct text once)."""
    texts, text_of = distinct_of(seqs)
    index, distinct = text_of.tolist(), [texts[t] for t in range(len(texts))]
    source = scorer.embedding_source()
    table = source.new_table(sum(len(s) for s in distinct))
    starts = source.embed_into(table, distinct, heads=texts.heads(list(range(len(texts)))))
    if scorer.all_layers:
        table = table[:, row]
    return [table[starts[n] : starts[n] + len(distinct[n])] for n in index]


def _scores(
    scorer: Scorer,
    table: Tensor,
    sides: tuple[MarkedIds, MarkedIds, Tensor | None],
    found: list[tuple[Tensor, Tensor, Tensor, Tensor]],
    counts: Tensor,
    row: int,
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Per match (`sides`: its candidate, its reference, the flags) its raw P, R, F (F-beta fourth) and rescaled
    ones; per pair the best over its references, rescaled, and the best reference's index: the core's rules at
    the explained layer's `row`."""
    cand, ref, flags = sides
    c_len, r_len = cand.lens.long(), ref.lens.long()
    blank = scorer.blank(cand.ids, cand.marked, c_len, flags) | scorer.blank(ref.ids, ref.marked, r_len, flags)
    raw = ragged_scores(
        torch.cat([f[0] for f in found])[:, None],
        scored_weights(table, cand.ids, cand.marked, flags),
        c_len,
        torch.cat([f[2] for f in found])[:, None],
        scored_weights(table, ref.ids, ref.marked, flags),
        r_len,
        blank,
        scorer.beta,
    )
    warn_undefined(int((torch.isnan(raw[..., :2]).any(dim=(1, 2)) & ~blank).sum()))
    top = best_of_references(raw, counts)
    best = best_reference(raw[..., -1], top[..., -1], counts)  # by F, or by F-beta with a beta
    return raw[:, 0], scorer.rescaled(raw, row)[:, 0], scorer.rescaled(top, row)[:, 0], best[:, 0]


def _explanation(
    scorer: Scorer,
    sides: tuple[_Side, _Side],
    references: tuple[str, ...],
    scores: PairScores,
    context: tuple[Threshold, int, int, str, str],
) -> PairExplanation:
    """One pair's explanation from its best match's two sides (`context`: threshold, layer, row, note, hash code)."""
    limit, layer, row, note, code = context
    blank = sides[0].blank or sides[1].blank
    spans = [token_spans(scorer.encoder, side.text, side.ids.tolist(), side.marked.tolist()) for side in sides]
    words = [words_of(side.text, s.spans) for side, s in zip(sides, spans, strict=True)]
    c_tokens, r_tokens = (
        _tokens(side, s, word_of, blank) for side, s, (_, word_of) in zip(sides, spans, words, strict=True)
    )
    b = None if scorer.baseline is None else scorer.baseline[row].tolist()  # row 0 without all_layers
    baseline = None if b is None else (float(b[0]), float(b[1]), float(b[2]))
    return PairExplanation(
        candidate=sides[0].text,
        references=references,
        precision=scores.pair.precision,
        recall=scores.pair.recall,
        f1=scores.pair.f1,
        best_reference=scores.best,
        reference_scores=scores.references,
        raw=scores.raw,
        candidate_tokens=c_tokens,
        reference_tokens=r_tokens,
        candidate_words=_words(words[0][0], c_tokens, r_tokens, words[1][0], limit.candidate),
        reference_words=_words(words[1][0], r_tokens, c_tokens, words[0][0], limit.reference),
        hash_code=code,
        layer=layer,
        baseline=baseline,
        threshold=limit,
        weighting=note,
        blank=blank,
        notes=_notes(sides, scores, baseline),
        f_beta=scores.pair.f_beta,
        ignore=scorer.ignore_label,
    )


def _tokens(side: _Side, spans: TokenSpans, word_of: list[int | None], blank: bool) -> tuple[TokenExplanation, ...]:
    """A side's tokens: contribution = weight x similarity / the side's sum of weights (0 in a blank pair)."""
    weights = side.weights.double()
    best = side.best.double()
    contributions = torch.zeros_like(weights) if blank else weights * best / weights.sum()
    where = [(None, None) if span is None else span for span in spans.spans]
    return tuple(
        TokenExplanation(
            index=t,
            token=spans.pieces[t],
            token_id=int(side.ids[t]),
            start=where[t][0],
            end=where[t][1],
            special=spans.special[t],
            match=None if int(side.match[t]) < 0 else int(side.match[t]),
            similarity=float(best[t]),
            weight=float(weights[t]),
            contribution=float(contributions[t]),
            word=word_of[t],
            role=side.roles[t],
        )
        for t in range(len(side.ids))
    )


def _words(
    words: list[WordSpan],
    tokens: tuple[TokenExplanation, ...],
    other: tuple[TokenExplanation, ...],
    other_words: list[WordSpan],
    threshold: float | None,
) -> tuple[WordExplanation, ...]:
    """A side's words: support is its tokens' weight-averaged similarity (their plain mean where they weigh 0);
    counterpart, the other side's word holding its heaviest token's best match."""
    out = []
    for n, word in enumerate(words):
        mine = [tokens[t] for t in word.tokens]
        weight = math.fsum(t.weight for t in mine)
        if weight > 0:
            support = math.fsum(t.weight * t.similarity for t in mine) / weight
        else:
            support = math.fsum(t.similarity for t in mine) / len(mine)
        heaviest = max(mine, key=lambda t: (t.weight, t.similarity))
        match = None if heaviest.match is None else other[heaviest.match]
        counterpart = None if match is None else match.word
        shown = other_words[counterpart].text if counterpart is not None else (match.token if match else "")
        out.append(
            WordExplanation(
                index=n,
                text=word.text,
                start=word.start,
                end=word.end,
                tokens=tuple(word.tokens),
                weight=weight,
                support=support,
                contribution=math.fsum(t.contribution for t in mine),
                counterpart=counterpart,
                counterpart_text=shown,
                weak=threshold is not None and weight > 0 and support < threshold,
            )
        )
    return tuple(out)


def _notes(
    sides: tuple[_Side, _Side], scores: PairScores, baseline: tuple[float, float, float] | None
) -> tuple[str, ...]:
    """What a reader of the explanation must know to read its numbers right."""
    notes = []
    blank = sides[0].blank or sides[1].blank
    if blank:
        which = " and the ".join(
            name for side, name in zip(sides, ("candidate", "reference"), strict=True) if side.blank
        )
        notes.append(
            f"The {which} is blank (nothing but special tokens, once the tokens out of the matching are left out): a "
            "pair with a blank side scores P = R = F = 0 by definition (docs/semantics.md); its tokens are shown but "
            "contribute nothing."
        )
    left_out = {"masked": "masked (ignore=)", "prompt": "of the fixed prompt", "context": "of the pair's context"}
    for role, words in left_out.items():  # a note per kind of token out of the matching, where there are any
        if count := sum(r == role for side in sides for r in side.roles):
            notes.append(
                f"{count} token(s) {words}: encoded with the text, but no match for the other side and weighing 0 "
                "(shown with their role; they contribute nothing)."
            )
    for side, name, score in ((sides[0], "candidate", "P"), (sides[1], "reference", "R")):
        if not blank and float(side.weights.double().sum()) == 0:
            notes.append(
                f"Every {name} token weighs 0 (with IDF: each is in every reference): {score} is undefined (NaN)."
            )
    if len(scores.references) > 1:
        notes.append(
            f"{len(scores.references)} references: P, R and F are each the maximum over them; the tokens are those "
            f"of reference {scores.best} (the highest {'F' if scores.pair.f_beta is None else 'F-beta'}) and add up "
            "to its own P and R."
        )
    if baseline is not None:
        notes.append(
            "Rescaled: the contributions add up to the raw P and R; each score x maps to (x - b) / (1 - b) with "
            f"b = {baseline[0]:.6f} (P), {baseline[1]:.6f} (R), {baseline[2]:.6f} (F)."
        )
    return tuple(notes)


# -- the public function -------------------------------------------------------------------------------------


def explain(
    candidate: str,
    references: str | Sequence[str],
    model_name_or_path: str | os.PathLike[str] | None = None,
    *,
    idf_references: Sequence[str] | None = None,
    threshold: float | None = None,
    layer: int | None = None,
    context: str | None = None,
    **kwargs: Any,
) -> PairExplanation:
    """Explain the BERTScore of `candidate` against `references` (one text or several: the best counts), token by
    token (:class:`PairExplanation`, docs/explain.md). `kwargs` are :class:`BERTScore`'s. With ``idf=True`` the
    IDF is over `idf_references` where given (a corpus run's), else the pair's own references; `threshold`: the
    support below which a word is weak (default: the layer's baseline); `layer`: one of ``all_layers=True``.

    >>> from bertscore_tm import PACKAGED_MINILM
    >>> why = explain("The cat sat on the mat.", "A cat was sitting on the mat.", PACKAGED_MINILM)
    >>> [(w.text, w.counterpart_text) for w in why.candidate_words][:3]
    [('The', 'A'), ('cat', 'cat'), ('sat', 'sitting')]
    """
    arguments = {"model_name_or_path": model_name_or_path, **kwargs}
    _pair_arguments(candidate, references)  # before anything loads
    _checked_options(threshold, idf_references, bool(kwargs.get("idf", False)), kwargs)
    check_context(context, 1)
    config = Config.of(arguments, caller="explain", unused=("reduction", "output", "return_hash"))
    return explain_with(
        Scorer(config),
        config.runtime.device or "cpu",
        candidate,
        references,
        idf_references=idf_references,
        threshold=threshold,
        layer=layer,
        context=context,
    )


def explain_with(
    scorer: Scorer,
    device: torch.device | str | None,
    candidate: str,
    references: str | Sequence[str],
    *,
    idf_references: Sequence[str] | None = None,
    counts: tuple[Tensor, Tensor] | None = None,
    threshold: float | None = None,
    layer: int | None = None,
    context: str | None = None,
) -> PairExplanation:
    """`explain` with a scoring core already built (a metric's), on `device`; with IDF counted, over
    `idf_references`, else the document `counts` where given, else the pair's own references."""
    cand, refs = _pair_arguments(candidate, references)
    settings = scorer.config.scoring
    flat = _checked_options(
        threshold, idf_references, scorer.idf, {"idf_texts": settings.idf_texts, "idf_weights": settings.idf_weights}
    )
    weights = weighting(scorer, [refs], flat, counts)
    contexts = check_context(context, 1)
    return explain_pairs(
        scorer, [cand], [refs], weights, device=device, layer=layer, threshold=threshold, context=contexts
    )[0]


def _pair_arguments(candidate: object, references: object) -> tuple[str, list[str]]:
    """The candidate (a text) and its references (one text, or at least one), by the one text rule."""
    return check_text(candidate, "candidate"), check_texts(references, "references", what="reference", empty=False)


def _checked_options(threshold: object, idf_references: object, idf: bool, kwargs: dict[str, Any]) -> list[str] | None:
    """`threshold` a finite number or None; `idf_references` texts, only where the IDF is counted."""
    finite_number(optional=True)("threshold", threshold)
    if idf_references is None:
        return None
    if not idf or kwargs.get("idf_texts") is not None or kwargs.get("idf_weights") is not None:
        raise ArgumentValueError(
            "idf_references counts the IDF over these references: it needs idf=True, without idf_texts or idf_weights",
            argument="idf_references",
            allowed="None, or texts with idf=True",
            value="...",
            others=("idf",),
        )
    return check_corpus(idf_references, "idf_references")
