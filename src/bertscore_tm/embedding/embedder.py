"""Embedding: runs the cut model over token-id sequences and writes L2-normalised token vectors.

Sequences are sorted by length and cut into batches of one length each (so nothing is padded) by a token
budget (and optionally a count), so memory stays bounded; the forward pass runs under `inference_mode`. Vectors
come back in float32 whatever the compute dtype, written straight into a table the caller owns, so a batch's
output is dropped before the next batch runs. With a window rule (`bertscore_tm.models.windows`, long_texts="window")
a long text runs as several window sequences in the same batch stream, and the rows each token keeps are
stitched into that text's rows of the table.

In float32 on a CPU, a batch of sequences of at most `EAGER_CPU_TOKENS` tokens runs the model's eager attention
where its own is scaled-dot-product attention, whose CPU kernel is built for long sequences: a few percent
faster on sentences, slower on longer texts (docs/performance.md). Which one a text runs with depends on its
length alone, so its vectors still depend on nothing but the text.

The opt-in lower precisions (inexact, about 1e-3 in F1): bfloat16 casts the weights of a model we loaded once
(autocast would cast every weight again in every forward pass, about a sixth of the time on a CPU; bfloat16
has float32's range, so nothing overflows) and, on a CPU, uses the model's eager attention (its bfloat16
products and softmax take half the time of the CPU's scaled-dot-product kernel on sentences); float16, and
bfloat16 with a model object of the user's (`UserModel`: never cast, never switched), run under autocast.
bfloat16 on a CPU also runs packed where the model's family allows (`bertscore_tm.embedding.packing`: many lengths in
one stream, the very same vectors in less time); everything else runs in batches of one length. In bfloat16 on
a CPU, a model we loaded (packed or not, not compiled) also multiplies its linear layers with weights put in
oneDNN's layout once (`bertscore_tm.embedding.prepacked_linear`: the very same bits, in less time).

On any other device (CUDA, ...) texts run in accelerator batching (`Embedder.accelerated`): batches of one length
are small there and cost more than padding, so the texts sorted by length run packed end to end in packs of the
token budget, attention kept within each text by fused kernels (variable-length attention on CUDA in bfloat16
and float16), where the model's family packs (`bertscore_tm.embedding.packing`), and in padded length buckets
(`padded_buckets`) where it does not (DeBERTa's relative attention, T5, XLNet, ...) or with all_layers; a
user's model keeps batches of one length. Ids are copied from pinned memory without waiting. In float32 a
text's vectors there move from its one-length ones by rounding only (within 1e-6: tests run the path on a CPU
through `_batching`); which path is fastest per dtype is what `benchmarks/gpu_suite.py` measures
(`ACCELERATED_DTYPES` says which dtypes use it).

`compile_model=True` (opt-in, a model we loaded) runs the forward pass through `torch.compile` (dynamic shapes,
frozen weights): its first batches wait for the compilation (tens of seconds on a CPU), then the forward pass
is a little faster. A compiled model runs in batches of one length, never packed or prepacked, so in bfloat16 on
a small CPU it is slower than the default (measured: docs/performance.md). Its fused kernels round differently
from the eager ones (about 1e-6 in F1 in float32), so it is never on by default.

A text's vectors do not depend on the batch it runs in: padding would change the summation order of the
attention (so the last bits of every vector) with the longest text of the batch, and tiny matrices take other
code paths in the matrix-multiply libraries, so batches are never padded and never hold fewer than
`MIN_BATCH_TOKENS` tokens (a short text alone runs with copies of itself). That holds for windows (each window
is a sequence like any other) and for user models alike, and it is what lets a cached vector, or a text scored
on another process or in another compute(), give exactly the scores of a fresh one.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext, suppress
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor, nn

from bertscore_tm.embedding.batches import SCORES_LENGTH, length_batches, pack_end, packs, padded_buckets
from bertscore_tm.embedding.packing import can_pack, packed_forward, packed_pass, send
from bertscore_tm.embedding.precision import own_precision, warn_emulated_precision
from bertscore_tm.embedding.prepacked_linear import PrepackedLinears
from bertscore_tm.embedding.rows import (
    EndToEnd,
    copy_pieces,
    end_to_end,
    ragged_arange,
    table_rows,
    table_rows_of,
    table_span_of,
)
from bertscore_tm.errors import DeviceMemoryError, TableMemoryError, warn_user
from bertscore_tm.models.prompts import unmarked
from bertscore_tm.models.windows import Piece, WindowRule, head_lengths, piece_ids, plan_pieces

if TYPE_CHECKING:
    from bertscore_tm.models.user_model import UserModel


#: The fewest tokens a forward batch runs: below this CPU matrix-multiply libraries switch to other kernels
#: (matrix-vector paths, other thread splits), whose sums round differently; a smaller batch runs with copies
#: of its texts. A multiple of 16 and well past the sizes seen to differ (under 12 rows, MKL on AVX-512).
MIN_BATCH_TOKENS = 64

#: Float32 on a CPU: a batch of sequences of at most this many tokens runs the model's eager attention where its
#: own is scaled-dot-product attention, whose CPU kernel is built for long sequences: a few percent faster on
#: sentences, slower from about 64 tokens on (docs/performance.md, Attention on a CPU).
EAGER_CPU_TOKENS = 48

#: The compute dtypes that run in accelerator batching on a device other than a CPU (`Embedder.accelerated`):
#: all, as `benchmarks/gpu_suite.py` measured on an H100 (2026-11-28, its metric_one_length step: accelerator
#: batching 1.31x batches of one length in float32, 7.0x in bfloat16); a dtype that a card measures faster in
#: batches of one length leaves this set.
ACCELERATED_DTYPES = frozenset({torch.float32, torch.bfloat16, torch.float16})

#: With all_layers, a compute's working memory grows with the layers kept up to this many (MiniLM's 7 rows fit;
#: a 25-row large model keeps 8 layers' worth and a table of fewer tokens rather than 25 times the memory).
BUDGET_LAYERS = 8


def _out_of_memory(err: BaseException) -> bool:
    """Whether `err` is an accelerator running out of memory (CUDA's and torch's own error, or a backend's
    message saying so)."""
    kinds = tuple(k for k in (getattr(torch, "OutOfMemoryError", None), torch.cuda.OutOfMemoryError) if k)
    return isinstance(err, kinds) or (isinstance(err, RuntimeError) and "out of memory" in str(err).lower())


def _normalised(hidden: Tensor, out: Tensor | None = None) -> Tensor:
    """Token vectors in float32, each divided by its L2 norm: one formula for packed passes and batches alike,
    so both give the same bits. `out` (float32, of `hidden`'s shape, any strides) receives them where given."""
    hidden = hidden.float()
    return torch.div(hidden, hidden.norm(dim=-1, keepdim=True), out=out)


def _written(out: Tensor | None, stream: Tensor, firsts: list[int], sizes: Sequence[int]) -> tuple[Tensor, list[int]]:
    """A stream of rows (sequence k's from ``firsts[k]``) as `embed_rows` returns it: copied into `out` (the
    sequences' rows end to end, in one indexed copy) where given."""
    if out is None:
        return stream, firsts
    lengths = torch.tensor(sizes, dtype=torch.long)
    out.copy_(stream.index_select(0, send(ragged_arange(torch.tensor(firsts), lengths), stream.device)))
    return out, end_to_end(sizes)


def _normalised_layers(states: Sequence[Tensor], count: int, out: Tensor | None = None) -> Tensor:
    """Every layer's vectors of the first `count` rows of a batch, normalised (`_normalised`) straight into
    one [count, T, layers, D] float32 tensor (`out` where given): no stacked copy of the hidden states is made
    first."""
    first = states[0]
    shape = (count, first.shape[1], len(states), first.shape[-1])
    hidden = torch.empty(shape, device=first.device) if out is None else out
    for layer, state in enumerate(states):
        _normalised(state[:count], out=hidden[:, :, layer])
    return hidden


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
        compile_model: bool = False,
    ) -> None:
        if model_dtype not in (torch.float32, torch.float16, torch.bfloat16):
            raise ValueError(f"model_dtype must be torch.float32, torch.float16 or torch.bfloat16, got {model_dtype}")
        #: Whether the model is a model object of the user's (a `UserModel`): never cast, never switched.
        self.user_supplied = not isinstance(model, nn.Module)
        if model_dtype == torch.bfloat16 and isinstance(model, nn.Module):
            model.to(torch.bfloat16)  # a model we loaded: cast once (see the module's docstring)
        self.model = model
        config = None if self.user_supplied else getattr(model, "config", None)
        self._own_attention = getattr(config, "_attn_implementation", None)
        self.pad_id = pad_id
        self.all_layers = all_layers
        self.model_dtype = model_dtype
        self.batch_size = batch_size
        self._max_tokens = max_tokens
        self._hidden_size = hidden_size
        self._depth = depth
        #: Long texts: the window rule (None: every sequence runs whole, as truncate mode has it).
        self.windows = windows
        #: Whether the forward pass runs through `torch.compile` (opt-in, inexact: see the module's docstring).
        self.compile_model = compile_model
        self._compiled: Any = None  # the compiled forward, made on first use on the model's device
        #: How many sequences (rows) this embedder has run through the model: lets tests count the work.
        self.rows_embedded = 0
        #: Whether a packed pass was seen to bypass our attention function (then never packed again).
        self._packing_refused = False
        #: The batching policy: None picks by the device (a CPU's batches of one length, else accelerator
        #: batching); "accelerator" or "one-length" force one (tests on a CPU, the device suite's comparisons).
        self._batching: str | None = None
        #: The model's linear layers prepacked (`bertscore_tm.embedding.prepacked_linear`), made on first use; None
        #: where they do not prepack, or before that use (`_prepack_tried`).
        self._prepacked: PrepackedLinears | None = None
        self._prepack_tried = False
        self._choose_attention()

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
        """Working memory of a compute() for its table of token vectors, results and plan: 64 MiB on a CPU,
        256 MiB on accelerators (where forward batches are eight times larger); that much per layer kept, up to
        `BUDGET_LAYERS` layers, so that with all_layers a table holds about as many tokens as with one layer.
        A table of few tokens splits the texts of one length over many small forward batches, one per block
        (docs/performance.md)."""
        per_layer = 64 << 20 if self.device.type == "cpu" else 256 << 20
        return per_layer * min(self.num_rows, BUDGET_LAYERS)

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    def to(self, device: torch.device | str) -> Embedder:
        """Move the model to `device` (its `ModelHandle` alone decides when: `bertscore_tm.embedding.handle`); a
        model object of the user's is never moved."""
        if not isinstance(self.model, nn.Module):
            raise TypeError("a model object of the user's is never moved: it runs where it is")
        before = self.device
        self.model.to(device)
        if self.device != before:
            self._compiled = None  # compiled for the old device: compile again where the model now is
            self._prepacked, self._prepack_tried = None, False  # the weights moved: prepack again if they can
        self._choose_attention()
        return self

    def copied_to(self, device: torch.device | str) -> Embedder:
        """This embedder with a copy of its model's weights made on `device` (each tensor copied there once;
        this model stays where it is), for a metric that computes there while another still uses this one
        (`ModelHandle`). A model we loaded only: a user's model object is never copied."""
        if not isinstance(self.model, nn.Module):
            raise TypeError("a model object of the user's is never copied: it runs where it is")
        memo: dict[int, Any] = {}
        for tensor in (*self.model.parameters(), *self.model.buffers()):
            moved = tensor.detach().to(device, copy=True)
            memo[id(tensor)] = nn.Parameter(moved, tensor.requires_grad) if isinstance(tensor, nn.Parameter) else moved
        twin = copy.copy(self)
        twin.model = copy.deepcopy(self.model, memo)
        twin._compiled, twin._prepacked, twin._prepack_tried, twin.rows_embedded = None, None, False, 0
        twin._choose_attention()
        return twin

    def _forward(self) -> Any:
        """The model, or its compiled forward with `compile_model`: shapes dynamic (one compilation serves every
        batch size and length, besides the one or two specialised ones the compiler keeps for size 1), with the
        compiler's `freezing` option (weights treated as constants of an inference graph)."""
        if not self.compile_model:
            return self.model
        if self._compiled is None:
            self._compiled = torch.compile(self.model, dynamic=True, options={"freezing": True})
        return self._compiled

    def _choose_attention(self, length: int | None = None) -> None:
        """The attention of a model we loaded whose own is scaled-dot-product attention, for a batch of
        sequences of `length` tokens (None: at construction and after a move, when no batch runs; after a batch
        the model keeps that batch's attention until the next batch chooses). Its CPU kernel is built for long
        sequences, so on a CPU bfloat16 runs the eager attention (twice as fast on sentences), and float32 does
        for sequences of at most `EAGER_CPU_TOKENS` tokens (a few percent faster; a compiled model keeps one
        attention); elsewhere the model's own. A batch holds one length, so a text's vectors still depend on
        nothing but the text. A user's model is never switched."""
        if self.user_supplied or self._own_attention != "sdpa":
            return
        cpu = self.device.type == "cpu"
        short = length is not None and length <= EAGER_CPU_TOKENS and not self.compile_model
        eager = cpu and (self.model_dtype == torch.bfloat16 or (self.model_dtype == torch.float32 and short))
        wanted = "eager" if eager else self._own_attention
        config = getattr(self.model, "config", None)
        if getattr(config, "_attn_implementation", None) == wanted:
            return
        with suppress(AttributeError, ValueError, ImportError):  # a model that cannot switch keeps its own
            self.model.set_attn_implementation(wanted)  # type: ignore[operator, union-attr]

    @property
    def hidden_size(self) -> int:
        if self._hidden_size is not None:
            return self._hidden_size
        config = getattr(self.model, "config", None)
        return int(config.hidden_size if hasattr(config, "hidden_size") else config.d_model)  # type: ignore[union-attr]

    def _linears(self) -> AbstractContextManager[object]:
        """bfloat16 on a CPU, a model we loaded and not compiled: its linear layers multiply with prepacked
        weights (`bertscore_tm.embedding.prepacked_linear`: the same bits in less time); elsewhere as they are."""
        if self.user_supplied or self.compile_model or self.model_dtype != torch.bfloat16:
            return nullcontext()
        if not self._prepack_tried or (self._prepacked is not None and not self._prepacked.current()):
            self._prepacked = PrepackedLinears.of(self.model)  # type: ignore[arg-type]
            self._prepack_tried = True
        return nullcontext() if self._prepacked is None else self._prepacked.active()

    def __getstate__(self) -> dict[str, Any]:
        """A pickled embedder leaves its prepacked weights behind (oneDNN's layout has no storage to
        pickle); the copy prepacks again on first use."""
        state = self.__dict__.copy()
        state["_prepacked"], state["_prepack_tried"] = None, False
        return state

    def _autocast(self) -> AbstractContextManager[object]:
        if self.model_dtype == torch.float32 or (self.model_dtype == torch.bfloat16 and not self.user_supplied):
            return own_precision(self.device)  # float32, or bfloat16 weights cast once: never a caller's autocast
        return torch.autocast(device_type=self.device.type, dtype=self.model_dtype)

    def embed_batch(self, seqs: Sequence[Tensor], out: Tensor | None = None) -> Tensor:
        """Normalised vectors of a batch of non-empty sequences: [B, T, D] (or [B, T, layers, D]), padding
        rows undefined; the caller masks them by the sequence lengths. A batch of fewer than
        `MIN_BATCH_TOKENS` tokens runs with copies of its sequences (see the module's docstring). `out` (float32,
        of that shape) receives the vectors where given (the same bits), and is returned."""
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
        ids, mask = send(unmarked(ids), device), send(mask, device)  # marked ids as the model reads them
        self._choose_attention(longest)
        with torch.inference_mode(), self._autocast(), self._linears():
            states = self._forward()(input_ids=ids, attention_mask=mask, output_hidden_states=self.all_layers)
            if self.all_layers:
                hidden = _normalised_layers(states.hidden_states, count, out)
            else:
                hidden = _normalised(states[0][:count], out)
        self.rows_embedded += count
        return hidden

    @property
    def accelerated(self) -> bool:
        """Whether texts run in accelerator batching: packed where the model packs, else in padded length
        buckets (`padded_buckets`), not in batches of one length, which are small on a GPU and cost more there
        than padding. Any device but a CPU, for a model we loaded (a user's model or `forward_fn` may not honour a
        padding mask, so it keeps batches of one length), unless `_batching` forces a policy."""
        if self._batching is not None:
            return self._batching == "accelerator"
        return self.device.type != "cpu" and not self.user_supplied and self.model_dtype in ACCELERATED_DTYPES

    @property
    def packing(self) -> bool:
        """Whether forward passes run packed (`bertscore_tm.embedding.packing`): a model we loaded of a family that
        packs, its last layer only, not compiled, in accelerator batching (any dtype) or in bfloat16 on a CPU
        (where packing gives the very vectors of batches of one length, in less time)."""
        if self.user_supplied or self._packing_refused or self.all_layers or self.compile_model:
            return False
        if not self.accelerated and (self.model_dtype != torch.bfloat16 or self.device.type != "cpu"):
            return False
        return can_pack(self.model)

    def _batches(self, lengths: Sequence[int]) -> Iterator[list[int]]:
        if self.packing:
            return packs(lengths, self.max_tokens, self.batch_size)
        if self.accelerated:
            return padded_buckets(lengths, self.batch_size, self.max_tokens)
        return length_batches(lengths, self.batch_size, self.max_tokens)

    def embed_rows(
        self, seqs: Sequence[Tensor], out: Tensor | None = None, lengths: Sequence[int] | None = None
    ) -> tuple[Tensor, list[int]]:
        """The sequences' normalised float32 vectors from one forward pass, as one stream of rows ([rows, D] or
        [rows, layers, D]) and each sequence's first row in it: packed where the embedder packs (a pack of fewer
        than `MIN_BATCH_TOKENS` tokens runs with copies of its sequences), else as one batch (of one length:
        `embed_into` cuts them so). `out`, where given, receives the vectors: a batch of one length's
        [count, length, ...] view (see `embed_batch`), or for a pack the rows of its sequences laid end to end in
        the given order ([rows, D]), normalised straight into them (the pack's order is that order wherever its
        sequences come longest first, as `packs` gives them; else they are copied in). One stream rather than a
        tensor per sequence, so that the caller moves a batch's rows in one copy: on an accelerator a copy per
        text costs a launch per text, more than the pass itself."""
        if not self.packing:
            hidden = self.embed_batch(seqs, out)
            width = hidden.shape[1]
            return hidden.flatten(0, 1), [r * width for r in range(len(seqs))]
        sizes = [len(s) for s in seqs] if lengths is None else list(lengths)
        copies = max(1, -(-MIN_BATCH_TOKENS // sum(sizes)))
        budget = self.max_tokens * SCORES_LENGTH
        with torch.inference_mode(), self._autocast(), self._linears():
            packed = self._packed(seqs, sizes, copies, budget)
            if packed is None:  # the model's blocks bypassed our attention: not packed from now on
                self._packing_refused = True
                return _written(out, *self._embed_in_batches(seqs), sizes)
            hidden, starts = packed
        self.rows_embedded += len(seqs)
        starts = starts[: len(seqs)]
        if out is not None and starts == end_to_end(sizes):  # the pack's rows are `out`'s rows
            return _normalised(hidden[: len(out)], out), starts
        return _written(out, _normalised(hidden), starts, sizes)

    def _packed(
        self, seqs: Sequence[Tensor], sizes: list[int], copies: int, budget: int
    ) -> tuple[Tensor, list[int]] | None:
        """`packed_forward` of the sequences, `copies` times each; sequences that lie end to end longest first
        (`EndToEnd`) run from their ids as they lie, with nothing made per text."""
        if copies == 1 and isinstance(seqs, EndToEnd) and seqs.longest_first:
            stream = packed_pass(self.model, seqs.ids, sizes, budget, self.accelerated)
            return None if stream is None else (stream, seqs.firsts)
        return packed_forward(self.model, list(seqs) * copies, budget, self.accelerated, sizes * copies)

    def _embed_in_batches(self, seqs: Sequence[Tensor]) -> tuple[Tensor, list[int]]:
        """`embed_rows` of sequences that did not pack, batch after batch (`_batches`), as one stream."""
        streams, firsts = [], [0] * len(seqs)
        offset = 0
        for batch in self._batches([len(s) for s in seqs]):
            stream, starts = self.embed_rows([seqs[i] for i in batch])
            for i, first in zip(batch, starts, strict=True):
                firsts[i] = offset + first
            streams.append(stream)
            offset += len(stream)
        return torch.cat(streams), firsts

    def embed_into(
        self,
        table: Tensor,
        seqs: Sequence[Tensor],
        progress: object | None = None,
        ranges: Sequence[tuple[int, int]] | None = None,
        lengths: Sequence[int] | None = None,
    ) -> list[int]:
        """Write the sequences' vectors end to end into `table` from its first row on and return each
        sequence's first row. Empty sequences take no rows and are never run. Each batch's output is copied
        (or normalised straight into its rows, where its texts lie one after another there) and dropped before the
        next batch runs, so only one batch of activations is alive at a time.

        A text longer than the window rule's window runs as its windows (`bertscore_tm.models.windows`), batched
        with everything else. `ranges` (one ``(lo, hi)`` per sequence) writes only those rows of each text;
        `lengths`, the sequences' lengths where the caller knows them (so as not to ask each tensor).

        A forward pass that runs out of accelerator memory is retried with half the token budget (down to one
        text), the pieces not yet written planned again; the budget that worked is kept for later calls and
        said in one warning. Scores do not change: a text's vectors do not depend on its batch.
        """
        warn_emulated_precision(self.model_dtype, self.device)  # said once: bfloat16 a CPU only emulates
        if isinstance(seqs, EndToEnd) and ranges is None and self._packs_whole(seqs):
            return self._embed_packs(table, seqs, progress)
        sizes = [len(s) for s in seqs] if lengths is None else lengths
        starts = table_rows(table, sizes if ranges is None else [hi - lo for lo, hi in ranges])
        pieces = plan_pieces(sizes, self.windows, ranges, head_lengths(seqs, sizes, self.windows))
        left = [0] * len(seqs)  # pieces still to run per text, for the progress bar (which counts texts)
        for piece in pieces:
            left[piece.text] += 1
        todo, first_budget = list(range(len(pieces))), self.max_tokens
        while todo:
            done_now: set[int] = set()
            for batch in self._batches([pieces[i].size for i in todo]):
                chosen = [pieces[todo[i]] for i in batch]
                direct = None if ranges is not None else self._rows_of(table, starts, chosen)
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
        """Whether `_embed_packs` takes these sequences: longest first, in an embedder that packs, each run
        whole (no window rule, or the longest fits one window)."""
        if not seqs.longest_first or not self.packing or not seqs.lengths:
            return False
        rule = self.windows
        return rule is None or seqs.lengths[0] - rule.lead - rule.trail <= rule.size

    def _embed_packs(self, table: Tensor, seqs: EndToEnd, progress: object | None) -> list[int]:
        """`embed_into` of whole sequences laid end to end longest first (a compute()'s blocks give them so) in an
        embedder that packs: the very packs of `packs`, each cut by bisection on the running token count and run
        from its slice of the ids straight into its slice of the table. Nothing is made or read per text: on an
        accelerator that work cost as much as the forward pass (docs/performance.md). Empty sequences (last)
        take no rows; out of memory halves the budget as `embed_into` does."""
        sizes = seqs.lengths
        starts = table_rows(table, sizes)
        edges, n = [*starts, starts[-1] + sizes[-1]], len(sizes)
        while n and not sizes[n - 1]:
            n -= 1
        first_budget, i = self.max_tokens, 0
        while i < n:
            if not self.packing:  # the model refused a packed pass: the rest in its batches
                self.embed_into(table[edges[i] :], list(seqs[i:n]), progress, lengths=sizes[i:n])
                break
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
        """The one warning that an out-of-memory error made the budget smaller, and which budget worked."""
        if self.max_tokens != first_budget:
            warn_user(
                f"The accelerator ran out of memory in a forward pass with a budget of {first_budget} padded tokens; "
                f"it went on with {self.max_tokens}, which worked (kept for later passes; scores are unchanged)."
            )

    def _rows_of(self, table: Tensor, starts: list[int], chosen: list[Piece]) -> Tensor | None:
        """The table's rows a batch of whole texts lying one after another there is normalised straight into: a
        pack's rows, or a batch of one length's [count, length, ...] view; None where they do not lie so."""
        return (table_span_of if self.packing else table_rows_of)(table, starts, chosen)

    def _drop_cached_memory(self) -> None:
        """After an out-of-memory error on CUDA: hand the allocator's cached, unused blocks back, so that the
        next try (a smaller batch or table) sees all the memory that is free."""
        if self.device.type == "cuda":
            torch.cuda.empty_cache()

    def _halve_budget(self, longest: int) -> None:
        """After an out-of-memory error: half the token budget, or, where one text of `longest` tokens already
        ran alone, a clear error naming its length."""
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
        """An uninitialised float32 table for `rows` token vectors on the model's device; where the accelerator
        has no room for it, a `TableMemoryError` saying how large it was."""
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
        from bertscore_tm.models.loading import model_depth

        assert isinstance(self.model, nn.Module)  # a UserModel comes with its depth
        return model_depth(self.model) + 1
