"""Runs the cut model into float32 L2-normalised vectors in a caller's table, a batch at a time. A text's vectors
depend on the text alone (one-length CPU batches of at least `MIN_BATCH_TOKENS` tokens, length-only attention), so
cached vectors score as fresh ones; accelerators run packed or padded, within 1e-6 (docs/performance.md)."""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor, nn

from bertscore_tm.embedding.attention import install, packed_forward, packed_pass
from bertscore_tm.embedding.batches import SCORES_LENGTH, length_batches, pack_end, packs, padded_buckets
from bertscore_tm.embedding.precision import own_precision, warn_emulated_precision
from bertscore_tm.embedding.rows import (
    EndToEnd,
    copy_pieces,
    end_to_end,
    ragged_arange,
    send,
    table_rows,
    table_rows_of,
)
from bertscore_tm.errors import DeviceMemoryError, TableMemoryError, warn_user
from bertscore_tm.models.model_family import can_pack
from bertscore_tm.models.windows import WindowRule, head_lengths, piece_ids, plan_pieces

if TYPE_CHECKING:
    from bertscore_tm.models.user_model import UserModel


#: The fewest tokens a forward batch runs (a smaller one runs with copies of its texts): below it CPU matmul
#: libraries switch kernels, whose sums round differently.
MIN_BATCH_TOKENS = 64

#: The compute dtypes that run in accelerator batching off a CPU (`Embedder.accelerated`).
ACCELERATED_DTYPES = frozenset({torch.float32, torch.bfloat16, torch.float16})

#: With all_layers, a compute's working memory grows with the layers kept up to this many (a deep model's table
#: then holds fewer tokens rather than taking many times the memory).
BUDGET_LAYERS = 8


def _out_of_memory(err: BaseException) -> bool:
    """Whether `err` is an accelerator out of memory (torch's error or a backend's message)."""
    kinds = tuple(k for k in (getattr(torch, "OutOfMemoryError", None), torch.cuda.OutOfMemoryError) if k)
    return isinstance(err, kinds) or (isinstance(err, RuntimeError) and "out of memory" in str(err).lower())


def _normalised(hidden: Tensor, out: Tensor | None = None) -> Tensor:
    """Float32 vectors divided by their L2 norm: one formula, so packed and batched passes give the same bits."""
    hidden = hidden.float()
    return torch.div(hidden, hidden.norm(dim=-1, keepdim=True), out=out)


