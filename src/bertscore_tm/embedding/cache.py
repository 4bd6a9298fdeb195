"""Vectors of texts already embedded, kept across compute() and reset(), keyed by token ids and the head (the
marked tokens riding in each window, which change the vectors of a text cut into windows). One cache serves
one embedding setting and empties when it changes; embedding is batch-invariant, so hits score bit for bit as
fresh passes. Not metric state: never saved, synced or pickled; clones share it."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor

from bertscore_tm.embedding.embedder import Embedder
from bertscore_tm.embedding.rows import EndToEnd, table_rows

#: Bookkeeping per cached text besides its vectors and key (the dict entry, the tensor object), counted in the
#: budget so that a budget of many short texts is not overrun by their overheads.
ENTRY_OVERHEAD = 256


def text_key(ids: Tensor, head: int = 0) -> bytes:
    """The cache key of a token-id sequence with `head` marked tokens: its ids as int32 bytes, then the head's.

    >>> text_key(torch.tensor([101, 7592, 102], dtype=torch.int32)) == text_key(torch.tensor([101, 7592, 102]))
    True
    >>> text_key(torch.tensor([101, 7592, 102]), head=1) == text_key(torch.tensor([101, 7592, 102]))
    False
    """
    key = ids.to("cpu", torch.int32).numpy().tobytes()
    return key + head.to_bytes(4, "little") if head else key


def embedding_setting(embedder: Embedder, extra: tuple[Any, ...] = ()) -> tuple[Any, ...]:
    """Everything that changes the vectors `embedder` gives, after the metric's `extra`."""
    return (
        *extra,
        id(embedder.model),
        str(embedder.device),
        embedder.model_dtype,
        embedder.compile_model,  # compiled kernels round differently
        embedder.all_layers,
        embedder.num_rows,
        embedder.hidden_size,
        repr(embedder.windows),  # how long texts are cut into windows
    )


class EmbeddingCache:
    """Token vectors of whole texts, least recently used evicted first, within `budget_bytes`.

    >>> cache = EmbeddingCache(budget_bytes=4096)
    >>> cache.put(b"a", torch.zeros(2, 384))   # 3 KiB of vectors: kept
    >>> cache.put(b"b", torch.zeros(2, 384))   # another 3 KiB: the least recently used ("a") makes way
    >>> (cache.get(b"a") is None, cache.get(b"b").shape, len(cache))
    (True, torch.Size([2, 384]), 1)
    """

    def __init__(self, budget_bytes: int) -> None:
        self.budget_bytes = int(budget_bytes)
        self._entries: OrderedDict[bytes, Tensor] = OrderedDict()
        self._bytes = 0
        self._setting: tuple[Any, ...] | None = None
        self._device: torch.device | None = None

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def nbytes(self) -> int:
        """Bytes held, as the budget counts them."""
        return self._bytes

    @property
    def device(self) -> torch.device | None:
        """Where the cached vectors are (None before first use)."""
        return self._device

    @staticmethod
    def _cost(key: bytes, vectors: Tensor) -> int:
        return vectors.numel() * vectors.element_size() + len(key) + ENTRY_OVERHEAD

    def get(self, key: bytes) -> Tensor | None:
        """The vectors for `key` (now most recently used), or None."""
        vectors = self._entries.get(key)
        if vectors is not None:
            self._entries.move_to_end(key)
        return vectors

    def put(self, key: bytes, vectors: Tensor) -> None:
        """Keep a float32 copy, evicting the least recently used; a text over the budget is not kept."""
        cost = self._cost(key, vectors)
        if cost > self.budget_bytes or key in self._entries:
            return
        while self._bytes + cost > self.budget_bytes:
            old_key, old = self._entries.popitem(last=False)
            self._bytes -= self._cost(old_key, old)
        self._entries[key] = vectors.detach().to(dtype=torch.float32, copy=True)
        self._bytes += cost
        self._device = vectors.device

    def clear(self) -> None:
        self._entries.clear()
        self._bytes = 0

    def use_with(self, setting: tuple[Any, ...]) -> None:
        """Serve `setting` from now on, emptied first if it changed."""
        if setting != self._setting:
            self.clear()
            self._setting = setting

    def __deepcopy__(self, memo: dict) -> EmbeddingCache:
        """Clones share the cache, as they share the model."""
        return self

    def __getstate__(self) -> dict[str, Any]:
        """Pickled empty: the vectors are a cache, not state."""
        state = self.__dict__.copy()
        state.update(_entries=OrderedDict(), _bytes=0, _setting=None, _device=None)
        return state


class CachingEmbedder:
    """An `Embedder` whose `embed_into` copies cached texts and runs only the others through the model."""

    def __init__(self, embedder: Embedder, cache: EmbeddingCache, setting: tuple[Any, ...] = ()) -> None:
        self._embedder = embedder
        self._cache = cache
        self._setting = setting

    def __getattr__(self, name: str) -> Any:
        return getattr(self._embedder, name)

    def embed_into(
        self,
        table: Tensor,
        seqs: Sequence[Tensor],
        progress: object | None = None,
        lengths: Sequence[int] | None = None,
        heads: Sequence[int] | None = None,
        **options: Any,
    ) -> list[int]:
        if options:  # more than whole texts asked for (e.g. row ranges): nothing to look up or keep
            return self._embedder.embed_into(table, seqs, progress=progress, lengths=lengths, heads=heads, **options)
        cache = self._cache
        cache.use_with(embedding_setting(self._embedder, self._setting))
        lengths = [len(s) for s in seqs] if lengths is None else list(lengths)
        starts = table_rows(table, lengths)
        marks = [0] * len(lengths) if heads is None else list(heads)
        keys = [text_key(s, h) if n > 0 else b"" for s, n, h in zip(seqs, lengths, marks, strict=True)]
        found = [cache.get(k) if n > 0 else None for k, n in zip(keys, lengths, strict=True)]
        missing = [i for i, n in enumerate(lengths) if n > 0 and found[i] is None]
        if missing:
            lacking = seqs.take(missing) if isinstance(seqs, EndToEnd) else [seqs[i] for i in missing]
            packed = self._embedder.embed_into(
                table,
                lacking,
                progress=progress,
                lengths=[lengths[i] for i in missing],
                heads=None if heads is None else [marks[i] for i in missing],
            )
            # the missing texts were written end to end; move each to its own rows, the last first (each
            # moves towards the end, so no text still to move is overwritten)
            for j in reversed(range(len(missing))):
                i, src = missing[j], packed[j]
                dst, n = starts[i], lengths[i]
                if dst != src:
                    rows = table[src : src + n]
                    table[dst : dst + n] = rows.clone() if dst < src + n else rows
            for i in missing:
                cache.put(keys[i], table[starts[i] : starts[i] + lengths[i]])
        hits = 0
        for i, vectors in enumerate(found):
            if vectors is not None:
                table[starts[i] : starts[i] + lengths[i]] = vectors
                hits += 1
        if progress is not None and hits:
            progress.update(hits)  # type: ignore[attr-defined]
        return starts
