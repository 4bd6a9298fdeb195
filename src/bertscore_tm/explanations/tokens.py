"""Where each token lies in the original text, the words the tokens make up, and each token's best match.
Spans come from a fast tokenizer's offsets, shifted back to the text as given; a Python tokenizer has none, so
its pieces are searched for left to right. Words are runs of non-space characters."""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from bertscore_tm.scoring.longpairs import match_in_tiles, settle

#: Similarity-matrix elements computed at once when a long pair is matched in tiles.
MATCH_BLOCK_ELEMENTS = 1 << 22

_WORD = re.compile(r"\S+")


@dataclass(frozen=True)
class TokenSpans:
    """Each token's piece, its span in the original text (None: special, or not placed) and whether the
    tokenizer added it."""

    pieces: list[str]
    spans: list[tuple[int, int] | None]
    special: list[bool]


def token_spans(encoder: Any, text: str, ids: Sequence[int], marked: Sequence[bool]) -> TokenSpans:
    """Where the tokens `ids` lie in `text`. A prompt's or a context's tokens (`marked`) lie in no
    character of it: their pieces are named, their spans None."""
    ids = [int(i) for i in ids]
    if any(marked):
        own = [k for k, m in enumerate(marked) if not m]
        inner = _text_spans(encoder, text, [ids[k] for k in own])
        pieces = [str(p) for p in encoder.tokenizer.convert_ids_to_tokens(ids)]
        spans: list[tuple[int, int] | None] = [None] * len(ids)
        special = [False] * len(ids)
        for n, k in enumerate(own):
            spans[k], special[k] = inner.spans[n], inner.special[n]
        return TokenSpans(pieces, spans, special)
    return _text_spans(encoder, text, ids)


def _text_spans(encoder: Any, text: str, ids: list[int]) -> TokenSpans:
    """`token_spans` of a text's own tokens: the offsets are of the stripped text with the encoder's prefix
    space, so they are shifted back."""
    tokenizer = encoder.tokenizer
    pieces = [str(p) for p in tokenizer.convert_ids_to_tokens(ids)]
    stripped = text.strip()
    lead = len(text) - len(text.lstrip())
    seen = " " + stripped if encoder.prefix_space and stripped else stripped
    shift = lead - (len(seen) - len(stripped))
    found = _offsets(encoder, seen, ids)
    if found is not None:
        offsets, special = found  # shifted back, within the text; None for a special or an empty one
        spans = [(max(0, b + shift), min(len(text), e + shift)) for b, e in offsets]
        return TokenSpans(
            pieces, [None if s or b >= e else (b, e) for (b, e), s in zip(spans, special, strict=True)], special
        )
    special = _special_mask(tokenizer, ids)
    return TokenSpans(pieces, _aligned_spans(tokenizer, text, pieces, special), special)


def _offsets(encoder: Any, seen: str, ids: list[int]) -> tuple[list[tuple[int, int]], list[bool]] | None:
    """The fast tokenizer's offsets and special-token mask for `seen`, if it gives the encoder's very ids."""
    tokenizer = encoder.tokenizer
    if not getattr(tokenizer, "is_fast", False):
        return None
    kwargs: dict[str, object] = {"add_special_tokens": True}
    if encoder.truncate and encoder.max_length is not None:
        kwargs.update(truncation=True, max_length=encoder.max_length)
    else:
        kwargs["verbose"] = False
    try:
        enc = tokenizer(seen, return_offsets_mapping=True, return_special_tokens_mask=True, **kwargs)
    except (NotImplementedError, TypeError, ValueError):
        return None
    if list(enc["input_ids"]) != ids:
        return None
    offsets = [(int(b), int(e)) for b, e in enc["offset_mapping"]]
    return offsets, [bool(s) for s in enc["special_tokens_mask"]]


def _special_mask(tokenizer: Any, ids: list[int]) -> list[bool]:
    """Which of `ids` the tokenizer added (its special-token mask of a sequence that has them already)."""
    try:
        mask = tokenizer.get_special_tokens_mask(ids, already_has_special_tokens=True)
        return [bool(m) for m in mask]
    except (NotImplementedError, TypeError, ValueError, AttributeError):
        added = {tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.bos_token_id, tokenizer.eos_token_id}
        return [i in added for i in ids]


def _aligned_spans(tokenizer: Any, text: str, pieces: list[str], special: list[bool]) -> list[tuple[int, int] | None]:
    """Spans without offsets: each piece's text searched after the previous one, ignoring case (None: not
    found)."""
    lowered = text.lower()
    cursor = 0
    spans: list[tuple[int, int] | None] = []
    for piece, is_special in zip(pieces, special, strict=True):
        if is_special:
            spans.append(None)
            continue
        shown = tokenizer.convert_tokens_to_string([piece]).strip().lower()
        shown = shown.removeprefix("##")
        at = lowered.find(shown, cursor) if shown else -1
        if at < 0:
            spans.append(None)
            continue
        spans.append((at, at + len(shown)))
        cursor = at + len(shown)
    return spans


@dataclass(frozen=True)
class WordSpan:
    """A word of the original text (a run of non-space characters) and its tokens' indices."""

    text: str
    start: int
    end: int
    tokens: list[int]


def words_of(text: str, spans: Sequence[tuple[int, int] | None]) -> tuple[list[WordSpan], list[int | None]]:
    """The words of `text` that hold tokens, and each token's word: the word its first character lies in, else
    (a white-space token) the word before it, or the first."""
    found = [(m.group(), m.start(), m.end()) for m in _WORD.finditer(text)]
    starts = [start for _, start, _ in found]
    of_token: list[int | None] = []
    for span in spans:
        if span is None or not found:
            of_token.append(None)
            continue
        of_token.append(max(0, bisect.bisect_right(starts, span[0]) - 1))
    used = sorted({k for k in of_token if k is not None})
    renumber = {k: n for n, k in enumerate(used)}
    words = [WordSpan(found[k][0], found[k][1], found[k][2], []) for k in used]
    numbered = [None if k is None else renumber[k] for k in of_token]
    for t, word in enumerate(numbered):
        if word is not None:
            words[word].tokens.append(t)
    return words, numbered


def best_matches(
    cand: Tensor, ref: Tensor, cand_live: Tensor | None = None, ref_live: Tensor | None = None
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Each token's best similarity and match on the other side, both ways, on the CPU (-1: no match, its
    similarity 0), by the engine's kernel and tiles, so the values are the engine's bits and a long pair's matrix
    is never whole. `cand_live`, `ref_live` leave tokens out of the matching."""
    sides = ((len(cand), cand_live), (len(ref), ref_live))
    c_best, r_best = (torch.full((n, 1), float("-inf"), dtype=torch.float32, device=cand.device) for n, _ in sides)
    c_match, r_match = (torch.full((n, 1), -1, dtype=torch.long, device=cand.device) for n, _ in sides)
    live = None
    if cand_live is not None or ref_live is not None:
        c_live, r_live = (torch.ones(n, dtype=torch.bool) if flags is None else flags for n, flags in sides)
        live = (c_live.to(cand.device), r_live.to(cand.device))
    match_in_tiles(cand, ref, c_best, r_best, MATCH_BLOCK_ELEMENTS, live, (c_match, r_match))
    settle(c_best, r_best)
    return c_best[:, 0].cpu(), c_match[:, 0].cpu(), r_best[:, 0].cpu(), r_match[:, 0].cpu()
