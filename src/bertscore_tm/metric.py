"""The Metric: BERTScore as a `torchmetrics.Metric` that streams, syncs across ranks and equals the reference.

`update()` only tokenises, keeping token ids ragged (no padding) plus IDF document counts as a summed state.
`compute()` embeds the pairs that no earlier `compute()`/`forward()` has scored (each rank its own share),
keeps per-token best similarities, all-reduces the IDF counts, weighs, takes the best reference per
candidate, rescales, and gathers only the per-pair P/R/F across ranks. States never travel between ranks.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

import torch
from torch import Tensor
from torchmetrics import Metric
from torchmetrics.utilities.data import apply_to_collection, dim_zero_cat

from bertscore_tm.arguments import OUTPUTS, LongTexts, OutputName, Reduction, validate_arguments
from bertscore_tm.baselines import baseline_rows, find_baseline, read_baseline, rescale
from bertscore_tm.distributed import check_same_settings, gather, settings_digest
from bertscore_tm.embedding import Embedder, TokenTexts, own_precision
from bertscore_tm.embedding_cache import CachingEmbedder, EmbeddingCache
from bertscore_tm.errors import ArgumentValueError, SettingsMismatchError, warn_user
from bertscore_tm.hashcode import HashSignature
from bertscore_tm.idf import (
    corpus_weights,
    document_frequency,
    idf_weights,
    mapping_weights,
    plain_weights,
    table_digest,
    unknown_ids,
    without_documents,
)
from bertscore_tm.indexes import conflicting_indexes, deduplicate
from bertscore_tm.loading import embedding_rows, load_encoder, resolve_model_path
from bertscore_tm.matching import best_of_references, greedy_match, ragged_arange, segment_sum, weighted_scores
from bertscore_tm.registry import default_model, default_num_layers, is_known_model
from bertscore_tm.results import Scores
from bertscore_tm.tokenizing import TextEncoder, check_vocabulary, normalize_inputs
from bertscore_tm.user_model import ForwardFn, hash_model_name, known_model_name, prepare_user_model
from bertscore_tm.windows import WindowRule, window_label, window_rule

_ROBERTA_POSITIONS = {"roberta", "xlm-roberta", "xlm-roberta-xl", "camembert", "longformer", "data2vec-text"}


def _position_limit(config: Any) -> int | None:
    limit = getattr(config, "max_position_embeddings", None)
    if not isinstance(limit, int):
        return None
    relative_only = not getattr(config, "position_biased_input", True)
    if getattr(config, "model_type", "") in ("deberta", "deberta-v2") and relative_only:
        return None  # relative positions only (DeBERTa-v3 and most DeBERTa): no position table limits the length
    if getattr(config, "model_type", "") in _ROBERTA_POSITIONS:
        limit -= (getattr(config, "pad_token_id", 1) or 1) + 1
    return limit


def _model_config(path: Any) -> Any:
    """The model's config alone (no weights), for its position limit."""
    from transformers import AutoConfig

    return AutoConfig.from_pretrained(str(path), local_files_only=True)


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


#: The `settings()` that act only on kept best similarities, at compute(): a state loaded from a metric that
#: differs in these alone keeps its similarities (`BERTScore._setting_digests`).
_APPLIED_AT_COMPUTE = frozenset({"idf", "idf_digest", "rescaled", "custom_baseline", "baseline"})