class Embedder:
    """Holds the frozen encoder (outside any module tree, so never in a state_dict) and embeds."""

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
        compile_model: bool = False,
    ) -> None:
        #: Whether the model is a model object of the user's (a `UserModel`): never cast, never switched.
        self.user_supplied = not isinstance(model, nn.Module)
        #: Whether the model packs (`attention.install`, once, before any cast); a user's model never packs.
        self._packs = isinstance(model, nn.Module) and install(model, can_pack(model))
        if model_dtype == torch.bfloat16 and isinstance(model, nn.Module):
            model.to(torch.bfloat16)  # a model we loaded: cast once (autocast would cast every weight every pass)
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
        #: Whether the forward pass runs through `torch.compile` (opt-in; compiled kernels round differently).
        self.compile_model = compile_model
        self._compiled: Any = None  # the compiled forward, made on first use on the model's device
        #: How many sequences (rows) this embedder has run through the model: lets tests count the work.
        self.rows_embedded = 0
        #: The batching policy: None picks by the device; "accelerator" or "one-length" (never packed) force one.
        self._batching: str | None = None

    @property
    def max_tokens(self) -> int:
        """Padded tokens per forward pass: small on a CPU (flat throughput, low memory), larger elsewhere."""
        if self._max_tokens is not None:
            return self._max_tokens
        return 2048 if self.device.type == "cpu" else 16384

    @max_tokens.setter
    def max_tokens(self, value: int | None) -> None:
        self._max_tokens = value

    @property
    def block_bytes(self) -> int:
        """A compute()'s table memory, per layer kept up to `BUDGET_LAYERS`."""
        per_layer = 64 << 20 if self.device.type == "cpu" else 256 << 20
        return per_layer * min(self.num_rows, BUDGET_LAYERS)

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    def to(self, device: torch.device | str) -> Embedder:
        """Move the model (only its `ModelHandle` decides when); a user's model object is never moved."""
        if not isinstance(self.model, nn.Module):
            raise TypeError("a model object of the user's is never moved: it runs where it is")
        before = self.device
        self.model.to(device)
        if self.device != before:
            self._compiled = None  # compiled for the old device: compile again where the model now is
        return self

    def copied_to(self, device: torch.device | str) -> Embedder:
        """This embedder with its weights copied once to `device` (`ModelHandle`); never a user's model."""
        if not isinstance(self.model, nn.Module):
            raise TypeError("a model object of the user's is never copied: it runs where it is")
        memo: dict[int, Any] = {}
        for tensor in (*self.model.parameters(), *self.model.buffers()):
            moved = tensor.detach().to(device, copy=True)
            memo[id(tensor)] = nn.Parameter(moved, tensor.requires_grad) if isinstance(tensor, nn.Parameter) else moved
        twin = copy.copy(self)
        twin.model = copy.deepcopy(self.model, memo)
        twin._compiled, twin.rows_embedded = None, 0
        return twin

    def _forward(self) -> Any:
        """The model, or with `compile_model` its forward compiled once with dynamic shapes and frozen weights."""
        if not self.compile_model:
            return self.model
        if self._compiled is None:
            self._compiled = torch.compile(self.model, dynamic=True, options={"freezing": True})
        return self._compiled

    @property
    def hidden_size(self) -> int:
        if self._hidden_size is not None:
            return self._hidden_size
        config = getattr(self.model, "config", None)
        return int(config.hidden_size if hasattr(config, "hidden_size") else config.d_model)  # type: ignore[union-attr]

    def _autocast(self) -> AbstractContextManager[object]:
        if self.model_dtype == torch.float32 or (self.model_dtype == torch.bfloat16 and not self.user_supplied):
            return own_precision(self.device)  # float32, or bfloat16 weights cast once: never a caller's autocast
        return torch.autocast(device_type=self.device.type, dtype=self.model_dtype)

    def embed_batch(self, seqs: Sequence[Tensor], out: Tensor | None = None) -> Tensor:
        """Normalised vectors [B, T, D] (or [B, T, layers, D]) of non-empty sequences, padding rows
        undefined; a batch under `MIN_BATCH_TOKENS` runs with copies, so kernels and bits do not change."""
        device = self.device
        longest = max(len(s) for s in seqs)
        count = len(seqs)
        copies = max(1, -(-MIN_BATCH_TOKENS // (count * longest)))
        ids = torch.full((count * copies, longest), self.pad_id, dtype=torch.long)
        mask = torch.zeros((count * copies, longest), dtype=torch.long)
        for row, seq in enumerate(seqs):
            ids[row, : len(seq)] = seq
            mask[row, : len(seq)] = 1
        if copies > 1:
            ids[count:] = ids[:count].repeat(copies - 1, 1)
            mask[count:] = mask[:count].repeat(copies - 1, 1)
        ids, mask = send(ids, device), send(mask, device)
        with torch.inference_mode(), self._autocast():
            states = self._forward()(input_ids=ids, attention_mask=mask, output_hidden_states=self.all_layers)
            if not self.all_layers:
                hidden = _normalised(states[0][:count], out)
            else:  # every layer's vectors into one tensor, without stacking
                layers = states.hidden_states
                shape = (count, layers[0].shape[1], len(layers), layers[0].shape[-1])
                hidden = torch.empty(shape, device=layers[0].device) if out is None else out
                for layer, state in enumerate(layers):
                    _normalised(state[:count], out=hidden[:, :, layer])
        self.rows_embedded += count
        return hidden

    @property
    def accelerated(self) -> bool:
        """Whether texts run packed or in padded buckets rather than one-length batches, which are
        small and costly on a GPU: off a CPU, for a model we loaded (a user's may ignore the padding mask)."""
        if self._batching is not None:
            return self._batching == "accelerator"
        return self.device.type != "cpu" and not self.user_supplied and self.model_dtype in ACCELERATED_DTYPES

    @property
    def packing(self) -> bool:
        """Whether passes run packed: last layer only, uncompiled, on an accelerator or in bfloat16 on a CPU."""
        if not self._packs or self.all_layers or self.compile_model or self._batching == "one-length":
            return False
        return self.accelerated or (self.model_dtype == torch.bfloat16 and self.device.type == "cpu")

    def _batches(self, lengths: Sequence[int]) -> Iterator[list[int]]:
        if self.packing:
            return packs(lengths, self.max_tokens, self.batch_size)
        if self.accelerated:
            return padded_buckets(lengths, self.batch_size, self.max_tokens)
        return length_batches(lengths, self.batch_size, self.max_tokens)

    def embed_rows(
        self, seqs: Sequence[Tensor], out: Tensor | None = None, lengths: Sequence[int] | None = None
    ) -> tuple[Tensor, list[int]]:
        """One pass's vectors as one stream of rows and each sequence's first row, moved in one copy (per-text
        copies cost a launch each on an accelerator); `out` receives them where given."""
        if not self.packing:
            hidden = self.embed_batch(seqs, out)
            width = hidden.shape[1]
            return hidden.flatten(0, 1), [r * width for r in range(len(seqs))]
        sizes = [len(s) for s in seqs] if lengths is None else list(lengths)
        copies = max(1, -(-MIN_BATCH_TOKENS // sum(sizes)))
        budget = self.max_tokens * SCORES_LENGTH
        with torch.inference_mode(), self._autocast():
            if copies == 1 and isinstance(seqs, EndToEnd) and seqs.longest_first:  # run as the ids lie
                hidden, starts = packed_pass(self.model, seqs.ids, sizes, budget), seqs.firsts
            else:
                hidden, starts = packed_forward(self.model, list(seqs) * copies, budget, sizes * copies)
        self.rows_embedded += len(seqs)
        starts = starts[: len(seqs)]
        if out is not None and starts == end_to_end(sizes):  # the pack's rows are `out`'s rows
            return _normalised(hidden[: len(out)], out), starts
        stream = _normalised(hidden)
        if out is None:
            return stream, starts
        at = ragged_arange(torch.tensor(starts), torch.tensor(sizes, dtype=torch.long))
        out.copy_(stream.index_select(0, send(at, stream.device)))
        return out, end_to_end(sizes)

    def embed_into(
        self,
        table: Tensor,
        seqs: Sequence[Tensor],
        progress: object | None = None,
        ranges: Sequence[tuple[int, int]] | None = None,
        lengths: Sequence[int] | None = None,
        heads: Sequence[int] | None = None,
    ) -> list[int]:
        """Write the sequences' vectors end to end into `table` and return each first row; `ranges`
        limits the rows per text; `heads`: each text's marked tokens (a prompt's, a context's: None, none), which
        ride in each of its windows. Out of accelerator memory, halve the token budget and retry: a text's vectors
        do not depend on its batch, so scores do not change."""
        warn_emulated_precision(self.model_dtype, self.device)  # said once: bfloat16 a CPU only emulates
        if isinstance(seqs, EndToEnd) and ranges is None and self._packs_whole(seqs):
            return self._embed_packs(table, seqs, progress)
        sizes = [len(s) for s in seqs] if lengths is None else lengths
        starts = table_rows(table, sizes if ranges is None else [hi - lo for lo, hi in ranges])
        pieces = plan_pieces(sizes, self.windows, ranges, head_lengths(heads, sizes, self.windows))
        left = Counter(piece.text for piece in pieces)  # pieces still to run per text, for the progress bar
        todo, first_budget = list(range(len(pieces))), self.max_tokens
        while todo:
            done_now: set[int] = set()
            for batch in self._batches([pieces[i].size for i in todo]):
                chosen = [pieces[todo[i]] for i in batch]
                # whole texts normalised straight into their table rows where they lie so (None: copied in)
                direct = None if ranges is not None else table_rows_of(table, starts, chosen, self.packing)
                try:
                    ids = [piece_ids(seqs[p.text], p, self.windows) for p in chosen]
                    rows = self.embed_rows(ids, out=direct, lengths=[p.size for p in chosen])
                except Exception as err:
                    if not _out_of_memory(err):
                        raise
                    self._halve_budget(max(p.size for p in chosen))
                    break
                if direct is None:  # else the rows are in the table already
                    copy_pieces(table, *rows, chosen, starts, ranges)
                done = 0
                for p in chosen:
                    left[p.text] -= 1
                    done += left[p.text] == 0
                del rows
                done_now.update(todo[i] for i in batch)
                if progress is not None:
                    progress.update(done)  # type: ignore[attr-defined]
            todo = [i for i in todo if i not in done_now]
        self._say_budget(first_budget)
        return starts

    def _packs_whole(self, seqs: EndToEnd) -> bool:
        """Whether `_embed_packs` takes these: longest first, packing, each text within one window."""
        if not seqs.longest_first or not self.packing or not seqs.lengths:
            return False
        rule = self.windows
        return rule is None or seqs.lengths[0] - rule.lead - rule.trail <= rule.size

    def _embed_packs(self, table: Tensor, seqs: EndToEnd, progress: object | None) -> list[int]:
        """`embed_into` of whole texts end to end longest first, each pack run from its slice of ids
        into its slice of the table: no per-text work, which on an accelerator cost as much as the pass."""
        sizes = seqs.lengths
        starts = table_rows(table, sizes)
        edges, n = [*starts, starts[-1] + sizes[-1]], len(sizes)
        while n and not sizes[n - 1]:
            n -= 1
        first_budget, i = self.max_tokens, 0
        while i < n:
            j = pack_end(edges, i, n, self.max_tokens, self.batch_size)
            try:
                self.embed_rows(seqs[i:j], out=table[edges[i] : edges[j]], lengths=sizes[i:j])
            except Exception as err:
                if not _out_of_memory(err):
                    raise
                self._halve_budget(sizes[i])
                continue
            if progress is not None:
                progress.update(j - i)  # type: ignore[attr-defined]
            i = j
        self._say_budget(first_budget)
        return starts

    def _say_budget(self, first_budget: int) -> None:
        if self.max_tokens != first_budget:
            warn_user(
                f"The accelerator ran out of memory in a forward pass with a budget of {first_budget} padded tokens; "
                f"it went on with {self.max_tokens}, which worked (kept for later passes; scores are unchanged)."
            )

    def _drop_cached_memory(self) -> None:
        """After CUDA runs out of memory: free the allocator's cache so the retry sees it all."""
        if self.device.type == "cuda":
            torch.cuda.empty_cache()

    def _halve_budget(self, longest: int) -> None:
        """Halve the token budget, or raise where a text of `longest` tokens already ran alone."""
        self._drop_cached_memory()
        if self.max_tokens <= longest:
            raise DeviceMemoryError(
                f"One text of {longest} tokens does not fit in the memory of {self.device} even alone. Score it in "
                "windows of fewer tokens (long_texts='window' with a smaller max_length), in bfloat16 "
                "(model_dtype=torch.bfloat16), or on the CPU.",
                tokens=longest,
            )
        self.max_tokens = max(longest, self.max_tokens // 2)

    def new_table(self, rows: int) -> Tensor:
        """An uninitialised float32 table of `rows` vectors on the device, or a `TableMemoryError`."""
        shape = (rows, self.num_rows, self.hidden_size) if self.all_layers else (rows, self.hidden_size)
        try:
            return torch.empty(shape, dtype=torch.float32, device=self.device)
        except Exception as err:
            if not _out_of_memory(err):
                raise
        self._drop_cached_memory()
        mib = rows * self.num_rows * self.hidden_size * 4 / 2**20
        raise TableMemoryError(
            f"The memory of {self.device} has no room for the token vectors of {rows} tokens ({mib:.0f} MiB) "
            "that this call needs at once. Score fewer texts per call, free memory on the device, or score on the "
            "CPU.",
            tokens=rows,
        )

    def embed(self, seqs: Sequence[Tensor], progress: object | None = None) -> tuple[Tensor, Tensor]:
        """All sequences' vectors end to end, and each sequence's start row."""
        table = self.new_table(sum(len(s) for s in seqs))
        starts = self.embed_into(table, seqs, progress=progress)
        return table, torch.tensor(starts, dtype=torch.long)

    @property
    def num_rows(self) -> int:
        """Layers of scores per token: 1, or depth + 1 with all_layers."""
        if not self.all_layers:
            return 1
        if self._depth is not None:
            return self._depth + 1
        from bertscore_tm.models.loading import model_depth

        assert isinstance(self.model, nn.Module)  # a UserModel comes with its depth
        return model_depth(self.model) + 1
