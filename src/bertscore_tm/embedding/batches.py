"""How the texts of a forward pass are cut into batches, each rule a generator of index lists over the texts'
lengths: batches of a single length (`length_batches`: a CPU's, never padded), padded length buckets
(`padded_buckets`: an accelerator's, for families that cannot run packed) and packs of many lengths end to end
(`packs`, and `pack_end`, its cut found by bisection). Every rule takes the texts longest first and keeps a
batch's memory within the same token budget and attention-score bound, so the rules differ only in what a batch
may hold.

>>> list(packs([5, 3, 5, 2], max_tokens=8))
[[0], [2, 1], [3]]
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterator, Sequence

#: A forward batch's attention scores hold no more than those of its token budget at this length (so its
#: memory is bounded however long its texts are); a packed pass's attention pieces keep to the same bound.
SCORES_LENGTH = 32


def length_batches(lengths: Sequence[int], batch_size: int | None, max_tokens: int) -> Iterator[list[int]]:
    """Indices of `lengths` sorted longest first, cut into batches of a single length (so no batch is padded
    and a sequence's vectors do not depend on what it runs with) of at most `max_tokens` tokens (where a
    batch holds more than one) whose attention matrices hold no more than those of `max_tokens` tokens at
    length `SCORES_LENGTH` (32), and of at most `batch_size` sequences where one is given: so a batch's memory
    is bounded however long its texts are, and about the same for every full batch, whatever their lengths.

    >>> list(length_batches([3, 5, 3, 5, 5], batch_size=2, max_tokens=2048))
    [[1, 3], [4], [0, 2]]
    """
    return _cut(lengths, batch_size, max_tokens, lambda longest, length: length == longest)


def padded_buckets(lengths: Sequence[int], batch_size: int | None, max_tokens: int) -> Iterator[list[int]]:
    """Accelerator batching for models that cannot run packed: indices of `lengths` sorted longest first, cut
    into batches padded to their longest text, whose texts are at most an eighth of that length shorter (at
    least 2 tokens of slack), so little is padded and the batches fill, within `length_batches`' bounds on
    padded tokens and attention scores. Padding is masked: on an accelerator a text's float32 vectors then move
    from its one-length ones by rounding only (docs/semantics.md, Exactness on a GPU).

    >>> list(padded_buckets([10, 12, 11, 30, 5], batch_size=None, max_tokens=2048))
    [[3], [1, 2, 0], [4]]
    """
    return _cut(lengths, batch_size, max_tokens, lambda longest, length: length >= longest - max(2, longest // 8))


def _cut(
    lengths: Sequence[int], batch_size: int | None, max_tokens: int, joins: Callable[[int, int], bool]
) -> Iterator[list[int]]:
    """Indices of `lengths` sorted longest first, cut into batches: a text joins the batch before it where
    `joins(longest, length)` allows its length beside the batch's longest and the batch, padded to its longest,
    stays within `max_tokens` tokens, the attention scores of `max_tokens` tokens at `SCORES_LENGTH`, and
    `batch_size` texts (where one is given)."""
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
    """Indices of `lengths` sorted longest first, cut into packs of at most `max_tokens` tokens in all (a text
    longer than that alone) and of at most `batch_size` texts where one is given.

    >>> list(packs([4, 4, 9, 1], max_tokens=9)), list(packs([4, 4, 9, 1], max_tokens=9, batch_size=2))
    ([[2], [0, 1, 3]], [[2], [0, 1], [3]])
    """
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    pack: list[int] = []
    tokens = 0
    for i in order:
        full = batch_size is not None and len(pack) >= batch_size
        if pack and (full or tokens + lengths[i] > max_tokens):
            yield pack
            pack, tokens = [], 0
        pack.append(i)
        tokens += lengths[i]
    if pack:
        yield pack


def pack_end(edges: Sequence[int], i: int, n: int, max_tokens: int, batch_size: int | None = None) -> int:
    """Where the pack that starts at text `i` ends (exclusive), for `n` texts sorted longest first whose first
    tokens lie at `edges` (``edges[n]``: the last one's end): the very cut `packs` makes, found by bisection on the
    running token count rather than text by text.

    >>> edges = [0, 9, 13, 17, 18]  # texts of 9, 4, 4 and 1 tokens; `packs` gives [[0], [1, 2, 3]]
    >>> pack_end(edges, 0, 4, max_tokens=9), pack_end(edges, 1, 4, max_tokens=9), pack_end(edges, 1, 4, 9, 2)
    (1, 4, 3)
    """
    end = max(i + 1, bisect_right(edges, edges[i] + max_tokens, i + 1, n + 1) - 1)
    return end if batch_size is None else min(end, i + batch_size)