class BERTScore(Metric):
    """BERTScore (Zhang et al., 2019): precision, recall and F1 of greedy cosine matching of contextual
    token embeddings, equal to bert-score 0.3.13 to floating-point noise.

    Args:
        model_name_or_path: a local model directory, a name in the local Hugging Face cache, or
            ``"sentence-transformers/all-MiniLM-L6-v2"`` (the packaged MiniLM). Default: ``lang``'s model.
        num_layers: use the output of this layer (0 = embeddings). Default: the model's tuned layer.
        all_layers: score with every layer; outputs gain a leading ``L + 1`` dimension.
        lang: language code, for the default model and the packaged rescale baseline.
        idf: weigh tokens by inverse document frequency over all references (of every rank), or over
            ``idf_texts``, or with ``idf_weights``.
        idf_texts: with ``idf=True``, count document frequencies in these texts (a corpus of your own, counted
            once when the metric is built, as bert-score's ``idf_sents``) instead of in the references.
        idf_weights: with ``idf=True``, a mapping token id -> weight made beforehand (``metric.idf_weights()``
            of another metric, or bert-score's ``idf_dict``). Ids it lacks take its default if it is a
            ``defaultdict`` (bert-score's is), else a text holding one is refused by ``update()``.
        rescale_with_baseline: rescale with the baseline of (``lang``, model) or ``baseline_path``.
        baseline_path: a ``LAYER,P,R,F`` baseline file of your own (with ``rescale_with_baseline=True``).
        batch_size: at most this many texts per forward pass; ``None`` (default) lets the token budget alone
            size the batches (2048 padded tokens on a CPU, 16384 on an accelerator).
        max_length: the window, in tokens with the special ones (default: the model's own): longer texts are
            truncated to it, or embedded in windows of it with ``long_texts="window"``.
        long_texts: ``"truncate"`` (default: the reference's semantics) or ``"window"``: a text longer than
            the window is embedded in overlapping windows and scored whole (README: Long texts).
        window_stride: tokens between the starts of consecutive windows, 1 to the window's size less one
            (default: half the window); window mode only.
        device: where the model runs and states live; ``None`` follows the metric (``.to(...)``).
        model_dtype: compute dtype of the embedding model. ``torch.float32`` is exact; ``torch.bfloat16``
            (a loaded model's weights cast once; a ``model`` object of yours runs under autocast, never cast)
            and ``torch.float16`` (under autocast) are faster on supporting hardware, with about 1e-3 error.
            In bfloat16 on a CPU a loaded model of a family in ``configs/packing.json`` runs packed (many
            lengths in one stream; the same vectors as batches of one length, bit for bit).
        reduction: ``"none"`` for per-pair scores, ``"mean"`` for their means.
        output: one of ``"precision"``, ``"recall"``, ``"f1"`` to return that tensor alone (so the metric
            object can be logged by Lightning); ``None`` returns the dict.
        return_hash: add the setting's hash code to the dict under ``"hash"``.
        verbose: show a progress bar while embedding.
        embedding_cache_mb: keep the vectors of texts already embedded, up to this many MiB (float32, on the
            model's device; least recently used evicted first), so that a text scored again in a later
            ``compute()`` (the references of a validation set, every epoch) is never embedded again; scores are
            exactly those of an uncached metric. A token costs hidden size x 4 bytes x layers kept (1, or depth
            + 1 with ``all_layers``): 1.5 KiB for MiniLM, 4 KiB for roberta-large. ``0`` (default): off.
            Not state (never in ``state_dict()``, never synced); clones share it; ``clear_cache()`` empties it.
        compile_model: run the forward pass of a model this metric loads through ``torch.compile`` (dynamic
            shapes, frozen weights). Opt-in and inexact (its fused kernels round differently: about 1e-6 in F1
            in float32); the first compute() waits for the compilation (tens of seconds on a CPU), after which
            the forward pass is a little faster. It runs in batches of one length, never packed or prepacked, so
            in bfloat16 on a CPU (where a loaded model runs prepacked, and a BERT or RoBERTa packed, otherwise)
            it is slower than without it (benchmarks/RESULTS.md). A ``model`` object of yours is never compiled here
            (``ArgumentValueError``): compile it yourself before passing it.
        model: a model object of your own (any Hugging Face encoder; an encoder-decoder's encoder is used) in
            place of ``model_name_or_path``: scored through an eval-mode view that shares its weights, so it is
            never modified, cast, frozen or moved (unless the metric is moved: then it moves with it).
            ``num_layers`` is needed unless its config names a model of ``configs/models.json``.
        tokenizer: the tokenizer object of ``model`` (required with it).
        forward_fn: ``forward_fn(model, input_ids, attention_mask) -> Tensor`` returning [B, T, D] (or
            [B, T, L + 1, D] with ``all_layers``), for a ``model`` whose forward is not the standard one.
        kwargs: torchmetrics' own Metric arguments (``compute_on_cpu``, ``process_group``, ...).

    Every argument is checked before the model is loaded (`arguments.py`): a wrong type is a TypeError, a value
    out of range a ValueError, each naming the argument. `compute_scores()` gives the per-pair result typed.

    Example (the packaged MiniLM; a candidate with several references takes the best of each score):

    >>> from bertscore_tm import PACKAGED_MINILM, BERTScore
    >>> metric = BERTScore(PACKAGED_MINILM)
    >>> metric.update(["The cat sat on the mat."], ["A cat was sitting on the mat."])
    >>> metric.update(["It rained all day."], [["It was raining.", "Rain fell all day long."]])
    >>> scores = metric.compute()
    >>> {name: [round(float(x), 4) for x in value] for name, value in scores.items()}
    {'precision': [0.9316, 0.887], 'recall': [0.9053, 0.8059], 'f1': [0.9183, 0.8408]}
    >>> metric.hash_code.split("_version")[0]
    'sentence-transformers/all-MiniLM-L6-v2_L5_no-idf'
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
    state_setting: Tensor

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
        long_texts: LongTexts = "truncate",
        window_stride: int | None = None,
        device: torch.device | str | None = None,
        model_dtype: torch.dtype = torch.float32,
        reduction: Reduction = "none",
        output: OutputName | None = None,
        return_hash: bool = False,
        verbose: bool = False,
        embedding_cache_mb: int = 0,
        compile_model: bool = False,
        *,
        model: torch.nn.Module | None = None,
        tokenizer: Any = None,
        forward_fn: ForwardFn | None = None,
        idf_texts: Sequence[str] | None = None,
        idf_weights: Mapping[int, float] | None = None,
        **kwargs: Any,
    ) -> None:
        validate_arguments(
            {
                "model_name_or_path": model_name_or_path,
                "num_layers": num_layers,
                "all_layers": all_layers,
                "lang": lang,
                "idf": idf,
                "rescale_with_baseline": rescale_with_baseline,
                "baseline_path": baseline_path,
                "batch_size": batch_size,
                "max_length": max_length,
                "device": device,
                "model_dtype": model_dtype,
                "reduction": reduction,
                "output": output,
                "return_hash": return_hash,
                "verbose": verbose,
                "model": model,
                "tokenizer": tokenizer,
                "forward_fn": forward_fn,
                "idf_texts": idf_texts,
                "idf_weights": idf_weights,
                "long_texts": long_texts,
                "window_stride": window_stride,
                "embedding_cache_mb": embedding_cache_mb,
                "compile_model": compile_model,
            }
        )
        super().__init__(**kwargs)
        self.all_layers = all_layers
        self.lang = lang
        self.idf = idf
        self.reduction = reduction
        self.output = output
        self.return_hash = return_hash
        self.verbose = verbose

        #: Whether the model is the user's object (then compute() runs it where it is and never moves it).
        self.user_supplied = model is not None
        #: How texts longer than the model's window are scored: "truncate" (the reference's way) or "window".
        self.long_texts = long_texts
        truncate = long_texts == "truncate"
        config: Any
        if model is None:
            if model_name_or_path is None:
                model_name_or_path = default_model(str(lang))
            self.model_name = str(model_name_or_path)
            path = resolve_model_path(self.model_name)  # a model not on this machine is the first thing to say
            if num_layers is None and (not all_layers or is_known_model(self.model_name)):
                num_layers = default_num_layers(self.model_name)
            # the tokenizer first: the window setting is checked against it before the model loads
            config = _model_config(path)
            self._encoder = TextEncoder(path, max_length, model_window=_position_limit(config), truncate=truncate)
            self._windows = window_rule(long_texts, window_stride, self._encoder)
            # with all_layers an untabled model needs no layer: its hash code then names the full depth
            encoder, self.model_depth = load_encoder(path, 0 if num_layers is None else int(num_layers), all_layers)
            check_vocabulary(self._encoder.tokenizer, embedding_rows(encoder), path)
            self._embedder = Embedder(
                encoder,
                self._encoder.pad_id,
                all_layers,
                model_dtype,
                batch_size,
                windows=self._windows,
                compile_model=compile_model,
            )
        else:
            known = known_model_name(model)
            self.model_name = hash_model_name(model, forward_fn)
            if num_layers is None and (not all_layers or known is not None):
                num_layers = _object_default_layer(model, known)
            runner, self.model_depth = prepare_user_model(model, tokenizer, num_layers, all_layers, forward_fn)
            config = getattr(runner.view, "config", None)
            self._encoder = TextEncoder(tokenizer, max_length, model_window=_position_limit(config), truncate=truncate)
            self._windows = window_rule(long_texts, window_stride, self._encoder)
            self._embedder = Embedder(
                runner,
                self._encoder.pad_id,
                all_layers,
                model_dtype,
                batch_size,
                hidden_size=runner.hidden_size,
                depth=self.model_depth,
                windows=self._windows,
            )
        self.num_layers = self.model_depth if num_layers is None else int(num_layers)
        #: The embedding cache (not state): None when embedding_cache_mb is 0.
        self._embedding_cache = EmbeddingCache(embedding_cache_mb << 20) if embedding_cache_mb else None
        self._vocab_size = max(self._encoder.vocab_size, int(getattr(config, "vocab_size", 0) or 0))
        # fixed IDF weights (idf_texts, idf_weights): the same table on every rank, never summed across ranks
        self._fixed_idf: Tensor | None = None
        if idf_texts is not None:
            with warnings.catch_warnings():  # blank or long corpus texts count as the reference counts them
                warnings.simplefilter("ignore")
                self._fixed_idf = corpus_weights(self._encoder.encode, idf_texts, self._vocab_size)
        elif idf_weights is not None:
            self._fixed_idf = mapping_weights(idf_weights, self._vocab_size)

        self._baseline: Tensor | None = None
        if rescale_with_baseline:
            file = find_baseline(lang, self.model_name, baseline_path)
            self._baseline = baseline_rows(read_baseline(file), self.num_layers, all_layers, file, self.model_depth)
        #: Every setting that changes scores; its format() is the hash code (hashcode.py).
        self.signature = HashSignature(
            self.model_name,
            self.num_layers,
            idf,
            rescaled=rescale_with_baseline,
            custom_baseline=baseline_path is not None,
            fast_tokenizer=self._encoder.is_fast,
            all_layers=all_layers,
            max_length=self._encoder.max_length if self._encoder.truncates_below_window else None,
            model_dtype=None if model_dtype == torch.float32 else str(model_dtype).removeprefix("torch."),
            idf_digest=None if self._fixed_idf is None else table_digest(self._fixed_idf),
            window=window_label(long_texts, self._windows),
        )

        for name in (
            "cand_ids",
            "cand_lens",
            "ref_ids",
            "ref_lens",
            "ref_counts",
            "scored",
            "cand_best",
            "ref_best",
            "indexes",
        ):
            self.add_state(name, default=[], dist_reduce_fx="cat")
        counted = self._vocab_size if idf and self._fixed_idf is None else 0
        self.add_state("doc_freq", torch.zeros(counted, dtype=torch.long), dist_reduce_fx="sum")
        self.add_state("num_refs", torch.zeros((), dtype=torch.long), dist_reduce_fx="sum")
        # which tokenisation made the token ids and which embedding the best similarities (two digests): a
        # state loaded from another setting is rescored or refused (_load_from_state_dict). A constant of the
        # setting ("max" keeps it through forward()'s state merge); never exchanged between ranks
        self.add_state("state_setting", self._setting_digests(), dist_reduce_fx="max")
        self._collective = False
        if device is not None:
            self.to(device)

    # -- device handling: the model follows the metric but is never part of its module tree or state_dict.
    # States follow the device but never a dtype (`.half()`, `.to(torch.float16)`, `set_dtype()`...): they are
    # token ids, lengths, counts and exact float32 similarities, and casting them would corrupt or round them.
    def _apply(self, fn: Callable, exclude_state: Sequence[str] = "") -> torch.nn.Module:
        def device_only(t: Tensor) -> Tensor:
            moved = fn(t)
            return moved if moved.dtype == t.dtype else t.to(moved.device)

        before = self.device
        this = super()._apply(device_only, exclude_state)
        embedder = this.__dict__.get("_embedder")
        # a dtype-only call (`set_dtype`, `.to(torch.float64)`) moves no model object of yours that lives elsewhere
        moved = this.device != before
        if embedder is not None and embedder.device != this.device and (moved or not self.user_supplied):
            embedder.to(this.device)
        cache = this.__dict__.get("_embedding_cache")
        if cache is not None and embedder is not None:
            cache.to(embedder.device)  # where the vectors are made (a user's model moves with the metric)
        return this

    def _wrap_compute(self, compute: Callable) -> Callable:
        # torchmetrics squeezes one-element results to 0-d; per-pair outputs keep their [N] / [L + 1, N] shape
        wrapped = super()._wrap_compute(compute)

        @functools.wraps(compute)
        def keep_pair_axis(*args: Any, **kwargs: Any) -> Any:
            with warnings.catch_warnings():
                # a rank without pairs is fine under DDP; with no pairs anywhere compute() raises, saying so
                warnings.filterwarnings("ignore", message=r".*was called before the ``update`` method")
                value = wrapped(*args, **kwargs)
            if self.reduction != "none":
                return value
            shape = (1, 1) if self.all_layers else (1,)
            return apply_to_collection(value, Tensor, lambda x: x.reshape(shape) if x.dim() == 0 else x)

        return keep_pair_axis

    def settings(self) -> dict[str, object]:
        """Everything ranks must share to combine their scores: the hash signature's fields, the rescale
        baseline's values (a file's contents, a language's table) and the vocabulary the IDF counts span."""
        return {
            **dataclasses.asdict(self.signature),
            "baseline": None if self._baseline is None else self._baseline.tolist(),
            "vocab_size": self._vocab_size,
            "model_depth": self.model_depth,
            "compile_model": self._embedder.compile_model,
        }

    def _setting_digests(self) -> Tensor:
        """Two digests (int64 [2]): of what makes the token ids (the tokenizer, and max_length where texts are
        truncated), and of what makes a text's vectors and so the per-token best similarities: `settings()`
        less what acts only on the kept similarities at compute() (IDF, rescaling)."""
        tokenizer = self._encoder.tokenizer
        size = self._encoder.vocab_size
        tokens = {
            "tokenizer": type(tokenizer).__name__,
            "vocab_size": size,
            "sample": tokenizer.convert_ids_to_tokens(list(range(0, size, max(1, size // 64)))),
            "special": (tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.pad_token_id),
            "truncate_at": self._encoder.max_length if self._encoder.truncate else None,
        }
        embedding = {k: v for k, v in self.settings().items() if k not in _APPLIED_AT_COMPUTE}
        return torch.tensor([settings_digest(tokens), settings_digest(embedding)], dtype=torch.long)

    def _load_from_state_dict(
        self,
        state_dict: dict,
        prefix: str,
        local_metadata: dict,
        strict: bool,
        missing_keys: list[str],
        unexpected_keys: list[str],
        error_msgs: list[str],
    ) -> None:
        """Load a state, made fit for this metric's own setting: pairs whose token ids another tokenisation
        made are refused (before any state changes); best similarities another embedding setting kept are
        dropped, so compute() embeds those pairs again; IDF counts are counted again from the references where
        the state has none (a metric without IDF saved it). A state without `state_setting` (saved before it
        existed) is taken as of this setting."""
        own = self._setting_digests()
        own_tokens, own_embedding = own.tolist()
        saved = state_dict.get(prefix + "state_setting")
        saved_tokens, saved_embedding = own.tolist() if saved is None else torch.as_tensor(saved).tolist()
        scored = state_dict.get(prefix + "scored", [])
        pairs = sum(len(x) for x in scored) if isinstance(scored, list) else len(scored)
        if pairs and saved_tokens != own_tokens:
            raise SettingsMismatchError(
                f"This state holds {pairs} pair(s) whose texts were tokenised differently from this metric's "
                "setting (another tokenizer, max_length or long_texts), so its token ids cannot be scored here. "
                "Load it into a metric built with the same model, max_length and long_texts as the one that "
                "saved it.",
                setting="tokenisation",
                values=[saved_tokens, own_tokens],
            )
        counts = state_dict.get(prefix + "doc_freq")
        spans = None if counts is None else torch.as_tensor(counts).numel()
        if spans not in (None, 0, self._vocab_size):
            raise SettingsMismatchError(
                f"This state's IDF counts span {spans} token ids, this metric's vocabulary {self._vocab_size}: it "
                "was saved by a metric with another tokenizer. Load it into a metric built with the same model as "
                "the one that saved it.",
                setting="vocab_size",
                values=[spans, self._vocab_size],
            )
        super()._load_from_state_dict(
            state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
        )
        home = self.cand_ids[0].device if self.cand_ids else self.device
        if pairs and saved_embedding != own_embedding:  # results of another embedding: score the pairs again
            self.cand_best, self.ref_best = [], []
            self.scored = [torch.zeros(sum(len(x) for x in self.scored), dtype=torch.bool, device=home)]
        counting = self.idf and self._fixed_idf is None
        if counting and self.doc_freq.numel() == 0:  # saved without IDF counts: they are the references'
            self.doc_freq = document_frequency(
                _cat(self.ref_ids, torch.int32, home), _cat(self.ref_lens, torch.int32, home), self._vocab_size
            )
        elif not counting and self.doc_freq.numel():  # counts this metric never uses
            self.doc_freq = torch.zeros(0, dtype=torch.long, device=self.doc_freq.device)
        self.state_setting = own.to(self.state_setting.device)

    @property
    def hash_code(self) -> str:
        """The setting's hash code, in the reference's format where our scores equal the reference's."""
        return self.signature.format()

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

        >>> from bertscore_tm import PACKAGED_MINILM
        >>> metric = BERTScore(PACKAGED_MINILM, embedding_cache_mb=16)
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

    def _cache_setting(self) -> tuple[object, ...]:
        """What the cache is keyed on besides a text's token ids: everything that changes its vectors (the
        embedder adds its model object, device, dtype, layers kept and window rule)."""
        return (
            self.model_name,
            self.num_layers,
            self.all_layers,
            self.long_texts,
            self._windows,
            self._encoder.max_length,
        )

    def _embedding_source(self) -> Embedder:
        """What compute() embeds texts with: the embedder, through the cache where there is one (a
        `CachingEmbedder`, which has the embedder's interface)."""
        if self._embedding_cache is None:
            return self._embedder
        return cast(Embedder, CachingEmbedder(self._embedder, self._embedding_cache, self._cache_setting()))

    @property
    def windows(self) -> WindowRule | None:
        """The long-text window rule in use, or None (truncation, or a model without a window)."""
        return self._windows

    @property
    def baseline(self) -> Tensor | None:
        """The rescale baseline rows in use ([1, 3] for the layer, [L + 1, 3] with all_layers), or None."""
        return self._baseline

    def token_ids(self, text: str) -> Tensor:
        """The token ids this metric scores for `text`: stripped, with special tokens, truncated to the window
        unless long_texts="window" (int32)."""
        ids, _ = self._encoder.encode([text])
        return ids

    @property
    def tokenizer(self) -> Any:
        """The Hugging Face tokenizer, set up as the reference uses it."""
        return self._encoder.tokenizer

    def idf_weights(self) -> dict[int, float]:
        """The IDF weight of every token id, as a dict to save (json, torch.save) and pass as ``idf_weights=``
        of another metric with the same tokenizer: it then scores exactly as this one.

        The weights of ``idf_texts`` or ``idf_weights`` (ids of unknown weight left out), else those of the
        references this process's ``update()`` calls have seen so far (under DDP, compute() sums every rank's
        counts first; these are this rank's alone).
        """
        if not self.idf:
            raise RuntimeError("idf_weights(): this metric has idf=False, so it weighs no token by IDF")
        if self._fixed_idf is not None:
            table = self._fixed_idf
        elif int(self.num_refs) == 0:
            raise RuntimeError("idf_weights(): no reference seen yet (the weights come from the references' counts)")
        else:
            table = idf_weights(self.doc_freq.cpu(), int(self.num_refs))
        return {i: w for i, w in enumerate(table.tolist()) if w == w}  # NaN: unknown

    def update(
        self,
        preds: str | Sequence[str],
        target: str | Sequence[str | Sequence[str]],
        indexes: Tensor | Sequence[int] | None = None,
    ) -> None:
        """Tokenise a batch of candidates and their references (one string, or a sequence per candidate).

        `indexes` (optional) are dataset indexes of the candidates: `compute()` then orders the pairs by
        index and keeps one pair per index, so the duplicates a distributed sampler pads in do not count; an
        index repeated with another pair (another candidate or reference) is a mistake it warns about.
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
        c_ids, c_lens, r_ids, r_lens = self._encoder.encode_pairs(cands, refs)  # one warning per kind
        if self._fixed_idf is not None:
            self._check_known_weights(torch.cat([c_ids, r_ids]))
        device = self.device
        self.cand_ids.append(c_ids.to(device))
        self.cand_lens.append(c_lens.to(device))
        self.ref_ids.append(r_ids.to(device))
        self.ref_lens.append(r_lens.to(device))
        self.ref_counts.append(torch.tensor([len(g) for g in groups], dtype=torch.int32, device=device))
        self.scored.append(torch.zeros(len(cands), dtype=torch.bool, device=device))
        if index_tensor is not None:
            self.indexes.append(index_tensor.to(device=device, dtype=torch.long))
        if self.idf and self._fixed_idf is None:
            self.doc_freq += document_frequency(r_ids, r_lens, self._vocab_size).to(self.doc_freq.device)
        self.num_refs += len(refs)

    def _check_known_weights(self, ids: Tensor) -> None:
        """Refuse texts holding a token that idf_weights gave no weight (before any state changes)."""
        assert self._fixed_idf is not None
        unknown = unknown_ids(self._fixed_idf, ids)
        if unknown:
            shown = ", ".join(f"{i} {self._encoder.tokenizer.convert_ids_to_tokens(i)!r}" for i in unknown[:5])
            raise ArgumentValueError(
                f"idf_weights has no weight for {len(unknown)} token id(s) of these texts: {shown}"
                f"{', ...' if len(unknown) > 5 else ''}. Pass a weight for every token id (metric.idf_weights() "
                "gives them all), or a defaultdict whose default weighs the tokens it lacks (bert-score's "
                "get_idf_dict returns one).",
                argument="idf_weights",
                allowed="a weight for every token id of the texts scored",
                value=unknown[:5],
            )

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
        """Scores of every pair seen (by every rank), in input order (rank-major across ranks): a dict of
        ``precision``, ``recall``, ``f1`` (and ``hash`` with `return_hash`), or one of them with `output`;
        per pair, or their means with ``reduction="mean"``."""
        return self._format(self._compute_scores())

    def compute_scores(self) -> Scores:
        """The per-pair scores of every pair seen, as a typed :class:`Scores`, whatever `reduction` and
        `output` are: what `compute()` reduces and formats. Collective like `compute()` under DDP.

        >>> metric = BERTScore("sentence-transformers/all-MiniLM-L6-v2")
        >>> metric.update(["The cat sat on the mat."], ["A cat was sitting on the mat."])
        >>> scores = metric.compute_scores()
        >>> scores.f1.shape, scores.hash_code == metric.hash_code
        (torch.Size([1]), True)
        """
        with self.sync_context(
            dist_sync_fn=self.dist_sync_fn, should_sync=self._to_sync, should_unsync=self._should_unsync
        ):
            return self._compute_scores()

    def _compute_scores(self) -> Scores:
        with own_precision(self.device):  # the setting's precision, whatever autocast the caller runs under
            return self._compute_scores_exactly()

    def _compute_scores_exactly(self) -> Scores:
        collective, self._collective = self._collective, False
        if collective:  # the first exchange, of one fixed size whatever the setting: mismatched ranks never hang
            check_same_settings(self.settings(), self._collective_group, self.device)
        self._score_pending()
        device = self.device
        num_local = sum(len(x) for x in self.scored)
        indexes = _cat(self.indexes, torch.long, device)
        offset = 0
        if collective:
            group = self._collective_group
            counts = torch.stack(gather(torch.tensor([num_local, len(indexes)], device=device), group))
            indexes = torch.cat(gather(indexes, group))
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
        # one pair per dataset index: the repeats a distributed sampler pads in leave the scores and the IDF counts
        dedup = deduplicate(indexes, offset, num_local) if has_indexes else None
        scores = self._local_scores(collective, None if dedup is None else dedup.dropped)
        if collective:
            scores = torch.cat(gather(scores, self._collective_group))
        if dedup is not None:
            # a repeat scoring otherwise than the pair kept is another pair: from the gathered scores alone
            conflicting = conflicting_indexes(indexes, dedup.keep, scores)
            if len(conflicting):
                self._warn_conflicting(conflicting)
            scores = scores[dedup.keep]
        # [pairs, rows, 3] -> per score [pairs] or [rows, pairs]
        per = scores.permute(2, 1, 0)  # [3, rows, pairs]
        if not self.all_layers:
            per = per[:, 0]
        precision, recall, f1 = per.unbind(0)
        return Scores(precision, recall, f1, self.hash_code)

    @staticmethod
    def _warn_conflicting(conflicting: Tensor) -> None:
        shown = ", ".join(str(i) for i in conflicting[:5].tolist()) + (", ..." if len(conflicting) > 5 else "")
        warn_user(
            f"{len(conflicting)} dataset index(es) ({shown}) were passed with different pairs (another candidate "
            "or reference): each index keeps the first pair passed with it (in update() order; across processes, "
            "the lowest rank's first) and its other pairs are left out. Only the very same pair may repeat an "
            "index (a distributed sampler's padding): give every pair of the dataset its own index."
        )

    def _format(self, scores: Scores) -> dict[str, Tensor | str] | Tensor:
        per = torch.stack(scores.as_tuple())
        if self.reduction == "mean":
            per = per.mean(dim=-1)
        result: dict[str, Tensor | str] = dict(zip(OUTPUTS, per.unbind(0), strict=True))
        if self.output is not None:
            return result[self.output]  # type: ignore[return-value]
        if self.return_hash:
            result["hash"] = self.hash_code
        return result

    def _score_pending(self) -> None:
        """Embed and match the pairs no earlier compute() scored; keep their per-token best similarities."""
        device = self.device
        if not self.user_supplied:  # clones share the loaded model: it goes where this one computes
            self._embedder.to(device)
        scored = _cat(self.scored, torch.bool, device)
        if scored.numel() == 0 or bool(scored.all()):
            return
        # one tensor per state from now on (so the chunks are freed, not held twice); states stay where
        # they live (the CPU under compute_on_cpu), the bookkeeping below runs on the CPU
        home = self.cand_ids[0].device
        self.cand_ids, self.cand_lens = (
            [_cat(self.cand_ids, torch.int32, home)],
            [_cat(self.cand_lens, torch.int32, home)],
        )
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

    def _corpus_counts(
        self, collective: bool, dropped: Tensor | None, r_ids: Tensor, r_lens: Tensor, ref_counts: Tensor
    ) -> tuple[Tensor, Tensor]:
        """The IDF document counts and reference count of the whole corpus: this rank's, less the references of
        its `dropped` pairs (index repeats), summed over the ranks when `collective`. Counts are summed before
        any weight is applied, so the weights equal one process's over all pairs."""
        device = self.device
        doc_freq, num_refs = self.doc_freq.to(device, copy=True), self.num_refs.to(device, copy=True)
        if dropped is not None and bool(dropped.any()):
            ref_dropped = torch.repeat_interleave(dropped.to(device), ref_counts)
            tok_dropped = torch.repeat_interleave(ref_dropped, r_lens)
            doc_freq, num_refs = without_documents(
                doc_freq, num_refs, r_ids[tok_dropped], r_lens[ref_dropped], self._vocab_size
            )
        if collective:
            torch.distributed.all_reduce(doc_freq, group=self._collective_group)
            torch.distributed.all_reduce(num_refs, group=self._collective_group)
        return doc_freq, num_refs

    def _local_scores(self, collective: bool, dropped: Tensor | None = None) -> Tensor:
        """This rank's per-candidate P, R, F: [pairs, rows, 3] after the multi-reference max and rescale.

        `dropped` marks local pairs whose index repeats an earlier pair's: their references leave the IDF counts.
        """
        device = self.device
        rows = self._embedder.num_rows
        c_ids, c_lens = _cat(self.cand_ids, torch.int32, device), _cat(self.cand_lens, torch.int32, device).long()
        r_ids, r_lens = _cat(self.ref_ids, torch.int32, device), _cat(self.ref_lens, torch.int32, device).long()
        ref_counts = _cat(self.ref_counts, torch.int32, device).long()
        if self._fixed_idf is not None:  # idf_texts / idf_weights: the same on every rank, never summed
            weights = self._fixed_idf.to(device)
        elif self.idf:
            doc_freq, num_refs = self._corpus_counts(collective, dropped, r_ids.long(), r_lens, ref_counts)
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
                cand_best[best],
                weights[cand_tokens],
                match_c_lens,
                ref_best[r_tok],
                weights[r_ids[r_tok].long()],
                r_lens[refs],
                blank,
            )
            undefined += int((torch.isnan(scores[..., :2]).any(dim=(1, 2)) & ~blank).sum())
            pieces.append(best_of_references(scores, counts))
        if undefined:
            warn_user(
                f"{undefined} pair(s) have tokens whose weights sum to 0 (with IDF: tokens found in "
                "every reference); their precision or recall is NaN, as in the reference."
            )
        scores = torch.cat(pieces)
        if self._baseline is not None:
            scores = rescale(scores, self._baseline)
        return scores

    # -- all pairs and MBR: this metric's model and settings, its accumulated state left alone --------------
    def pairwise(self, cands: str | Sequence[str], refs: str | Sequence[str]) -> dict[str, Tensor | str] | Tensor:
        """Every candidate against every reference: ``{"precision", "recall", "f1"}`` each ``[N, M]``
        (``[L + 1, N, M]`` with all_layers), entry (i, j) this metric's score of ``cands[i]`` against
        ``refs[j]``; IDF (if on) over these M references. Honours ``output`` and ``return_hash``, not
        ``reduction``; reuses the loaded model and never touches the state (see `bertscore_tm.pairwise`)."""
        from bertscore_tm.pairwise import pairwise_scores

        return pairwise_scores(self, cands, refs)

    def mbr_select(
        self,
        groups: Sequence[Sequence[str]],
        references: Sequence[Sequence[str]] | None = None,
        return_utilities: bool = False,
    ) -> list[int] | tuple[list[int], list[Tensor]]:
        """Minimum-Bayes-risk choice per group with this metric's model and settings: see
        :func:`bertscore_tm.mbr_select`. Never touches the state."""
        from bertscore_tm.mbr import select

        return select(self, groups, references=references, return_utilities=return_utilities)


def _object_default_layer(model: torch.nn.Module, known: str | None) -> int:
    if known is not None:
        return default_num_layers(known)
    config_name = getattr(getattr(model, "config", None), "name_or_path", "") or ""
    raise ArgumentValueError(
        f"num_layers is required with model=: no default layer is known for this {type(model).__name__} (its "
        f"config's name_or_path {config_name!r} is not in configs/models.json). Pass num_layers=<int>, the layer "
        "whose output to score with (0 = embeddings).",
        argument="num_layers",
        allowed="an integer >= 0",
        value=None,
        others=("model",),
    )


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


def _first_seen_ids(sources: tuple[Tensor, ...], which: Tensor, start: Tensor, length: Tensor) -> tuple[Tensor, Tensor]:
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
