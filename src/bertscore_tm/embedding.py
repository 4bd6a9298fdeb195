"""Embedding: runs the cut model over token-id sequences and writes L2-normalised token vectors.

Sequences are sorted by length and cut into batches by a token budget (and optionally a count), so padding
stays small and memory bounded; the forward pass runs under `inference_mode`, optionally under autocast (the
opt-in lower-precision mode). Vectors come back in float32 whatever the compute dtype, written straight into
a table the caller owns, so a batch's output is dropped before the next batch runs. With a window rule
(`bertscore_tm.windows`, long_texts="window") a long text runs as several window sequences in the same
batch stream, and the rows each token keeps are stitched into that text's rows of the table.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
from torch import Tensor, nn

from bertscore_tm.windows import WindowRule, piece_ids, plan_pieces

if TYPE_CHECKING:
    from bertscore_tm.user_model import UserModel


@dataclass
class TokenTexts:
    """Token-id sequences held by reference into a few flat id tensors (`sources`): text i is
    ``sources[which[i]][start[i] : start[i] + length[i]]``. A dozen bytes a text and no Python object per
    text, so the list of texts a compute() embeds costs next to nothing beside the ids themselves."""

    sources: tuple[Tensor, ...]
    which: Tensor  # uint8
    start: Tensor  # int64
    length: Tensor  # int32

    def __len__(self) -> int:
        return len(self.length)

    def __getitem__(self, i: int) -> Tensor:
        start = int(self.start[i])
        return self.sources[int(self.which[i])][start : start + int(self.length[i])]


def length_batches(lengths: Sequence[int], batch_size: int | None, max_tokens: int) -> Iterator[list[int]]:
    """Indices of `lengths` sorted longest first, cut into batches of at most `max_tokens` padded tokens
    (where a batch holds more than one) whose attention matrices hold no more than those of `max_tokens`
    tokens at length 32, and of at most `batch_size` sequences where one is given: so a batch's memory is
    bounded however long its texts are, and about the same for every full batch, whatever their lengths."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    batch: list[int] = []
    for i in order:
        longest = lengths[batch[0]] if batch else lengths[i]
        n = len(batch) + 1
        too_big = n * longest > max_tokens or n * longest * longest > max_tokens * 32
        too_many = batch_size is not None and len(batch) >= batch_size
        if batch and (too_many or too_big):
            yield batch
            batch = []
        batch.append(i)
    if batch:
        yield batch


