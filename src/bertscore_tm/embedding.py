"""Embedding: runs the cut model over token-id sequences and returns L2-normalised token vectors.

Sequences are sorted by length and cut into batches by count and by a token budget, so padding stays small
and memory bounded; the forward pass runs under `inference_mode`, optionally under autocast (the opt-in
lower-precision mode). Vectors come back in float32 whatever the compute dtype.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import nullcontext

import torch
from torch import Tensor, nn


def length_batches(lengths: Sequence[int], batch_size: int, max_tokens: int) -> Iterator[list[int]]:
    """Indices of `lengths` sorted longest first, cut into batches of at most `batch_size` sequences and
    (where a batch holds more than one) at most `max_tokens` padded tokens, and whose attention matrices
    hold no more than those of `max_tokens` tokens at length 32: so a batch's memory is bounded however
    long its texts are."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    batch: list[int] = []
    for i in order:
        longest = lengths[batch[0]] if batch else lengths[i]
        n = len(batch) + 1
        too_big = n * longest > max_tokens or n * longest * longest > max_tokens * 32
        if batch and (len(batch) >= batch_size or too_big):
            yield batch
            batch = []
        batch.append(i)
    if batch:
        yield batch


class Embedder:
    """Holds the frozen encoder (outside any module tree, so it never enters a state_dict) and embeds."""

    def __init__(
        self,
        model: nn.Module,
        pad_id: int,
        all_layers: bool,
        model_dtype: torch.dtype = torch.float32,
        batch_size: int = 64,
        max_tokens: int | None = None,
    ) -> None:
        if model_dtype not in (torch.float32, torch.float16, torch.bfloat16):
            raise ValueError(f"model_dtype must be torch.float32, torch.float16 or torch.bfloat16, got {model_dtype}")
        self.model = model
        self.pad_id = pad_id
        self.all_layers = all_layers
        self.model_dtype = model_dtype
        self.batch_size = batch_size
        self._max_tokens = max_tokens
        #: How many sequences (rows) this embedder has run through the model: lets tests count the work.
        self.rows_embedded = 0

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
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    def to(self, device: torch.device | str) -> "Embedder":
        self.model.to(device)
        return self

    @property
    def hidden_size(self) -> int:
        return int(self.model.config.hidden_size if hasattr(self.model.config, "hidden_size") else self.model.config.d_model)

    def _autocast(self):  # noqa: ANN202
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
            if self.all_layers:
                hidden = torch.stack(tuple(out.hidden_states), dim=2)
            else:
                hidden = out[0]
            hidden = hidden.float()
            hidden = hidden / hidden.norm(dim=-1, keepdim=True)
        self.rows_embedded += len(seqs)
        return hidden

    def embed(self, seqs: Sequence[Tensor], progress: object | None = None, spare_rows: int = 0) -> tuple[Tensor, Tensor]:
        """All sequences' vectors packed end to end: ([sum of lengths, D] or [.., layers, D], float32,
        normalised) and the start offset of each sequence. Empty sequences are never run. `spare_rows`
        uninitialised rows follow, for the caller to fill (so it never has to copy the table to extend it)."""
        lengths = [len(s) for s in seqs]
        offsets = torch.zeros(len(seqs) + 1, dtype=torch.long)
        offsets[1:] = torch.tensor(lengths, dtype=torch.long).cumsum(0)
        total = int(offsets[-1]) + spare_rows
        shape = (total, self.num_rows, self.hidden_size) if self.all_layers else (total, self.hidden_size)
        packed = torch.empty(shape, dtype=torch.float32, device=self.device)
        nonempty = [i for i, n in enumerate(lengths) if n > 0]
        for batch in length_batches([lengths[i] for i in nonempty], self.batch_size, self.max_tokens):
            rows = [nonempty[i] for i in batch]
            hidden = self.embed_batch([seqs[i] for i in rows])
            for row, i in enumerate(rows):
                packed[offsets[i] : offsets[i + 1]] = hidden[row, : lengths[i]]
            if progress is not None:
                progress.update(len(rows))  # type: ignore[attr-defined]
        return packed, offsets[:-1]

    @property
    def num_rows(self) -> int:
        """How many layers of scores each token gives: 1, or depth + 1 with all_layers."""
        if not self.all_layers:
            return 1
        from bertscore_tm.registry import model_depth

        return model_depth(self.model) + 1
