"""Texts' token ids held by reference, and their vectors' rows in a compute()'s table. Row numbers are made on
the host a batch at a time, never a text at a time: per-text copies cost more than the pass on an accelerator."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import overload

import torch
from torch import Tensor

from bertscore_tm.models.windows import Piece


def send(host: Tensor, device: torch.device) -> Tensor:
    """A host tensor on `device`, from pinned memory on CUDA and not waited for, so the host prepares the next batch."""
    if device.type == "cuda":
        host = host.pin_memory()
    return host.to(device, non_blocking=True)


@dataclass
class TokenTexts:
    """Token-id sequences as references into a few flat tensors: text i is
    ``sources[which[i]][start[i] : start[i] + length[i]]``, with no Python object per text; `marked` holds
    each source's token marks (a prompt's, a context's), None where no token is marked."""

    sources: tuple[Tensor, ...]
    which: Tensor  # uint8
    start: Tensor  # int64
    length: Tensor  # int32
    marked: tuple[Tensor, ...] | None = None

    def __len__(self) -> int:
        return len(self.length)

    def __getitem__(self, i: int) -> Tensor:
        return self._span(self.sources, i)

    def marks(self, i: int) -> Tensor | None:
        """Which tokens of text i are marked; None where no text has a marked token."""
        return None if self.marked is None else self._span(self.marked, i)

    def heads(self, texts: Sequence[int]) -> list[int] | None:
        """How many tokens of each of `texts` are marked (its head, which rides in each of its windows); None
        where no text has a marked token."""
        if self._marks_before is None:
            return None
        index = torch.as_tensor(texts, dtype=torch.long)
        which, start, length = self.which[index], self.start[index].long(), self.length[index].long()
        out = torch.zeros(len(index), dtype=torch.long)
        for k, before in enumerate(self._marks_before):
            mine = which == k
            out[mine] = before[start[mine] + length[mine]] - before[start[mine]]
        return out.tolist()

    @cached_property
    def _marks_before(self) -> tuple[Tensor, ...] | None:
        """Per source, the marks before each token (one entry more than tokens), counted once: heads() is called
        per block and per long pair, and a text's head is then two reads."""
        if self.marked is None:
            return None
        return tuple(torch.nn.functional.pad(flags.long().cumsum(0), (1, 0)) for flags in self.marked)

    def _span(self, flat: tuple[Tensor, ...], i: int) -> Tensor:
        start = int(self.start[i])
        return flat[int(self.which[i])][start : start + int(self.length[i])]

    def many(self, texts: Sequence[int]) -> EndToEnd:
        """These texts' ids end to end, gathered in one indexed copy per source."""
        index = torch.tensor(texts, dtype=torch.long)
        which, start, length = self.which[index], self.start[index].long(), self.length[index].long()
        into = torch.cumsum(length, 0) - length
        ids = torch.empty(int(length.sum()), dtype=self.sources[0].dtype)
        for k, source in enumerate(self.sources):
            mine = which == k
            ids[ragged_arange(into[mine], length[mine])] = source[ragged_arange(start[mine], length[mine])]
        return EndToEnd(ids, length.tolist(), longest_first=bool((length[1:] <= length[:-1]).all()))


