"""The Metric: BERTScore as a `torchmetrics.Metric` that streams, syncs across ranks and equals the reference.

`update()` only tokenises, keeping token ids ragged (no padding) plus IDF document counts as a summed state.
`compute()` embeds the pairs that no earlier `compute()`/`forward()` has scored (each rank its own share),
keeps per-token best similarities, all-reduces the IDF counts, weighs, takes the best reference per
candidate, rescales, and gathers only the per-pair P/R/F across ranks. States never travel between ranks.
"""

from __future__ import annotations

import functools
import os
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import Tensor
from torchmetrics import Metric
from torchmetrics.utilities.data import apply_to_collection, dim_zero_cat

from bertscore_tm.arguments import OUTPUTS, OutputName, Reduction, validate_arguments
from bertscore_tm.baselines import baseline_rows, find_baseline, read_baseline, rescale
from bertscore_tm.embedding import Embedder, TokenTexts
from bertscore_tm.embedding_cache import CachingEmbedder, EmbeddingCache
from bertscore_tm.hashcode import hash_code
from bertscore_tm.idf import document_frequency, idf_weights, plain_weights
from bertscore_tm.matching import best_of_references, greedy_match, ragged_arange, segment_sum, weighted_scores
from bertscore_tm.loading import load_encoder, resolve_model_path
from bertscore_tm.registry import default_model, default_num_layers, is_known_model
from bertscore_tm.tokenizing import TextEncoder, normalize_inputs

_ROBERTA_POSITIONS = {"roberta", "xlm-roberta", "xlm-roberta-xl", "camembert", "longformer", "data2vec-text"}


def _position_limit(config: Any) -> int | None:
    limit = getattr(config, "max_position_embeddings", None)
    if not isinstance(limit, int):
        return None
    if getattr(config, "model_type", "") in _ROBERTA_POSITIONS:
        limit -= (getattr(config, "pad_token_id", 1) or 1) + 1
    return limit


def _cat(items: list[Tensor] | Tensor, dtype: torch.dtype, device: torch.device) -> Tensor:
    if isinstance(items, Tensor):
        return items.to(device)
    if not items:
        return torch.zeros(0, dtype=dtype, device=device)
    return dim_zero_cat([x.to(device) for x in items])


def _interleave(old: Tensor, new: Tensor, is_new: Tensor, counts: Tensor) -> Tensor:
    """The per-pair concatenation in pair order, from the old pairs' part and the new pairs' part."""
    if bool(is_new.all()):
        return new
    starts = torch.cumsum(counts, 0) - counts
    out = torch.empty((int(counts.sum()), *new.shape[1:]), dtype=new.dtype, device=new.device)
    out[ragged_arange(starts[~is_new], counts[~is_new]).to(new.device)] = old.to(new.device)
    out[ragged_arange(starts[is_new], counts[is_new]).to(new.device)] = new
    return out


