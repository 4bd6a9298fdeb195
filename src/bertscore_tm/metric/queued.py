"""update()s that tokenise ahead (`bertscore_tm.models.ahead`): the Metric's queue of pairs still being tokenised
on the process's tokenising thread, the rule that they join the state, in order, before anything reads it, and
compute()'s scoring of the joined pairs while the thread still tokenises later ones. A mixin, so that the
Metric's module holds the torchmetrics protocol alone."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, ClassVar

from torch import Tensor

from bertscore_tm.errors import ArgumentValueError
from bertscore_tm.models.tokenizing import PendingPairs

#: The most texts that may wait for the tokenising thread: an update() past it waits for the oldest batch. A
#: waiting batch holds its texts, then its ids as the state will (the thread makes them compact tensors), so
#: this bounds how far the queue runs ahead; it is large enough that an update() loop faster than the tokenizer
#: (a corpus fed in a loop) hands every text over at once, and compute() can score while the thread tokenises.
MOST_QUEUED_TEXTS = 1 << 18

#: compute() on pairs still queued scores those that have joined the state whenever they hold this many texts
#: and the thread is still tokenising later ones: the device embeds one chunk while the host tokenises the next.
#: A text in two chunks is embedded twice (once per compute() otherwise), so chunks are large: about 60 packs of
#: an accelerator's 16,384 tokens at WMT lengths.
CHUNK_TEXTS = 1 << 14


class QueuedUpdates:
    """The queue of a `BERTScore` whose update()s tokenise ahead; the class names the states the pairs join
    (`_QUEUED_INTO`) and adds them (`_add_pairs`)."""

    #: Whether update() hands its texts to the process's tokenising thread and returns at once (pairs without a
    #: prompt or a context, a tokenizer we loaded): None, the default, does so where the metric computes on an
    #: accelerator, which would otherwise wait for the tokenizer between a loop's steps. The pairs join the state
    #: before anything reads it; a batch's warnings (truncated or blank texts) and errors come when it joins, at
    #: a later update() or at compute().
    tokenise_ahead: bool | None = None
    _QUEUED_INTO: ClassVar[frozenset[str]] = frozenset()
    _queued: list[tuple[PendingPairs, list[int], Tensor | None]]
    _queued_texts: int = 0  # the texts of `_queued`
    _joined_texts: int = 0  # the texts of queued pairs that joined the state since it was last scored

    if TYPE_CHECKING:

        @property
        def device(self) -> Any: ...

        def _add_pairs(self, encoded: Any, counts: list[int], index_tensor: Tensor | None) -> None: ...

        def _score_pending(self) -> None: ...

    def _tokenises_ahead(self) -> bool:
        if self.tokenise_ahead is None:
            return bool(self.device.type != "cpu")
        if not isinstance(self.tokenise_ahead, bool):  # "false" would read as on
            raise ArgumentValueError(
                f"tokenise_ahead must be True, False or None, got {self.tokenise_ahead!r}",
                argument="tokenise_ahead",
                allowed="True, False or None (on an accelerator only)",
                value=self.tokenise_ahead,
            )
        return self.tokenise_ahead

    def _queue(self, pending: PendingPairs, counts: list[int], index_tensor: Tensor | None) -> None:
        """Queue an update()'s pairs; those already tokenised join the state now, and the oldest is waited for
        past `MOST_QUEUED_TEXTS`."""
        self._queued.append((pending, counts, index_tensor))
        self._queued_texts += pending.texts
        while self._queued and (self._queued[0][0].ready() or self._queued_texts > MOST_QUEUED_TEXTS):
            self._take_queued(1)

    def join_queued(self) -> None:
        """Wait for the tokenising thread: every pair an update() was given joins the state now, and the
        warnings and errors of its tokenisation are said now (a read of the state does the same)."""
        self._take_queued()

    def _score_queued(self) -> None:
        """compute()'s embedding and matching of every pair not yet scored: where pairs are still queued, those
        that have joined are scored a chunk of `CHUNK_TEXTS` texts at a time while the tokenising thread does
        the later ones (the device then embeds while the host tokenises, where one would otherwise wait for the
        other). The scores are one compute()'s: bit for bit on a CPU, within the packs' bound on a GPU, where a
        chunk's packs hold other texts (docs/semantics.md)."""
        while self._queued:
            while self._queued and self._queued[0][0].ready():  # every batch the thread has done, at once
                self._take_queued(1)
            if not self._queued:
                break
            if self._joined_texts >= CHUNK_TEXTS:  # enough to score before waiting for the thread again
                with self._queue_held():
                    self._score_pending()
                self._joined_texts = 0
            else:
                self._take_queued(1)  # the oldest, waited for
        self._score_pending()
        self._joined_texts = 0

    @contextmanager
    def _queue_held(self) -> Iterator[None]:
        """The queue set aside: reads of the state see the pairs that have joined, and take in no others."""
        held, self._queued, texts, self._queued_texts = self._queued, [], self._queued_texts, 0
        try:
            yield
        finally:
            self._queued, self._queued_texts = held + self._queued, texts + self._queued_texts

    def _take_queued(self, most: int | None = None) -> None:
        """Add the first `most` (all) of the queued pairs to the state, in order, waiting for their tokens where
        the thread has not done them yet. A batch whose tokenising failed raises its error here and adds nothing,
        as a failed update() would; the batches after it stay queued."""
        queued, self._queued = self._queued, []  # taken off first: adding reads the states (`__getattribute__`)
        for k, (pending, counts, index_tensor) in enumerate(queued[:most]):
            self._queued_texts -= pending.texts
            try:
                self._add_pairs(pending.result(), counts, index_tensor)
                self._joined_texts += pending.texts
            except BaseException:
                self._queued = queued[k + 1 :] + self._queued
                raise
        self._queued = queued[len(queued) if most is None else most :] + self._queued

    def __getattribute__(self, name: str) -> Any:
        # any read of a state the queued pairs join (by torchmetrics' forward, merge_state, sync or reset, by
        # this package, or by a user) takes them in first: no reader can see a state that lacks pairs an update()
        # was given
        if name in type(self)._QUEUED_INTO and object.__getattribute__(self, "__dict__").get("_queued"):
            object.__getattribute__(self, "_take_queued")()
        return super().__getattribute__(name)

    def __setattr__(self, name: str, value: Any) -> None:
        # so does a write (a state replaced, as `score_systems` restores IDF counts): the queued pairs were given
        # before it, and join first, as a synchronous update() would have
        if name in type(self)._QUEUED_INTO and self.__dict__.get("_queued"):
            self._take_queued()
        super().__setattr__(name, value)

    def reset(self) -> None:
        """Clear the state, and drop what update()s queued (their tokens are never used)."""
        self._queued, self._queued_texts, self._joined_texts = [], 0, 0
        super().reset()  # type: ignore[misc]

    def __getstate__(self) -> dict[str, Any]:
        """A copy or a pickle holds every pair an update() was given: queued pairs join the state first
        (torchmetrics reads `__dict__` whole, past `__getattribute__`)."""
        self._take_queued()
        return super().__getstate__()  # type: ignore[return-value]