class EndToEnd(Sequence[Tensor]):
    """Token-id sequences end to end in one tensor, taken whole by a packed pass; `longest_first`: never growing."""

    def __init__(self, ids: Tensor, lengths: list[int], longest_first: bool = False) -> None:
        self.ids, self.lengths, self.longest_first = ids, lengths, longest_first

    @cached_property
    def firsts(self) -> list[int]:
        return end_to_end(self.lengths)

    def __len__(self) -> int:
        return len(self.lengths)

    def take(self, chosen: Sequence[int]) -> EndToEnd:
        """The sequences `chosen` in one indexed copy; still longest first where `chosen` ascends.

        >>> EndToEnd(torch.arange(6), [3, 2, 1], longest_first=True).take([0, 2]).ids.tolist()
        [0, 1, 2, 5]
        """
        index = torch.tensor(chosen, dtype=torch.long)
        lengths = torch.tensor(self.lengths, dtype=torch.long)[index]
        ids = self.ids[ragged_arange(torch.tensor(self.firsts, dtype=torch.long)[index], lengths)]
        ascending = bool((index[1:] > index[:-1]).all())
        return EndToEnd(ids, lengths.tolist(), self.longest_first and ascending)

    @overload
    def __getitem__(self, i: int) -> Tensor: ...

    @overload
    def __getitem__(self, i: slice) -> EndToEnd: ...

    def __getitem__(self, i: int | slice) -> Tensor | EndToEnd:
        if isinstance(i, slice):
            lo, hi, step = i.indices(len(self))
            if step != 1 or hi <= lo:  # a copy of the chosen ones (none: no ids)
                parts = [self[k] for k in range(lo, hi, step)]
                return EndToEnd(torch.cat(parts) if parts else self.ids[:0], self.lengths[i])
            end = self.firsts[hi - 1] + self.lengths[hi - 1]
            return EndToEnd(self.ids[self.firsts[lo] : end], self.lengths[lo:hi], self.longest_first)
        first = self.firsts[i]
        return self.ids[first : first + self.lengths[i]]


def table_rows_of(table: Tensor, starts: Sequence[int], chosen: Sequence[Piece], packed: bool) -> Tensor | None:
    """The table rows a batch of whole texts is normalised straight into, where they lie so in batch order: a
    pack's as one span, a one-length batch's as a [count, length, ...] view; else None."""
    first = row = starts[chosen[0].text]
    size = chosen[0].size
    for piece in chosen:
        whole = piece.src == 0 and piece.dst == 0 and piece.length == piece.size and (packed or piece.size == size)
        if not whole or starts[piece.text] != row:
            return None
        row += piece.size
    return table[first:row] if packed else table[first:row].view(len(chosen), size, *table.shape[1:])


def ragged_arange(starts: Tensor, lengths: Tensor) -> Tensor:
    """Concatenation of arange(start, start + length) for each pair; int64."""
    lengths = lengths.long()
    total = int(lengths.sum())
    if total == 0:
        return torch.zeros(0, dtype=torch.long, device=starts.device)
    seg_start = torch.cumsum(lengths, 0) - lengths
    shift = torch.repeat_interleave(starts.long() - seg_start, lengths)
    return torch.arange(total, device=starts.device) + shift


def copy_pieces(
    table: Tensor,
    stream: Tensor,
    firsts: Sequence[int],
    chosen: Sequence[Piece],
    starts: Sequence[int],
    ranges: Sequence[tuple[int, int]] | None,
) -> None:
    """Copy each piece's rows of a batch's `stream` to its text's table rows in one indexed copy."""
    src = torch.tensor([firsts[k] + p.src for k, p in enumerate(chosen)], dtype=torch.long)
    dst = torch.tensor(
        [starts[p.text] + p.dst - (0 if ranges is None else ranges[p.text][0]) for p in chosen], dtype=torch.long
    )
    lengths = torch.tensor([p.length for p in chosen], dtype=torch.long)
    src, dst = send(ragged_arange(src, lengths), table.device), send(ragged_arange(dst, lengths), table.device)
    table.index_copy_(0, dst, stream.index_select(0, src))


def end_to_end(lengths: Sequence[int]) -> list[int]:
    """Each sequence's first row when `lengths` rows are laid end to end from row 0.

    >>> end_to_end([3, 0, 2])
    [0, 3, 3]
    """
    return [0, *itertools.accumulate(lengths)][: len(lengths)]


def table_rows(table: Tensor, lengths: Sequence[int]) -> list[int]:
    """`end_to_end` of `lengths`, refusing a table too small for them."""
    row = sum(lengths)
    if row > table.shape[0]:
        raise ValueError(f"table has {table.shape[0]} rows; these sequences need {row}")
    return end_to_end(lengths)