class BERTScore(Metric):
    """BERTScore (Zhang et al., 2019): precision, recall and F1 of greedy cosine matching of contextual
    token embeddings, equal to bert-score 0.3.13 to floating-point noise.

    Args:
        model_name_or_path: a local model directory, a name in the local Hugging Face cache, or
            ``"sentence-transformers/all-MiniLM-L6-v2"`` (the packaged MiniLM). Default: ``lang``'s model.
        num_layers: use the output of this layer (0 = embeddings). Default: the model's tuned layer.
        all_layers: score with every layer; outputs gain a leading ``L + 1`` dimension.
        lang: language code, for the default model and the packaged rescale baseline.
        idf: weigh tokens by inverse document frequency over all references (of every rank).
        rescale_with_baseline: rescale with the baseline of (``lang``, model) or ``baseline_path``.
        baseline_path: a ``LAYER,P,R,F`` baseline file of your own.
        batch_size: at most this many texts per forward pass; ``None`` (default) lets the token budget alone
            size the batches (2048 padded tokens on a CPU, 16384 on an accelerator).
        max_length: truncate texts to this many tokens (default: the model's own window).
        device: where the model runs and states live; ``None`` follows the metric (``.to(...)``).
        model_dtype: compute dtype of the embedding model. ``torch.float32`` is exact; ``torch.bfloat16``
            (the model's weights cast once) and ``torch.float16`` (under autocast) are faster on supporting
            hardware, with about 1e-3 error.
        reduction: ``"none"`` for per-pair scores, ``"mean"`` for their means.
        output: one of ``"precision"``, ``"recall"``, ``"f1"`` to return that tensor alone (so the metric
            object can be logged by Lightning); ``None`` returns the dict.
        return_hash: add the setting's hash code to the dict under ``"hash"``.
        verbose: show a progress bar while embedding.
        embedding_cache_mb: keep the vectors of texts already embedded, up to this many MiB (float32, on the
            metric's device; least recently used evicted first), so that a text scored again in a later
            ``compute()`` (the references of a validation set, every epoch) is never embedded again; scores are
            exactly those of an uncached metric. A token costs hidden size x 4 bytes x layers kept (1, or depth
            + 1 with ``all_layers``): 1.5 KiB for MiniLM, 4 KiB for roberta-large. ``0`` (default): off.
            Not state (never in ``state_dict()``, never synced); clones share it; ``clear_cache()`` empties it.
        kwargs: torchmetrics' own Metric arguments (``compute_on_cpu``, ``process_group``, ...).
    """

    is_differentiable = False
    higher_is_better = True
    full_state_update = False

    cand_ids: list[Tensor]
    cand_lens: list[Tensor]
    ref_ids: list[Tensor]
    ref_lens: list[Tensor]
    ref_counts: list[Tensor]
    scored: list[Tensor]
    cand_best: list[Tensor]
    ref_best: list[Tensor]
    indexes: list[Tensor]
    doc_freq: Tensor
    num_refs: Tensor

    def __init__(
        self,
        model_name_or_path: str | os.PathLike[str] | None = None,
        num_layers: int | None = None,
        all_layers: bool = False,
        lang: str | None = "en",
        idf: bool = False,
        rescale_with_baseline: bool = False,
        baseline_path: str | os.PathLike[str] | None = None,
        batch_size: int | None = None,
        max_length: int | None = None,
        device: torch.device | str | None = None,
        model_dtype: torch.dtype = torch.float32,
        reduction: Reduction = "none",
        output: OutputName | None = None,
        return_hash: bool = False,
        verbose: bool = False,
        embedding_cache_mb: int = 0,
        **kwargs: Any,
    ) -> None:
        validate_arguments(
            {
                "model_name_or_path": model_name_or_path, "num_layers": num_layers, "all_layers": all_layers,
                "lang": lang, "idf": idf, "rescale_with_baseline": rescale_with_baseline,
                "baseline_path": baseline_path, "batch_size": batch_size, "max_length": max_length,
                "device": device, "model_dtype": model_dtype, "reduction": reduction, "output": output,
                "return_hash": return_hash, "verbose": verbose,
                "embedding_cache_mb": embedding_cache_mb,
            }
        )
        super().__init__(**kwargs)
        if model_name_or_path is None:
            model_name_or_path = default_model(str(lang))
        self.model_name = str(model_name_or_path)
        if num_layers is None and (not all_layers or is_known_model(self.model_name)):
            num_layers = default_num_layers(self.model_name)
        self.all_layers = all_layers
        self.lang = lang
        self.idf = idf
        self.reduction = reduction
        self.output = output
        self.return_hash = return_hash
        self.verbose = verbose

        path = resolve_model_path(self.model_name)
        # with all_layers an untabled model needs no layer: its hash code then names the full depth
        model, self.model_depth = load_encoder(path, 0 if num_layers is None else int(num_layers), all_layers)
        self.num_layers = self.model_depth if num_layers is None else int(num_layers)
        self._encoder = TextEncoder(path, max_length, model_window=_position_limit(model.config))
        self._embedder = Embedder(model, self._encoder.pad_id, all_layers, model_dtype, batch_size)
        self._embedding_cache = EmbeddingCache(embedding_cache_mb << 20) if embedding_cache_mb else None
        self._vocab_size = max(self._encoder.vocab_size, int(getattr(model.config, "vocab_size", 0) or 0))

        self._baseline: Tensor | None = None
        if rescale_with_baseline:
            file = find_baseline(lang, self.model_name, baseline_path)
            self._baseline = baseline_rows(read_baseline(file), self.num_layers, all_layers, file)
            if all_layers and self._baseline.shape[0] != self.model_depth + 1:
                raise ValueError(
                    f"Baseline {file} has {self._baseline.shape[0]} rows; all_layers needs one per layer "
                    f"({self.model_depth + 1})"
                )
        self.hash_code = hash_code(
            self.model_name, self.num_layers, idf, rescale_with_baseline, custom_baseline=baseline_path is not None,
            fast_tokenizer=self._encoder.is_fast,
        )

        for name in ("cand_ids", "cand_lens", "ref_ids", "ref_lens", "ref_counts", "scored", "cand_best", "ref_best", "indexes"):
            self.add_state(name, default=[], dist_reduce_fx="cat")
        self.add_state("doc_freq", torch.zeros(self._vocab_size if idf else 0, dtype=torch.long), dist_reduce_fx="sum")
        self.add_state("num_refs", torch.zeros((), dtype=torch.long), dist_reduce_fx="sum")
        self._collective = False
        if device is not None:
            self.to(device)

    # -- device handling: the model follows the metric but is never part of its module tree or state_dict
    def _apply(self, fn: Callable, exclude_state: Sequence[str] = "") -> torch.nn.Module:
        this = super()._apply(fn, exclude_state)
        embedder = this.__dict__.get("_embedder")
        if embedder is not None and embedder.device != this.device:
            embedder.to(this.device)
        cache = this.__dict__.get("_embedding_cache")
        if cache is not None:
            cache.to(this.device)
        return this

    def _wrap_compute(self, compute: Callable) -> Callable:
        # torchmetrics squeezes one-element results to 0-d; per-pair outputs keep their [N] / [L + 1, N] shape
        wrapped = super()._wrap_compute(compute)

        @functools.wraps(compute)
        def keep_pair_axis(*args: Any, **kwargs: Any) -> Any:
            value = wrapped(*args, **kwargs)
            if self.reduction != "none":
                return value
            shape = (1, 1) if self.all_layers else (1,)
            return apply_to_collection(value, Tensor, lambda x: x.reshape(shape) if x.dim() == 0 else x)

        return keep_pair_axis

    @property
    def embedder(self) -> Embedder:
        """The frozen embedding model and its batching (outside the module tree)."""
        return self._embedder

    @property
    def embedding_cache(self) -> EmbeddingCache | None:
        """The embedding cache (``embedding_cache_mb``), or None when it is off."""
        return self._embedding_cache

    def clear_cache(self) -> None:
        """Empty the embedding cache (a no-op when it is off); the metric's state is untouched.

        >>> metric = BERTScore("sentence-transformers/all-MiniLM-L6-v2", embedding_cache_mb=16)
        >>> metric.update(["The cat sat on the mat."], ["A cat was sitting on the mat."])
        >>> _ = metric.compute()
        >>> len(metric.embedding_cache)   # the two texts
        2
        >>> metric.clear_cache()
        >>> len(metric.embedding_cache)
        0
        """
        if self._embedding_cache is not None:
            self._embedding_cache.clear()

    def _embedding_source(self) -> Embedder | CachingEmbedder:
        """What compute() embeds texts with: the embedder, through the cache where there is one."""
        if self._embedding_cache is None:
            return self._embedder
        return CachingEmbedder(self._embedder, self._embedding_cache)

    @property
    def baseline(self) -> Tensor | None:
        """The rescale baseline rows in use ([1, 3] for the layer, [L + 1, 3] with all_layers), or None."""
        return self._baseline

    def token_ids(self, text: str) -> Tensor:
        """The token ids this metric scores for `text`: stripped, with special tokens, truncated (int32)."""
        ids, _ = self._encoder.encode([text])
        return ids

    @property
    def tokenizer(self) -> Any:
        """The Hugging Face tokenizer, set up as the reference uses it."""
        return self._encoder.tokenizer

    def update(
        self,
        preds: str | Sequence[str],
        target: str | Sequence[str | Sequence[str]],
        indexes: Tensor | Sequence[int] | None = None,
    ) -> None:
        """Tokenise a batch of candidates and their references (one string, or a sequence per candidate).

        `indexes` (optional) are dataset indexes of the candidates: `compute()` then orders the pairs by
        index and keeps one pair per index, so the duplicates a distributed sampler pads in do not count.
        """
        cands, groups = normalize_inputs(preds, target)
        index_tensor = None
        if indexes is not None:
            index_tensor = torch.as_tensor(indexes).reshape(-1)
            if index_tensor.is_floating_point() or index_tensor.dtype == torch.bool:
                raise TypeError(f"indexes must be integers, got {index_tensor.dtype}")
            if len(index_tensor) != len(cands):
                raise ValueError(f"indexes has {len(index_tensor)} entries for {len(cands)} predictions")
        if not cands:
            return
        refs = [r for group in groups for r in group]
        c_ids, c_lens = self._encoder.encode(cands)
        r_ids, r_lens = self._encoder.encode(refs)
        device = self.device
        self.cand_ids.append(c_ids.to(device))
        self.cand_lens.append(c_lens.to(device))
        self.ref_ids.append(r_ids.to(device))
        self.ref_lens.append(r_lens.to(device))
        self.ref_counts.append(torch.tensor([len(g) for g in groups], dtype=torch.int32, device=device))
        self.scored.append(torch.zeros(len(cands), dtype=torch.bool, device=device))
        if index_tensor is not None:
            self.indexes.append(index_tensor.to(device=device, dtype=torch.long))
        if self.idf:
            self.doc_freq += document_frequency(r_ids, r_lens, self._vocab_size).to(self.doc_freq.device)
        self.num_refs += len(refs)

    # torchmetrics would gather every state onto every rank before compute(); we keep states local and
    # exchange only IDF counts and per-pair scores inside compute(), so sync() only notes whether to.
    def sync(
        self,
        dist_sync_fn: Callable | None = None,
        process_group: Any | None = None,
        should_sync: bool = True,
        distributed_available: Callable | None = None,
    ) -> None:
        """Record whether the next `compute()` runs across processes; no state is gathered."""
        available = distributed_available if distributed_available is not None else self.distributed_available_fn
        self._collective = bool(should_sync and callable(available) and available())
        self._collective_group = process_group if process_group is not None else self.process_group

    def compute(self) -> dict[str, Tensor | str] | Tensor:
        """Scores of every pair seen (by every rank), in input order (rank-major across ranks)."""
        collective, self._collective = self._collective, False
        self._score_pending()
        device = self.device
        num_local = sum(len(x) for x in self.scored)
        indexes = _cat(self.indexes, torch.long, device)
        offset = 0
        if collective:
            group = self._collective_group
            counts = torch.stack(_gather(torch.tensor([num_local, len(indexes)], device=device), group))
            indexes = torch.cat(_gather(indexes, group))
            offset = int(counts[: torch.distributed.get_rank(group), 0].sum())
            total = int(counts[:, 0].sum())
            has_indexes = bool((counts[:, 1] == counts[:, 0]).all())
            mixed = bool((counts[:, 1] > 0).any()) and not has_indexes
        else:
            total = num_local
            has_indexes = len(indexes) == num_local
            mixed = len(indexes) > 0 and not has_indexes
        if mixed:
            raise ValueError("indexes must be passed to every update() or to none of them")
        if total == 0:
            raise RuntimeError(
                "BERTScore.compute() has no pairs to score: call update(preds, target) with at least one pair first"
            )
        keep = dropped = None
        if has_indexes:
            # one pair per dataset index (the first in rank-major order), ordered by index; the repeats a
            # distributed sampler pads in are left out of the scores and of the IDF counts alike
            order = torch.argsort(indexes, stable=True)
            ordered = indexes[order]
            first = torch.ones_like(ordered, dtype=torch.bool)
            first[1:] = ordered[1:] != ordered[:-1]
            keep = order[first]
            repeated = torch.ones_like(indexes, dtype=torch.bool)
            repeated[keep] = False
            dropped = repeated[offset : offset + num_local]
        scores = self._local_scores(collective, dropped)
        if collective:
            scores = torch.cat(_gather(scores, self._collective_group))
        if keep is not None:
            scores = scores[keep]
        return self._format(scores)

    def _format(self, scores: Tensor) -> dict[str, Tensor | str] | Tensor:
        # scores: [pairs, rows, 3] -> per output [pairs] or [rows, pairs]
        per = scores.permute(2, 1, 0)  # [3, rows, pairs]
        if not self.all_layers:
            per = per[:, 0]
        if self.reduction == "mean":
            per = per.mean(dim=-1)
        result: dict[str, Tensor | str] = dict(zip(OUTPUTS, per.unbind(0)))
        if self.output is not None:
            return result[self.output]  # type: ignore[return-value]
        if self.return_hash:
            result["hash"] = self.hash_code
        return result

    def _score_pending(self) -> None:
        """Embed and match the pairs no earlier compute() scored; keep their per-token best similarities."""
        device = self.device
        self._embedder.to(device)
        scored = _cat(self.scored, torch.bool, device)
        if scored.numel() == 0 or bool(scored.all()):
            return
        # one tensor per state from now on (so the chunks are freed, not held twice); states stay where
        # they live (the CPU under compute_on_cpu), the bookkeeping below runs on the CPU
        home = self.cand_ids[0].device
        self.cand_ids, self.cand_lens = [_cat(self.cand_ids, torch.int32, home)], [_cat(self.cand_lens, torch.int32, home)]
        self.ref_ids, self.ref_lens = [_cat(self.ref_ids, torch.int32, home)], [_cat(self.ref_lens, torch.int32, home)]
        self.ref_counts = [_cat(self.ref_counts, torch.int32, home)]
        cpu = torch.device("cpu")
        c_ids, r_ids = self.cand_ids[0].to(cpu), self.ref_ids[0].to(cpu)
        c_lens, r_lens, ref_counts = self.cand_lens[0].to(cpu), self.ref_lens[0].to(cpu), self.ref_counts[0].to(cpu)
        is_new = ~scored.cpu()
        texts, match_cand, match_ref = _distinct_texts(c_ids, c_lens, r_ids, r_lens, ref_counts, is_new)
        progress = None
        if self.verbose:
            from tqdm.auto import tqdm

            progress = tqdm(total=len(texts), desc="BERTScore: embedding", unit="text")
        try:
            new_c, new_r = greedy_match(self._embedding_source(), texts, match_cand, match_ref, progress=progress)
        finally:
            if progress is not None:
                progress.close()
        del texts, match_cand, match_ref, c_ids, r_ids
        c_lens, r_lens, ref_counts = c_lens.long(), r_lens.long(), ref_counts.long()
        cand_counts = c_lens * ref_counts
        ref_counts_tok = segment_sum(r_lens, ref_counts)
        old_c = _cat(self.cand_best, torch.float32, device)
        old_r = _cat(self.ref_best, torch.float32, device)
        self.cand_best = [_interleave(old_c, new_c, is_new, cand_counts).to(home)]
        self.ref_best = [_interleave(old_r, new_r, is_new, ref_counts_tok).to(home)]
        self.scored = [torch.ones_like(scored).to(home)]

    def _local_scores(self, collective: bool, dropped: Tensor | None = None) -> Tensor:
        """This rank's per-candidate P, R, F: [pairs, rows, 3] after the multi-reference max and rescale.

        `dropped` marks local pairs whose index repeats an earlier pair's: their references leave the IDF counts.
        """
        device = self.device
        rows = self._embedder.num_rows
        c_ids, c_lens = _cat(self.cand_ids, torch.int32, device), _cat(self.cand_lens, torch.int32, device).long()
        r_ids, r_lens = _cat(self.ref_ids, torch.int32, device), _cat(self.ref_lens, torch.int32, device).long()
        ref_counts = _cat(self.ref_counts, torch.int32, device).long()
        if self.idf:
            doc_freq, num_refs = self.doc_freq.to(device, copy=True), self.num_refs.to(device, copy=True)
            if dropped is not None and bool(dropped.any()):
                ref_dropped = torch.repeat_interleave(dropped.to(device), ref_counts)
                tok_dropped = torch.repeat_interleave(ref_dropped, r_lens)
                doc_freq -= document_frequency(r_ids[tok_dropped], r_lens[ref_dropped], self._vocab_size)
                num_refs -= int(ref_dropped.sum())
            if collective:
                torch.distributed.all_reduce(doc_freq, group=self._collective_group)
                torch.distributed.all_reduce(num_refs, group=self._collective_group)
            weights = idf_weights(doc_freq, int(num_refs))
        else:
            weights = plain_weights(self._vocab_size, self._encoder.zero_weight_ids, device)
        if c_lens.numel() == 0:
            return torch.zeros((0, rows, 3), dtype=torch.float32, device=device)
        cand_best, ref_best = _cat(self.cand_best, torch.float32, device), _cat(self.ref_best, torch.float32, device)
        # pairs a chunk at a time, so that the per-token weights and float64 sums stay within the working budget
        c_start, r_start = torch.cumsum(c_lens, 0) - c_lens, torch.cumsum(r_lens, 0) - r_lens
        first_ref = torch.cumsum(ref_counts, 0) - ref_counts
        best_len = c_lens * ref_counts
        best_start = torch.cumsum(best_len, 0) - best_len
        ref_tokens = segment_sum(r_lens, ref_counts)
        pieces, undefined = [], 0
        for lo, hi in pair_chunks(best_len + ref_tokens, self._embedder.block_bytes // _BYTES_PER_SCORED_TOKEN):
            lens, counts = c_lens[lo:hi], ref_counts[lo:hi]
            refs = slice(int(first_ref[lo]), int(first_ref[hi - 1] + counts[-1]))
            c_tok = slice(int(c_start[lo]), int(c_start[hi - 1] + lens[-1]))
            r_tok = slice(int(r_start[refs.start]), int(r_start[refs.stop - 1] + r_lens[refs.stop - 1]))
            best = slice(int(best_start[lo]), int(best_start[hi - 1] + best_len[hi - 1]))
            owner = torch.repeat_interleave(torch.arange(hi - lo, device=device), counts)
            match_c_lens = lens[owner]
            local_start = torch.cumsum(lens, 0) - lens
            cand_tokens = c_ids[c_tok][ragged_arange(local_start[owner], match_c_lens)].long()
            blank = self._encoder.is_blank(match_c_lens) | self._encoder.is_blank(r_lens[refs])
            scores = weighted_scores(
                cand_best[best], weights[cand_tokens], match_c_lens,
                ref_best[r_tok], weights[r_ids[r_tok].long()], r_lens[refs],
                blank,
            )
            undefined += int((torch.isnan(scores[..., :2]).any(dim=(1, 2)) & ~blank).sum())
            pieces.append(best_of_references(scores, counts))
        if undefined:
            warnings.warn(
                f"{undefined} pair(s) have tokens whose weights sum to 0 (with IDF: tokens found in "
                "every reference); their precision or recall is NaN, as in the reference.",
                UserWarning,
                stacklevel=3,
            )
        scores = torch.cat(pieces)
        if self._baseline is not None:
            scores = rescale(scores, self._baseline)
        return scores


#: Working bytes per token of the weighing step (weights, float64 products and sums, index arithmetic):
#: pairs are weighed in chunks of the working budget over this.
_BYTES_PER_SCORED_TOKEN = 128


def pair_chunks(cost: Tensor, budget: int) -> list[tuple[int, int]]:
    """Consecutive ranges of items whose `cost` sums to at most `budget` (an item alone may exceed it).

    >>> pair_chunks(torch.tensor([3, 3, 3, 9, 1]), budget=6)
    [(0, 2), (2, 3), (3, 4), (4, 5)]
    """
    ends = torch.cumsum(cost.long(), 0)
    chunks, lo, n = [], 0, len(cost)
    while lo < n:
        before = int(ends[lo - 1]) if lo else 0
        hi = max(lo + 1, int(torch.searchsorted(ends, before + budget, right=True)))
        chunks.append((lo, min(hi, n)))
        lo = hi
    return chunks


def _distinct_texts(
    c_ids: Tensor, c_lens: Tensor, r_ids: Tensor, r_lens: Tensor, ref_counts: Tensor, is_new: Tensor
) -> tuple[TokenTexts, Tensor, Tensor]:
    """The distinct token sequences of the new pairs (held by reference into the id states, numbered in order
    of first appearance: a pair's candidate, its references, the next pair's candidate...) and, for each
    (candidate, reference) match of those pairs in order, the index of its candidate and reference text.

    Tensor operations only (no Python object per text or per pair), so a corpus of millions of pairs costs
    a few integers a text here."""
    c_lens, r_lens, ref_counts = c_lens.long(), r_lens.long(), ref_counts.long()
    c_start = torch.cumsum(c_lens, 0) - c_lens
    r_start = torch.cumsum(r_lens, 0) - r_lens
    new_pairs = torch.nonzero(is_new).flatten()
    new_refs = torch.nonzero(torch.repeat_interleave(is_new, ref_counts)).flatten()
    counts = ref_counts[new_pairs]
    # every occurrence of a text, in the order a pair-by-pair walk meets them: candidate, then its references
    cand_at = torch.cumsum(counts + 1, 0) - (counts + 1)
    is_cand = torch.zeros(len(new_pairs) + len(new_refs), dtype=torch.bool)
    is_cand[cand_at] = True
    which = (~is_cand).to(torch.uint8)
    start = torch.empty(len(is_cand), dtype=torch.long)
    length = torch.empty(len(is_cand), dtype=torch.long)
    start[is_cand], length[is_cand] = c_start[new_pairs], c_lens[new_pairs]
    start[~is_cand], length[~is_cand] = r_start[new_refs], r_lens[new_refs]
    text_of, first = _first_seen_ids((c_ids, r_ids), which, start, length)
    texts = TokenTexts(
        sources=(c_ids, r_ids), which=which[first], start=start[first], length=length[first].to(torch.int32)
    )
    match_cand = torch.repeat_interleave(text_of[is_cand], counts)
    return texts, match_cand.to(torch.int32), text_of[~is_cand].to(torch.int32)


def _first_seen_ids(
    sources: tuple[Tensor, ...], which: Tensor, start: Tensor, length: Tensor
) -> tuple[Tensor, Tensor]:
    """For occurrences of token sequences (``sources[which][start : start + length]``): each one's text index,
    texts numbered by first occurrence, and each text's first occurrence. Equal sequences are found exactly
    (rows of one length compared by `torch.unique`), never by hashing."""
    n = len(length)
    group = torch.empty(n, dtype=torch.long)  # equal sequences share a group, numbered length by length
    groups = 0
    for size in torch.unique(length).tolist():
        members = torch.nonzero(length == size).flatten()
        if size == 0:
            inverse = torch.zeros(len(members), dtype=torch.long)
        else:
            rows = torch.empty((len(members), size), dtype=sources[0].dtype)
            for source, flat in enumerate(sources):
                mine = which[members] == source
                if bool(mine.any()):
                    offsets = start[members[mine]][:, None] + torch.arange(size)
                    rows[mine] = flat[offsets]
            _, inverse = torch.unique(rows, dim=0, return_inverse=True)
        group[members] = inverse + groups
        groups += int(inverse.max()) + 1
    first = torch.full((groups,), n, dtype=torch.long)
    first.scatter_reduce_(0, group, torch.arange(n), reduce="amin")
    order = torch.argsort(first)  # texts by first occurrence
    rank = torch.empty_like(order)
    rank[order] = torch.arange(groups)
    return rank[group], first[order]


def _gather(tensor: Tensor, group: Any) -> list[Tensor]:
    from torchmetrics.utilities.distributed import gather_all_tensors

    return gather_all_tensors(tensor.contiguous(), group=group)
