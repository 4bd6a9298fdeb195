"""Long texts: a text longer than the model's window is cut into windows and its vectors stitched back.
``long_texts="window"`` slides windows that each carry the special tokens and the text's head (prompt, context);
``"sled"`` follows CodeBERTScore's SLED rule. Either way a text keeps its n + specials rows, so matching, weights
and IDF see it as any other text; docs/long-texts.md has the rules in full."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise, repeat
from typing import TYPE_CHECKING, ClassVar, NamedTuple

import torch
from torch import Tensor

from bertscore_tm.errors import ArgumentValueError
from bertscore_tm.models.model_family import special_layout

if TYPE_CHECKING:
    from bertscore_tm.models.tokenizing import TextEncoder


def window_starts(n: int, size: int, stride: int) -> list[int]:
    """First token of each window (special tokens aside): 0, s, 2s, ..., then the window ending at token n.

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
    """One past the last token each window owns: the midpoints between window centres (ties to the earlier)."""
    ends = [(a + b + size - 1) // 2 + 1 for a, b in pairwise(starts)]
    return [*ends, n]


def token_windows(n: int, size: int, stride: int) -> Tensor:
    """The window each token takes its vector from (int64 [n]): the one where it is farthest from an edge, ties
    to the earlier window, so every vector is read with as much context as the windows give.

    >>> token_windows(10, 4, 2).tolist()  # windows at 0, 2, 4, 6
    [0, 0, 0, 1, 1, 2, 2, 3, 3, 3]
    """
    starts = window_starts(n, size, stride)
    lengths = torch.diff(torch.tensor([0, *_own_ends(n, size, starts)]))
    return torch.repeat_interleave(torch.arange(len(starts)), lengths)


class Piece(NamedTuple):
    """One forward pass (window at `start`, None: the whole sequence, of `size` tokens) whose output rows
    `src .. src + length` become the text's rows `dst .. dst + length`; `head` tokens ride in every window."""

    text: int
    start: int | None
    size: int
    src: int
    length: int
    dst: int
    head: int = 0


@dataclass(frozen=True)
class WindowRule:
    """Windows of `size` tokens every `stride`, for texts with `lead` special tokens before and `trail` after.

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
    #: Whether each window carries the text's head (SLED cuts the head into windows as any other part).
    carries_head: ClassVar[bool] = True

    @property
    def label(self) -> str:
        """How the hash code names the setting."""
        return f"window-w{self.size}-s{self.stride}"

    @property
    def window(self) -> int:
        """The tokens of one forward pass, the special tokens included."""
        return self.size + self.lead + self.trail

    def fits(self, length: int) -> bool:
        """Whether a sequence of `length` tokens (the special tokens included) runs whole, in one piece."""
        return length <= self.window

    def room(self, head: int) -> tuple[int, int]:
        """Window and stride left to a text's own tokens beside a head, scaled so windows overlap as without one.

        >>> WindowRule(size=8, stride=4, lead=1, trail=1).room(2)
        (6, 3)
        """
        room = self.size - head
        return room, max(1, self.stride * room // self.size)

    def pieces(self, text: int, length: int, lo: int = 0, hi: int | None = None, head: int = 0) -> list[Piece]:
        """The pieces giving rows `lo .. hi` (default: all) of a `length`-token sequence with a `head`.

        >>> rule = WindowRule(size=4, stride=2, lead=1, trail=1)
        >>> [(p.start, p.src, p.length, p.dst) for p in rule.pieces(0, 9, head=1)]  # a head, 6 tokens + 2 specials
        [(0, 0, 4, 0), (1, 3, 1, 4), (2, 3, 1, 5), (3, 3, 3, 6)]
        """
        hi = length if hi is None else hi
        if self.fits(length):
            return [Piece(text, None, length, lo, hi - lo, lo)] if hi > lo else []
        out = []
        for start, first, stop in self.spans(length, head):
            a, b = max(first, lo), min(stop, hi)
            if b > a:
                out.append(Piece(text, start, self.window, a - start, b - a, a, head if self.carries_head else 0))
        return out

    def spans(self, length: int, head: int) -> list[tuple[int, int, int]]:
        """Each window's first token and the rows it gives (first, one past the last) of a sequence too long for
        one: the leading special tokens and the head go with the first window, the trailing ones with the last."""
        size, stride = self.room(head)
        n = length - self.lead - self.trail - head
        starts = window_starts(n, size, stride)
        stops = [*(self.lead + head + end for end in _own_ends(n, size, starts)[:-1]), length]
        return list(zip(starts, [0, *stops[:-1]], stops, strict=True))

    def ids(self, seq: Tensor, piece: Piece) -> Tensor:
        """The ids `piece` runs: the head and the window's tokens between the text's special tokens."""
        if piece.start is None:
            return seq
        kept = self.lead + piece.head
        first = kept + piece.start
        parts = (seq[:kept], seq[first : first + self.size - piece.head], seq[len(seq) - self.trail :])
        return torch.cat(parts)


def sled_windows(n: int, window: int) -> list[tuple[int, int, int]]:
    """SLED's windows over `n` tokens: (first token, first token it gives a vector, one past its last); a
    quarter of the window at each inner edge is context only, so no vector is read at a window's edge.

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
    """CodeBERTScore's long texts (SLED): windows cut from the whole sequence, special tokens and head included;
    `size` stays the window less the specials so that a text that fits is one piece.

    >>> rule = SledRule(size=6, stride=4, lead=1, trail=1)
    >>> [(p.start, p.size, p.src, p.length, p.dst) for p in rule.pieces(0, 20)]
    [(0, 8, 0, 6, 0), (4, 8, 2, 4, 6), (8, 8, 2, 4, 10), (12, 8, 2, 6, 14)]
    >>> rule.label
    'sled-w8'
    """

    carries_head: ClassVar[bool] = False

    @property
    def label(self) -> str:
        return f"sled-w{self.window}"

    def spans(self, length: int, head: int) -> list[tuple[int, int, int]]:
        return sled_windows(length, self.window)

    def ids(self, seq: Tensor, piece: Piece) -> Tensor:
        return seq if piece.start is None else seq[piece.start : piece.start + self.window]


def plan_pieces(
    lengths: Sequence[int],
    rule: WindowRule | None,
    ranges: Sequence[tuple[int, int]] | None = None,
    heads: Sequence[int] | None = None,
) -> list[Piece]:
    """Every piece of the texts, text after text (a text that fits, or every text without a rule, is one);
    `ranges` restricts text i to rows ``ranges[i]``, `heads` gives each text's head (`head_lengths`).

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


def head_lengths(heads: Sequence[int] | None, lengths: Sequence[int], rule: WindowRule | None) -> list[int] | None:
    """Each text's head (its marked tokens, `heads`), kept only for texts that run in windows; None where none has
    one."""
    if rule is None or heads is None:
        return None
    kept = [0 if rule.fits(n) else h for h, n in zip(heads, lengths, strict=True)]
    return kept if any(kept) else None


def piece_ids(seq: Tensor, piece: Piece, rule: WindowRule | None) -> Tensor:
    """The ids a piece of `seq` runs through the model."""
    return seq if rule is None else rule.ids(seq, piece)


# -- the setting ---------------------------------------------------------------------------------------------


def window_rule(long_texts: str, window_stride: int | None, encoder: TextEncoder) -> WindowRule | None:
    """The rule for this setting (None: truncate mode, or a model without a window), checked here because the
    window (`max_length` less the special tokens) needs the tokenizer: ArgumentValueError if it cannot slide."""
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
    """The hash code's name for the setting; None in truncate mode, so the reference's codes stay unchanged.

    >>> window_label("window", None)  # a model without a window: texts are never cut
    'window-unbounded'
    """
    if long_texts == "truncate":
        return None
    return "window-unbounded" if rule is None else rule.label
