"""Every reach of the benchmarks into bertscore_tm's internals, in one place: its private settings (the embedder's
batching and budgets, the matching's gather budget, the queue's chunks, tokenising ahead), its internal modules,
and figures only the internals know (texts embedded, state bytes, the cache's tokens). When the core changes,
this is the file to adapt; suites and studies use the public API and these functions.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any


# ----------------------------------------------------------------------------------------- models and tokens
def model_path(name: str) -> str:
    from bertscore_tm.models.loading import resolve_model_path

    return str(resolve_model_path(name))


def default_layers(name: str) -> int:
    from bertscore_tm.models.registry import default_num_layers

    return default_num_layers(name)


def load_encoder(
    path: str, layers: int, device: str = "cpu", dtype: str = "float32", all_layers: bool = False
) -> tuple[Any, int, int | None]:
    """The model cut at `layers` on `device`, cast to `dtype` with the attention the metric runs in it (the
    embedder does both once): (model, the metric's token budget on the device, its batch size)."""
    import torch

    from bertscore_tm.embedding.embedder import Embedder
    from bertscore_tm.models.loading import load_encoder as load

    model, _ = load(Path(path), layers, all_layers=all_layers)
    embedder = Embedder(model.to(device), 0, all_layers=all_layers, model_dtype=getattr(torch, dtype))
    return model, embedder.max_tokens, embedder.batch_size


def token_ids(path: str, texts: Sequence[str]) -> list[Any]:
    """The texts' token ids as the metric makes them (its tokenizer, its truncation)."""
    from bertscore_tm.models.tokenizing import TextEncoder

    ids, lengths = TextEncoder(Path(path), truncate=True).encode(texts)
    return list(ids.split(lengths.tolist()))


def window_ids(metric: Any, texts: Sequence[str]) -> list[Any]:
    """Every window of every distinct text, as a metric with `long_texts="window"` cuts them."""
    from bertscore_tm.models.windows import piece_ids, plan_pieces

    docs = [metric.token_ids(t) for t in dict.fromkeys(t.strip() for t in texts)]
    return [piece_ids(docs[p.text], p, metric.windows) for p in plan_pieces([len(d) for d in docs], metric.windows)]


def one_length_batches(lengths: Sequence[int], budget: int, batch_size: int | None = None) -> list[list[int]]:
    from bertscore_tm.embedding.batches import length_batches

    return list(length_batches(lengths, batch_size, budget))


def packs(lengths: Sequence[int], budget: int) -> list[list[int]]:
    from bertscore_tm.embedding.batches import packs as cut

    return list(cut(lengths, budget))


def packed_forward(model: Any, seqs: Sequence[Any], budget: int) -> Any:
    """One pack through the model as an accelerator runs it (no padding, each text attending within itself)."""
    from bertscore_tm.embedding.attention import packed_forward as forward
    from bertscore_tm.embedding.batches import SCORES_LENGTH

    return forward(model, seqs, budget * SCORES_LENGTH, [len(s) for s in seqs])


def eager_cpu_tokens() -> int:
    """The longest float32 batch (tokens a text) that runs the model's eager attention on a CPU."""
    from bertscore_tm.embedding.attention import EAGER_CPU_TOKENS

    return EAGER_CPU_TOKENS


def varlen_refused() -> str:
    from bertscore_tm.embedding.attention import VARLEN_REFUSED

    return VARLEN_REFUSED[0] if VARLEN_REFUSED else "no (or not tried)"


# ----------------------------------------------------------------------------------------- a metric's settings
def set_batching(metric: Any, batching: str | None) -> None:
    """Force "accelerator" batching (packs, padded buckets) or "one-length" batches; None: the device's default."""
    metric.embedder._batching = batching


def set_pack_budget(metric: Any, tokens: int | None) -> None:
    """The token budget of a forward batch or pack; None: the device's default."""
    metric.embedder.max_tokens = tokens


def pack_budget(metric: Any) -> int:
    return metric.embedder.max_tokens


def no_packing(metric: Any) -> None:
    """bfloat16 in batches of one length, as before packing."""
    metric.embedder._packs = False


def facts(metric: Any) -> dict:
    """How a metric's embedder runs: its budget, batching, packing, device and working budget."""
    e = metric.embedder
    return {
        "budget_tokens": e.max_tokens,
        "batching": "accelerator" if e.accelerated else "one-length",
        "packed": e.packing,
        "model_device": str(e.device),
        "block_mib": e.block_bytes / 2**20,
    }


def embed(metric: Any, ids: Sequence[Any]) -> tuple[Any, Any]:
    """The metric's embedder on token ids: (the table of their vectors, each text's first row)."""
    return metric.embedder.embed(list(ids))


def rows_embedded(metric: Any) -> int:
    """Texts (or windows) the metric's model has run so far."""
    return metric.embedder.rows_embedded


def encoder_blocks(metric: Any) -> Any:
    """The module holding the model's blocks (a pre-hook on it counts forward passes, packed or not), or None."""
    return getattr(metric.embedder.model, "encoder", None)


def state_bytes(metric: Any) -> int:
    """Bytes of a torchmetrics Metric's states (its registry of states, `_defaults`)."""
    import torch

    total = 0
    for name in metric._defaults:
        value = getattr(metric, name)
        for t in value if isinstance(value, list) else [value]:
            if isinstance(t, torch.Tensor):
                total += t.numel() * t.element_size()
    return total


def state_figures(metric: Any) -> dict:
    """After a compute(): tokens scored (candidates, references), the MiB of the per-token results kept and of
    the token ids and lengths."""
    size = lambda ts: sum(t.numel() * t.element_size() for t in ts) / 2**20  # noqa: E731
    return {
        "cand_tokens": int(sum(int(x.sum()) for x in metric.cand_lens)),
        "ref_tokens": int(sum(int(x.sum()) for x in metric.ref_lens)),
        "per_token_mib": size([*metric.cand_best, *metric.ref_best]),
        "state_mib": size([*metric.cand_ids, *metric.ref_ids, *metric.cand_lens, *metric.ref_lens]),
    }


def cache_figures(metric: Any) -> dict:
    """The embedding cache's texts, tokens and MiB."""
    cache = metric.embedding_cache
    return {
        "cache_texts": len(cache),
        "cache_tokens": sum(v.shape[0] for v in cache._entries.values()),
        "cache_mib": cache.nbytes / 2**20,
    }


def tokenizer_calls(metric: Any) -> tuple[Any, Any, Any]:
    """(the Rust tokenizer's batch encode or None, the encoder's own call, `encode_pairs`): what update() tokenises
    with."""
    encoder = metric.scorer.encoder
    rust = encoder.rust_tokenizer()
    fast = None if rust is None else getattr(rust, "encode_batch_fast", None) or rust.encode_batch
    return fast, encoder._ids, metric.scorer.encode_pairs


# ----------------------------------------------------------------------------------------- budgets for a while
@contextlib.contextmanager
def block_budget(mib: int | None) -> Iterator[None]:
    """compute()'s working budget per layer set to `mib` while entered (None: as shipped)."""
    from bertscore_tm.embedding.embedder import Embedder

    shipped = Embedder.block_bytes
    if mib is not None:
        Embedder.block_bytes = property(lambda self: (mib << 20) * min(self.num_rows, 8))  # type: ignore[assignment]
    try:
        yield
    finally:
        Embedder.block_bytes = shipped  # type: ignore[method-assign]


@contextlib.contextmanager
def gather_budget(elements: int | None) -> Iterator[None]:
    """Vector elements a matching batch may gather, while entered (None: the device's default)."""
    from bertscore_tm.scoring import matching

    shipped = matching.gather_elements
    if elements is not None:
        matching.gather_elements = lambda device: elements  # type: ignore[assignment]
    try:
        yield
    finally:
        matching.gather_elements = shipped


class Calls:
    calls = 0


@contextlib.contextmanager
def count_matchings() -> Iterator[Calls]:
    """Counts compute()'s matchings while entered."""
    from bertscore_tm.metric import bertscore

    real, counter = bertscore.match_pairs, Calls()

    def counted(*args: Any, **kwargs: Any) -> Any:
        counter.calls += 1
        return real(*args, **kwargs)

    bertscore.match_pairs = counted
    try:
        yield counter
    finally:
        bertscore.match_pairs = real


@contextlib.contextmanager
def stand_in_forward(tokens_per_s: float | None = None) -> Iterator[list[float]]:
    """The packed passes replaced by unit vectors at once (the host's work left), or after as long a sleep as a
    device of `tokens_per_s` would take (the host's view of a busy device); yields the sleeps."""
    import torch

    import bertscore_tm.embedding.embedder as embedder

    waits: list[float] = []

    def rows(model: Any, n: int) -> Any:
        if tokens_per_s:
            waits.append(n / tokens_per_s)
            time.sleep(waits[-1])
        width = model.config.hidden_size
        return torch.full((n, width), width**-0.5)

    def forward(model: Any, seqs: Any, score_budget: int, lengths: Any) -> tuple:
        starts = [0, *torch.tensor(lengths).cumsum(0).tolist()]
        return rows(model, starts[-1]), starts[:-1]

    real = embedder.packed_forward, embedder.packed_pass
    embedder.packed_forward = forward
    embedder.packed_pass = lambda model, ids, lengths, score_budget: rows(model, len(ids))
    try:
        yield waits
    finally:
        embedder.packed_forward, embedder.packed_pass = real


@contextlib.contextmanager
def counted_ops(width: int | None = None) -> Iterator[dict[str, int]]:
    """Counts the top-level torch ops dispatched while entered, in the packed passes and in the rest, with
    variable-length attention stood in for by one op a block (as CUDA's bfloat16 runs it) and, for `width`,
    matching batches holding as many pairs as at that model width."""
    import torch
    from torch.profiler import ProfilerActivity, profile, record_function

    import bertscore_tm.embedding.attention as attention
    import bertscore_tm.embedding.embedder as embedder
    from bertscore_tm.scoring import matching

    shipped = attention._varlen, embedder.packed_pass, matching.gather_elements
    real_pass = embedder.packed_pass

    def marked(*args: Any, **kwargs: Any) -> Any:
        with record_function("packed pass"):
            return real_pass(*args, **kwargs)

    attention._varlen = lambda query: lambda q, *args, **kwargs: torch.empty_like(q)  # type: ignore[assignment]
    embedder.packed_pass = marked
    counts = {"packed passes": 0, "the rest": 0}
    try:
        with contextlib.ExitStack() as stack:
            if width is not None:
                stack.enter_context(gather_budget((1 << 22) * width // 1024))
            prof = stack.enter_context(profile(activities=[ProfilerActivity.CPU]))
            yield counts
    finally:
        attention._varlen, embedder.packed_pass, matching.gather_elements = shipped
    for event in prof.events():
        parent = event.cpu_parent
        if not event.name.startswith("aten::") or (parent is not None and parent.name.startswith("aten::")):
            continue
        while parent is not None and parent.name != "packed pass":
            parent = parent.cpu_parent
        counts["the rest" if parent is None else "packed passes"] += 1


# ----------------------------------------------------------------------------------------- internal functions
def all_pairs(metric: Any, cands: list[str], refs: list[str]) -> dict:
    """`pairwise`'s engine on a metric's scorer: what it kept (store, texts, the other side's stream) and its tiles."""
    from bertscore_tm.engines.pairwise import all_pairs as engine

    _, info = engine(metric.scorer, cands, refs, metric.device)
    return info


def score_systems(metric: Any, systems: list[list[str]], refs: list[str]) -> Any:
    from bertscore_tm.comparison.systems import score_systems as scored

    return scored(metric, systems, refs)


def score_all_layers(rows: Any, model: str) -> Any:
    from bertscore_tm.tuning.layer_tuning import score_all_layers as scored

    return scored(rows, model)


def correlation() -> Any:
    """The tuning's correlation module (`grouped_correlation`, `GroupedBootstrap`, `METHODS`)."""
    from bertscore_tm.tuning import correlation as module

    return module


def shard_size() -> int:
    from bertscore_tm.settings.arguments import SHARD_SIZE

    return SHARD_SIZE


def cli(argv: list[str]) -> int:
    """The command line run in this process."""
    from bertscore_tm.cli import main

    return main(argv)


def read_lines(path: str) -> list[str]:
    """A text file's lines as the command line reads a whole file."""
    from bertscore_tm.cli import read_lines as read

    return read(path, "file")