class Embedder:
    """Holds the frozen encoder (outside any module tree, so it never enters a state_dict) and embeds.

    `model` is a loaded encoder or a `UserModel` (a model object the user passed); `hidden_size` and `depth`
    default to what the model's config and blocks say.
    """

    def __init__(
        self,
        model: nn.Module | UserModel,
        pad_id: int,
        all_layers: bool,
        model_dtype: torch.dtype = torch.float32,
        batch_size: int | None = None,
        max_tokens: int | None = None,
        hidden_size: int | None = None,
        depth: int | None = None,
        windows: WindowRule | None = None,
    ) -> None:
        if model_dtype not in (torch.float32, torch.float16, torch.bfloat16):
            raise ValueError(f"model_dtype must be torch.float32, torch.float16 or torch.bfloat16, got {model_dtype}")
        self.model = model
        self.pad_id = pad_id
        self.all_layers = all_layers
        self.model_dtype = model_dtype
        self.batch_size = batch_size
        self._max_tokens = max_tokens
        self._hidden_size = hidden_size
        self._depth = depth
        #: Long texts: the window rule (None: every sequence runs whole, as truncate mode has it).
        self.windows = windows
        #: How many sequences (rows) this embedder has run through the model: lets tests count the work.
        self.rows_embedded = 0

    def __deepcopy__(self, memo: dict) -> Embedder:
        """Deep copies of a metric share its embedder: the model is frozen and nothing writes to it, so a
        copy per clone (torchmetrics' `MetricTracker` clones once an epoch, `BootStrapper` once a
        bootstrap) would only cost its size again. Each compute() moves it to its own metric's device."""
        return self

    @property
    def max_tokens(self) -> int:
        """Padded tokens per forward pass: small on a CPU, whose throughput is flat past ~2k tokens (so
        memory stays low and does not depend on how long the longest texts are), larger on accelerators."""
        if self._max_tokens is not None:
            return self._max_tokens
        return 2048 if self.device.type == "cpu" else 16384

    @max_tokens.setter
    def max_tokens(self, value: int | None) -> None:
        self._max_tokens = value

    @property
    def block_bytes(self) -> int:
        """Working memory of a compute() for its table of token vectors, results and plan: 32 MiB on a CPU,
        256 MiB on accelerators (where forward batches are eight times larger)."""
        return 32 << 20 if self.device.type == "cpu" else 256 << 20

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    def to(self, device: torch.device | str) -> Embedder:
        self.model.to(device)
        return self

    @property
    def hidden_size(self) -> int:
        if self._hidden_size is not None:
            return self._hidden_size
        config = getattr(self.model, "config", None)
        return int(config.hidden_size if hasattr(config, "hidden_size") else config.d_model)  # type: ignore[union-attr]

    def _autocast(self) -> AbstractContextManager[object]:
        if self.model_dtype == torch.float32:
            return nullcontext()
        return torch.autocast(device_type=self.device.type, dtype=self.model_dtype)

    def embed_batch(self, seqs: Sequence[Tensor]) -> Tensor:
        """Normalised vectors of a batch of non-empty sequences: [B, T, D] (or [B, T, layers, D]), padding
        rows undefined; the caller masks them by the sequence lengths."""
        device = self.device
        longest = max(len(s) for s in seqs)
        ids = torch.full((len(seqs), longest), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(seqs), longest), dtype=torch.long)
        for row, seq in enumerate(seqs):
            ids[row, : len(seq)] = seq
            mask[row, : len(seq)] = 1
        ids, mask = ids.to(device, non_blocking=True), mask.to(device, non_blocking=True)
        with torch.inference_mode(), self._autocast():
            out = self.model(input_ids=ids, attention_mask=mask, output_hidden_states=self.all_layers)
            hidden = torch.stack(tuple(out.hidden_states), dim=2) if self.all_layers else out[0]
            hidden = hidden.float()
            hidden = hidden / hidden.norm(dim=-1, keepdim=True)
        self.rows_embedded += len(seqs)
        return hidden

    def embed_into(
        self,
        table: Tensor,
        seqs: Sequence[Tensor],
        progress: object | None = None,
        ranges: Sequence[tuple[int, int]] | None = None,
    ) -> list[int]:
        """Write the sequences' vectors end to end into `table` from its first row on and return each
        sequence's first row. Empty sequences take no rows and are never run. Each batch's output is copied
        and dropped before the next batch runs, so only one batch of activations is alive at a time.

        A text longer than the window rule's window runs as its windows (`bertscore_tm.windows`), batched
        with everything else. `ranges` (one ``(lo, hi)`` per sequence) writes only those rows of each text.
        """
        lengths = [len(s) for s in seqs] if ranges is None else [hi - lo for lo, hi in ranges]
        starts, row = [], 0
        for n in lengths:
            starts.append(row)
            row += n
        if row > table.shape[0]:
            raise ValueError(f"table has {table.shape[0]} rows; these sequences need {row}")
        pieces = plan_pieces([len(s) for s in seqs], self.windows, ranges)
        left = [0] * len(seqs)  # pieces still to run per text, for the progress bar (which counts texts)
        for piece in pieces:
            left[piece.text] += 1
        for batch in length_batches([p.size for p in pieces], self.batch_size, self.max_tokens):
            chosen = [pieces[i] for i in batch]
            hidden = self.embed_batch([piece_ids(seqs[p.text], p, self.windows) for p in chosen])
            done = 0
            for r, p in enumerate(chosen):
                at = starts[p.text] + p.dst - (0 if ranges is None else ranges[p.text][0])
                table[at : at + p.length] = hidden[r, p.src : p.src + p.length]
                left[p.text] -= 1
                done += left[p.text] == 0
            del hidden
            if progress is not None:
                progress.update(done)  # type: ignore[attr-defined]
        return starts

    def new_table(self, rows: int) -> Tensor:
        """An uninitialised float32 table for `rows` token vectors on the model's device."""
        shape = (rows, self.num_rows, self.hidden_size) if self.all_layers else (rows, self.hidden_size)
        return torch.empty(shape, dtype=torch.float32, device=self.device)

    def embed(self, seqs: Sequence[Tensor], progress: object | None = None) -> tuple[Tensor, Tensor]:
        """All sequences' vectors packed end to end: ([sum of lengths, D] or [.., layers, D], float32,
        normalised) and the start row of each sequence."""
        table = self.new_table(sum(len(s) for s in seqs))
        starts = self.embed_into(table, seqs, progress=progress)
        return table, torch.tensor(starts, dtype=torch.long)

    @property
    def num_rows(self) -> int:
        """How many layers of scores each token gives: 1, or depth + 1 with all_layers."""
        if not self.all_layers:
            return 1
        if self._depth is not None:
            return self._depth + 1
        from bertscore_tm.loading import model_depth

        assert isinstance(self.model, nn.Module)  # a UserModel comes with its depth
        return model_depth(self.model) + 1
