"""How a forward pass's texts are cut into batches: of one length (a CPU's, never padded), padded length buckets
(an accelerator's, for families that cannot pack) or packs; all longest first within one token budget and
attention-score bound, so a batch's memory is bounded whatever the lengths."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterator, Sequence
from itertools import accumulate

#: A forward batch's attention scores hold no more than those of its token budget at this length (so its
#: memory is bounded however long its texts are); a packed pass's attention pieces keep to the same bound.
SCORES_LENGTH = 32


def length_batches(lengths: Sequence[int], batch_size: int | None, max_tokens: int) -> Iterator[list[int]]:
    """Batches of one length, never padded, so a text's vectors do not depend on its batch.

    >>> list(length_batches([3, 5, 3, 5, 5], batch_size=2, max_tokens=2048))
    [[1, 3], [4], [0, 2]]
    """
    return _cut(lengths, batch_size, max_tokens, lambda longest, length: length == longest)


def padded_buckets(lengths: Sequence[int], batch_size: int | None, max_tokens: int) -> Iterator[list[int]]:
    """Batches padded to a longest text at most an eighth longer than the rest (docs/semantics.md).

    >>> list(padded_buckets([10, 12, 11, 30, 5], batch_size=None, max_tokens=2048))
    [[3], [1, 2, 0], [4]]
    """
    return _cut(lengths, batch_size, max_tokens, lambda longest, length: length >= longest - max(2, longest // 8))


def _cut(
    lengths: Sequence[int], batch_size: int | None, max_tokens: int, joins: Callable[[int, int], bool]
) -> Iterator[list[int]]:
    """Longest first, a text joins the batch before it where `joins` allows and the bounds still hold."""
    batch: list[int] = []
    for i in sorted(range(len(lengths)), key=lambda i: -lengths[i]):
        if batch:
            longest, n = lengths[batch[0]], len(batch) + 1
            fits = n * longest <= max_tokens and n * longest * longest <= max_tokens * SCORES_LENGTH
            if not (joins(longest, lengths[i]) and fits and (batch_size is None or n <= batch_size)):
                yield batch
                batch = []
        batch.append(i)
    if batch:
        yield batch


def packs(lengths: Sequence[int], max_tokens: int, batch_size: int | None = None) -> Iterator[list[int]]:
    """Packs of at most `max_tokens` tokens (a longer text alone) and `batch_size` texts, longest first.

    >>> list(packs([4, 4, 9, 1], max_tokens=9)), list(packs([4, 4, 9, 1], max_tokens=9, batch_size=2))
    ([[2], [0, 1, 3]], [[2], [0, 1], [3]])
    """
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    edges = [0, *accumulate(lengths[i] for i in order)]
    start = 0
    while start < len(order):
        end = pack_end(edges, start, len(order), max_tokens, batch_size)
        yield order[start:end]
        start = end


def pack_end(edges: Sequence[int], i: int, n: int, max_tokens: int, batch_size: int | None = None) -> int:
    """Where the pack starting at text `i` ends, by bisection on token offsets `edges`: as many texts as fit.

    >>> edges = [0, 9, 13, 17, 18]  # texts of 9, 4, 4 and 1 tokens; `packs` gives [[0], [1, 2, 3]]
    >>> pack_end(edges, 0, 4, max_tokens=9), pack_end(edges, 1, 4, max_tokens=9), pack_end(edges, 1, 4, 9, 2)
    (1, 4, 3)
    """
    end = max(i + 1, bisect_right(edges, edges[i] + max_tokens, i + 1, n + 1) - 1)
    return end if batch_size is None else min(end, i + batch_size)
