"""Long texts: the window rule that lets a text longer than the model's window be embedded whole.

With ``long_texts="window"`` a text of n tokens (special tokens aside) that does not fit the model's window of w
tokens is cut into windows of w tokens starting at 0, s, 2s, ... (stride s), the last one ending exactly at
token n. Each window is wrapped in the model's special tokens and embedded on its own; every token then takes
its vector from the window in which it lies farthest from an edge (ties: the earlier window), the leading
special tokens from the first window and the trailing ones from the last. The text is then its usual n +
specials vectors, so matching, weights and IDF see it as any other text.

A text with a head (a prompt's and a context's tokens, marked as negative ids, `bertscore_tm.models.prompts`)
that does not fit carries its head in every window, after the leading special tokens: the text's own tokens
slide in the room the head leaves, with the stride scaled to that room (`WindowRule.room`), so every window is
read with its prompt and its context, as the model is meant to read a text.

With ``long_texts="sled"`` a text is embedded as CodeBERTScore (`code-bert-score` 0.4.1) embeds code longer
than the window, by SLED's rule (Ivgy et al., 2022; `SledRule`): windows of the model's whole window are cut
from the sequence itself, its special tokens and head included (no window gets special tokens of its own), and
each token takes its vector from one window, where a quarter of the window on each side of it is context.

This module holds the rule (`window_starts`, `token_windows`), its setting (`WindowRule`, `window_rule`,
checked before any model loads) and the stitching plan (`plan_pieces`): which sequence each forward pass
runs and which of its output rows go to which rows of the text. A text that fits is one piece, the whole
sequence, so it is embedded exactly as in truncate mode.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise, repeat
from typing import TYPE_CHECKING, NamedTuple

import torch
from torch import Tensor

from bertscore_tm.errors import ArgumentValueError
from bertscore_tm.models.model_family import special_layout

if TYPE_CHECKING:
    from bertscore_tm.models.tokenizing import TextEncoder

#: The values of `long_texts`.


def window_starts(n: int, size: int, stride: int) -> list[int]:
    """First token (0-based, special tokens aside) of each window of a text of `n` tokens: 0, s, 2s, ...
    while a window starting there ends before token n, then the window ending exactly at token n.

    >>> window_starts(10, 4, 2)
    [0, 2, 4, 6]
    >>> window_starts(11, 4, 3)
    [0, 3, 6, 7]
    >>> window_starts(4, 4, 2)  # a text that fits is one window
    [0]
    """
    if n <= size:
        return [0]
    starts = list(range(0, n - size, stride))
    return [*starts, n - size]


def _own_ends(n: int, size: int, starts: Sequence[int]) -> list[int]:
    """One past the last token each window owns. Windows are equally wide, so a token's farthest-from-an-edge
    window is the one whose centre is nearest; between windows j and j + 1 the tokens up to the midpoint of
    their centres (included: ties go to the earlier window) belong to j."""
    ends = [(a + b + size - 1) // 2 + 1 for a, b in pairwise(starts)]
    return [*ends, n]


def token_windows(n: int, size: int, stride: int) -> Tensor:
    """The window each token takes its vector from (int64 [n], special tokens aside): the window in which it
    is farthest from an edge, that is the largest min(distance to the window's first token, distance to its
    last token); ties go to the earlier window.

    >>> token_windows(10, 4, 2).tolist()  # windows at 0, 2, 4, 6
    [0, 0, 0, 1, 1, 2, 2, 3, 3, 3]
    """
    starts = window_starts(n, size, stride)
    lengths = torch.diff(torch.tensor([0, *_own_ends(n, size, starts)]))
    return torch.repeat_interleave(torch.arange(len(starts)), lengths)


class Piece(NamedTuple):
    """One forward pass's sequence and the rows of it that a text keeps.

    `start` is the first token (special tokens and head aside) of the window, or None for the whole sequence;
    `size` the sequence's length with its special tokens. Rows `src .. src + length` of its output go to rows
    `dst .. dst + length` of the text (row 0 = the text's first row, a leading special token). `head`: the
    text's head tokens, which every window of it carries."""

    text: int
    start: int | None
    size: int
    src: int
    length: int
    dst: int
    head: int = 0


@dataclass(frozen=True)
class WindowRule:
    """Windows of `size` tokens every `stride` tokens, for texts with `lead` special tokens before their
    tokens and `trail` after them.

    >>> rule = WindowRule(size=4, stride=2, lead=1, trail=1)
    >>> [(p.start, p.src, p.length, p.dst) for p in rule.pieces(0, 12)]  # 10 tokens + 2 specials
    [(0, 0, 4, 0), (2, 2, 2, 4), (4, 2, 2, 6), (6, 2, 4, 8)]
    >>> rule.label
    'window-w4-s2'
    """

    size: int
    stride: int
    lead: int
    trail: int

    @property
    def label(self) -> str:
        """How the hash code names the setting."""
        return f"window-w{self.size}-s{self.stride}"

    def room(self, head: int) -> tuple[int, int]:
        """The window and the stride of a text's own tokens beside a head of `head` tokens: what the head leaves
        of the window, and the stride scaled to it (at least 1), so that windows overlap as much as without one.

        >>> WindowRule(size=8, stride=4, lead=1, trail=1).room(2)
        (6, 3)
        """
        room = self.size - head
        return room, max(1, self.stride * room // self.size)

    def pieces(self, text: int, length: int, lo: int = 0, hi: int | None = None, head: int = 0) -> list[Piece]:
        """The pieces that give rows `lo .. hi` (default: all) of a text whose sequence (special tokens
        included) has `length` tokens, `head` of them a head that every window carries.

        >>> rule = WindowRule(size=4, stride=2, lead=1, trail=1)
        >>> [(p.start, p.src, p.length, p.dst) for p in rule.pieces(0, 9, head=1)]  # a head, 6 tokens + 2 specials
        [(0, 0, 4, 0), (1, 3, 1, 4), (2, 3, 1, 5), (3, 3, 3, 6)]
        """
        hi = length if hi is None else hi
        if length - self.lead - self.trail <= self.size:
            return [Piece(text, None, length, lo, hi - lo, lo)] if hi > lo else []
        size, stride = self.room(head)
        n = length - self.lead - self.trail - head
        starts = window_starts(n, size, stride)
        ends = _own_ends(n, size, starts)
        out = []
        begin = 0  # first row the window owns: the leading specials and the head go with the first window
        for j, (start, end) in enumerate(zip(starts, ends, strict=True)):
            stop = length if j == len(starts) - 1 else self.lead + head + end  # the trailing ones with the last
            a, b = max(begin, lo), min(stop, hi)
            if b > a:
                out.append(Piece(text, start, self.size + self.lead + self.trail, a - start, b - a, a, head))
            begin = stop
        return out

    def ids(self, seq: Tensor, piece: Piece) -> Tensor:
        """The token ids `piece` runs: the head and the window's tokens between the text's own special tokens."""
        if piece.start is None:
            return seq
        kept = self.lead + piece.head
        first = kept + piece.start
        parts = (seq[:kept], seq[first : first + self.size - piece.head], seq[len(seq) - self.trail :])
        return torch.cat(parts)


def sled_windows(n: int, window: int) -> list[tuple[int, int, int]]:
    """SLED's windows over a sequence of `n` tokens (special tokens included) longer than `window`: (first token,
    first token it gives a vector, one past its last) of each, in sequence coordinates. A margin of a quarter of
    the window (rounded down) is context alone at each inner edge; the windows move by the rest, the first gives
    vectors from token 0 and the last, which ends at token n, up to the end, each from where the last one stopped.

    >>> sled_windows(20, 8)  # margin 2, stride 4
    [(0, 0, 6), (4, 6, 10), (8, 10, 14), (12, 14, 20)]
    """
    margin = window // 4
    stride = window - 2 * margin
    out = [(0, 0, window - margin)]
    end = window
    while end < n:
        end = min(n, end + stride)
        start = n - window if end == n else out[-1][0] + stride
        out.append((start, out[-1][2], n if end == n else out[-1][2] + stride))
    return out


@dataclass(frozen=True)
class SledRule(WindowRule):
    """CodeBERTScore's long texts (`code-bert-score` 0.4.1, SLED's rule): a sequence longer than the model's
    window runs in windows of the whole window cut from it (`sled_windows`), heads and special tokens riding
    along as any token; `size` is still the window less the special tokens (so that a text that fits is one
    piece) and `stride` the windows' step.

    >>> rule = SledRule(size=6, stride=4, lead=1, trail=1)
    >>> [(p.start, p.size, p.src, p.length, p.dst) for p in rule.pieces(0, 20)]
    [(0, 8, 0, 6, 0), (4, 8, 2, 4, 6), (8, 8, 2, 4, 10), (12, 8, 2, 6, 14)]
    >>> rule.label
    'sled-w8'
    """

    @property
    def window(self) -> int:
        return self.size + self.lead + self.trail

    @property
    def label(self) -> str:
        return f"sled-w{self.window}"

    def pieces(self, text: int, length: int, lo: int = 0, hi: int | None = None, head: int = 0) -> list[Piece]:
        """As `WindowRule.pieces`; a head is a part of the sequence like any other."""
        hi = length if hi is None else hi
        if length <= self.window:
            return [Piece(text, None, length, lo, hi - lo, lo)] if hi > lo else []
        out = []
        for start, first, stop in sled_windows(length, self.window):
            a, b = max(first, lo), min(stop, hi)
            if b > a:
                out.append(Piece(text, start, self.window, a - start, b - a, a))
        return out

    def ids(self, seq: Tensor, piece: Piece) -> Tensor:
        """The window's slice of the sequence."""
        return seq if piece.start is None else seq[piece.start : piece.start + self.window]


def plan_pieces(
    lengths: Sequence[int],
    rule: WindowRule | None,
    ranges: Sequence[tuple[int, int]] | None = None,
    heads: Sequence[int] | None = None,
) -> list[Piece]:
    """Every piece of the texts of these sequence lengths, text after text: one whole sequence per text
    without a rule (or for a text that fits); `ranges` restricts text i to its rows ``ranges[i]``; `heads`,
    each text's head (`head_lengths`; None: no text has one).

    >>> [(p.text, p.start, p.size) for p in plan_pieces([3, 0, 12], WindowRule(4, 2, 1, 1))]
    [(0, None, 3), (2, 0, 6), (2, 2, 6), (2, 4, 6), (2, 6, 6)]
    """
    if rule is None and ranges is None:  # every text whole: a compute()'s common case, thousands of texts a block
        whole = zip(range(len(lengths)), repeat(None), lengths, repeat(0), lengths, repeat(0), repeat(0))
        return [Piece._make(piece) for piece in whole if piece[2]]
    out: list[Piece] = []
    for i, length in enumerate(lengths):
        lo, hi = (0, length) if ranges is None else ranges[i]
        if rule is None:
            if hi > lo:
                out.append(Piece(i, None, length, lo, hi - lo, lo))
        else:
            out.extend(rule.pieces(i, length, lo, hi, 0 if heads is None else heads[i]))
    return out


def head_lengths(seqs: Sequence[Tensor], lengths: Sequence[int], rule: WindowRule | None) -> list[int] | None:
    """Each text's head (its marked tokens, which lie together after the leading special tokens), counted only
    for the texts that run in windows (the others run whole, whatever their head); None where no text has one."""
    if rule is None:
        return None
    heads = [
        int((seq < 0).sum()) if n - rule.lead - rule.trail > rule.size else 0
        for seq, n in zip(seqs, lengths, strict=True)
    ]
    return heads if any(heads) else None


def piece_ids(seq: Tensor, piece: Piece, rule: WindowRule | None) -> Tensor:
    """The ids a piece of `seq` runs through the model."""
    return seq if rule is None else rule.ids(seq, piece)


# -- the setting ---------------------------------------------------------------------------------------------


def window_rule(long_texts: str, window_stride: int | None, encoder: TextEncoder) -> WindowRule | None:
    """The rule for this setting and tokenizer, or None in truncate mode and for a model without a window
    (whose texts are never cut). The window is the encoder's `max_length` less its special tokens.

    `long_texts` and `window_stride` are checked on their own first (arguments.py); this adds the checks that
    need the tokenizer: ArgumentValueError for a stride outside 1 .. window - 1, or a window too small to slide.
    """
    if long_texts == "truncate" or encoder.max_length is None:
        return None
    lead, trail = special_layout(encoder.tokenizer)
    size = encoder.max_length - encoder.num_special
    if long_texts == "sled":
        if encoder.max_length < 4:
            raise ArgumentValueError(
                f"long_texts='sled' needs a window of at least 4 tokens, got max_length {encoder.max_length}",
                argument="max_length",
                allowed="at least 4",
                value=encoder.max_length,
            )
        return SledRule(size=size, stride=encoder.max_length - 2 * (encoder.max_length // 4), lead=lead, trail=trail)
    where = f"the window of {size} tokens (max_length {encoder.max_length} less {encoder.num_special} special tokens)"
    if size < 2:
        raise ArgumentValueError(
            f"long_texts='window' needs windows of at least 2 tokens; {where} is too small",
            argument="max_length",
            allowed=f"at least {encoder.num_special + 2}",
            value=encoder.max_length,
        )
    stride = size // 2 if window_stride is None else window_stride
    if not 1 <= stride < size:
        raise ArgumentValueError(
            f"window_stride must be between 1 and {size - 1} for {where}, got {stride}",
            argument="window_stride",
            allowed=f"1 to {size - 1}",
            value=stride,
        )
    return WindowRule(size=size, stride=stride, lead=lead, trail=trail)


def window_label(long_texts: str, rule: WindowRule | None) -> str | None:
    """The hash code's name for the setting: None in truncate mode (the reference's codes, unchanged).

    >>> window_label("window", None)  # a model without a window: texts are never cut
    'window-unbounded'
    """
    if long_texts == "truncate":
        return None
    return "window-unbounded" if rule is None else rule.label
