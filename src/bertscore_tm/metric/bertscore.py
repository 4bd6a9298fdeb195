"""The Metric: BERTScore as a `torchmetrics.Metric` that streams, syncs across ranks and equals the reference.

It owns the states and the torchmetrics protocol and delegates scoring to the core (`scorer.py`, `paired.py`):
`update()` only tokenises; `compute()` embeds the pairs not scored yet (each rank its own share), keeps their
per-token best similarities, all-reduces IDF counts and gathers only per-pair P/R/F (docs/architecture.md).
"""

from __future__ import annotations

import functools
import os
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch
from torch import Tensor
from torchmetrics import Metric
from torchmetrics.utilities.data import apply_to_collection

from bertscore_tm.distributed.ranks import check_same_settings, first_difference, gather
from bertscore_tm.embedding.embedder import own_precision
from bertscore_tm.embedding.packing import send
from bertscore_tm.engines.paired import TokenMatches, corpus_counts, weigh_pairs
from bertscore_tm.errors import SettingsMismatchError
from bertscore_tm.metric.checkpoint import check_loadable, check_mergeable, fitted_counts, setting_digests
from bertscore_tm.metric.indexes import PairPlan, checked_indexes
from bertscore_tm.metric.pending import STATES, HostCopies, PendingScores, cat_state
from bertscore_tm.metric.queued import QueuedUpdates
from bertscore_tm.metric.views import SettingViews
from bertscore_tm.models.prompts import check_context
from bertscore_tm.models.tokenizing import normalize_inputs
from bertscore_tm.scoring.hashcode import names_context
from bertscore_tm.scoring.idf import document_frequency
from bertscore_tm.scoring.results import Scores, format_scores, scores_of
from bertscore_tm.scoring.scorer import Scorer
from bertscore_tm.settings.arguments import ForwardFn, IgnoreRule, LongTexts, OutputName, Reduction
from bertscore_tm.settings.config import Config


class BERTScore(SettingViews, QueuedUpdates, PendingScores, Metric):
    """BERTScore (Zhang et al., 2019): precision, recall and F1 of greedy cosine matching of contextual
    token embeddings, equal to bert-score 0.3.13 to floating-point noise. Every argument: docs/metric.md.

    Args (each in full, with its default and range: docs/metric.md):
        model_name_or_path: a local model folder, a name in the local Hugging Face cache, or the packaged
            ``"sentence-transformers/all-MiniLM-L6-v2"``. Default: ``lang``'s model.
        num_layers: score with this layer's output (0 = embeddings). Default: the model's tuned layer.
        all_layers: score with every layer; outputs gain a leading ``L + 1`` dimension.
        lang: language code, for the default model and the packaged rescale baseline.
        idf: weigh tokens by IDF over all references (of every rank), ``idf_texts`` or ``idf_weights``.
        rescale_with_baseline, baseline_path: rescale with (``lang``, model)'s baseline or a ``LAYER,P,R,F`` file.
        batch_size, max_length: texts per forward pass at most; the window in tokens (default: the model's).
        long_texts, window_stride: ``"truncate"`` (the reference) or ``"window"``; the windows' stride.
        device, model_dtype: where the model runs (``None``: follow the metric); float32 (exact) or 16-bit.
        reduction: ``"none"`` for per-pair scores, ``"mean"`` for their means.
        output: ``"precision"``, ``"recall"`` or ``"f1"`` to return that tensor alone (for Lightning logging).
        return_hash, verbose: add the hash code to the dict under ``"hash"``; a progress bar while embedding.
        embedding_cache_mb, compile_model: MiB of vectors kept across ``compute()``; ``torch.compile`` (inexact).
        model, tokenizer: a model object of your own and its tokenizer, scored through a view that never changes it.
        forward_fn: ``forward_fn(model, input_ids, attention_mask) -> [B, T, D]`` for a non-standard forward.
        idf_texts, idf_weights: with ``idf=True``, count in these texts instead; or a token id -> weight mapping.
        beta, ignore, candidate_prompt, reference_prompt: F-beta, token masks, prompts (docs/semantics.md).
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
    _QUEUED_INTO = frozenset((*STATES, "doc_freq", "num_refs"))  # `QueuedUpdates`; queued pairs have no context

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
        beta: float | None = None,
        ignore: IgnoreRule | None = None,
        candidate_prompt: str | None = None,
        reference_prompt: str | None = None,
        revision: str | None = None,
        local_files_only: bool = False,
        trust_remote_code: bool = False,
        use_fast_tokenizer: bool = True,
        num_threads: int | None = None,
        **kwargs: Any,
    ) -> None:
        arguments = {k: v for k, v in locals().items() if k not in ("self", "kwargs", "__class__")}
        self._set_up(Config.of(arguments), kwargs)

    @classmethod
    def from_config(cls, config: Config, **kwargs: Any) -> BERTScore:
        """A metric of settings already checked (`Config.of`, as the command line builds them); `kwargs` are
        torchmetrics' own Metric arguments."""
        new = cls.__new__(cls)
        new._set_up(config, kwargs)
        return new

    def _set_up(self, config: Config, kwargs: dict[str, Any]) -> None:
        super().__init__(**kwargs)
        self.config = config
        out = config.output
        self.reduction, self.output, self.return_hash = out.reduction, out.output, out.return_hash
        self.verbose = config.runtime.verbose
        #: The scoring core: model, tokenizer, weights policy, baseline, hash signature (`scorer.py`).
        self.scorer = Scorer(config)
        s = self.scorer
        lang, idf, all_layers = config.model.lang, config.scoring.idf, config.model.all_layers
        long_texts, device = config.text.long_texts, config.runtime.device
        self.lang, self.idf, self.all_layers, self.long_texts = lang, idf, all_layers, long_texts
        self.model_name, self.num_layers, self.model_depth = s.model_name, s.num_layers, s.model_depth
        self.user_supplied = s.user_supplied
        for name in STATES:
            self.add_state(name, default=[], dist_reduce_fx="cat")
        counted = s.vocab_size if s.counts_idf else 0
        self.add_state("doc_freq", torch.zeros(counted, dtype=torch.long), dist_reduce_fx="sum")
        self.add_state("num_refs", torch.zeros((), dtype=torch.long), dist_reduce_fx="sum")
        # 1 once a pair with a context was added (on any rank, after a collective compute()): the hash code
        # names it; "max" keeps it through forward()'s and merge_state()'s merges
        self.add_state("context_seen", torch.zeros((), dtype=torch.long), dist_reduce_fx="max")
        # which tokenisation made the token ids and which embedding the best similarities (checkpoint.py); "max"
        # keeps this constant through forward()'s state merge; never exchanged between ranks
        self.add_state("state_setting", setting_digests(s), dist_reduce_fx="max")
        self._collective = False
        self._queued = []  # update()s' pairs still being tokenised (`QueuedUpdates`)
        self._host_copies = HostCopies()  # of the entries sent to an accelerator and not scored yet (`PendingScores`)
        if device is not None:
            self.to(device)

    # -- device handling: the model follows the metric but is never part of its module tree or state_dict.
    # States follow the device but never a dtype (`.half()`, `set_dtype()`...): they are token ids, lengths,
    # counts and exact float32 similarities, and casting them would corrupt or round them.
    def _apply(self, fn: Callable, exclude_state: Sequence[str] = "") -> torch.nn.Module:
        def device_only(t: Tensor) -> Tensor:
            moved = fn(t)
            return moved if moved.dtype == t.dtype else t.to(moved.device)

        before = self.device
        this = super()._apply(device_only, exclude_state)
        if "_host_copies" in this.__dict__:
            this.__dict__["_host_copies"].clear()  # of entries the move replaced
        scorer = this.__dict__.get("scorer")  # (none yet while torchmetrics' constructor runs)
        if scorer is not None:
            scorer.move_with_metric(this.device, moved=this.device != before)
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

    def _load_from_state_dict(self, state_dict: dict, prefix: str, *args: Any, **kwargs: Any) -> None:
        """Load a state made fit for this setting (`checkpoint.py`): pairs another tokenisation made are refused
        before any state changes; best similarities another embedding kept are dropped (compute() embeds those
        pairs again); IDF counts are counted again from the references where the state has none."""
        keeps_similarities = check_loadable(self.scorer, state_dict, prefix)
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)
        home = self.cand_ids[0].device if self.cand_ids else self.device
        if not keeps_similarities:
            self.cand_best, self.ref_best = [], []
            self.scored = [torch.zeros(sum(len(x) for x in self.scored), dtype=torch.bool, device=home)]
        refs = (cat_state(self.ref_ids, torch.int32, home), cat_state(self.ref_lens, torch.int32, home))
        self.doc_freq = fitted_counts(self.scorer, self.doc_freq, *refs)
        self.state_setting = setting_digests(self.scorer).to(self.state_setting.device)

    # -- the torchmetrics protocol ---------------------------------------------------------------------------
    def update(
        self,
        preds: str | Sequence[str],
        target: str | Sequence[str | Sequence[str]],
        indexes: Tensor | Sequence[int] | None = None,
        context: str | Sequence[str] | None = None,
    ) -> None:
        """Tokenise a batch of candidates and their references (one string, or a sequence per candidate).

        `indexes` (optional) are dataset indexes of the candidates: `compute()` then orders the pairs by
        index and keeps one pair per index, so the duplicates a distributed sampler pads in do not count; an
        index repeated with another pair (another candidate or reference) is a mistake it warns about.
        `context` (one text per pair) is encoded with the pair's texts, out of the matching (docs/semantics.md).
        """
        cands, groups = normalize_inputs(preds, target)
        index_tensor = None if indexes is None else checked_indexes(indexes, len(cands))
        contexts = check_context(context, len(cands))
        if not cands:
            return
        refs, counts = [r for group in groups for r in group], [len(g) for g in groups]
        ahead = self._tokenises_ahead() and contexts is None  # `QueuedUpdates`
        pending = self.scorer.encode_pairs_ahead(cands, refs) if ahead else None
        if pending is not None:
            return self._queue(pending, counts, index_tensor)
        self._add_pairs(self.scorer.encode_pairs(cands, refs, contexts, counts), counts, index_tensor, contexts)

    def _add_pairs(self, encoded: Any, counts: list[int], index_tensor: Tensor | None, contexts: Any = None) -> None:
        """Add tokenised pairs (`encode_pairs`' ids and lengths; references per candidate) to the state."""
        c_ids, c_lens, r_ids, r_lens = encoded
        self.scorer.check_known_weights(torch.cat([c_ids, r_ids]))
        device = self.device  # copies sent from pinned memory, not waited for: an update() never stalls a GPU
        host_counts, unscored = torch.tensor(counts, dtype=torch.int32), torch.zeros(len(counts), dtype=torch.bool)
        for name, value in zip(STATES[:6], (c_ids, c_lens, r_ids, r_lens, host_counts, unscored), strict=True):
            getattr(self, name).append(self._host_copies.keep(send(value, device), value))  # `HostCopies`
        if index_tensor is not None:
            self.indexes.append(send(index_tensor.to(torch.long), device))
        if self.scorer.counts_idf:
            self.doc_freq += send(document_frequency(r_ids, r_lens, self.scorer.vocab_size), self.doc_freq.device)
        self.num_refs += len(r_lens)
        if names_context(contexts):
            self.context_seen.fill_(1)

    def merge_state(self, incoming_state: dict[str, Any] | Metric) -> None:
        """torchmetrics' merge (the incoming metric's pairs first, then this one's), and the result a compute()
        cached dropped: torchmetrics keeps it, so a compute() after a merge would return the pairs before it.
        A metric (or a state) of another setting is refused first: its token ids, kept similarities and IDF
        counts are that setting's, and merged they would be scored as this one's, a confident wrong number."""
        if isinstance(incoming_state, BERTScore):
            found = first_difference([incoming_state.settings(), self.settings()])
            if found is not None:
                name, (theirs, ours) = found
                raise SettingsMismatchError(
                    f"merge_state: the incoming metric has {name} = {theirs!r:.80}, this one {ours!r:.80}, so "
                    "their pairs cannot be scored together. Merge metrics created with the same arguments.",
                    setting=name,
                    values=[theirs, ours],
                )
        elif isinstance(incoming_state, Mapping):
            check_mergeable(self.scorer, incoming_state, self.doc_freq.numel())
        super().merge_state(incoming_state)
        self._computed = None

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
        scores = self._compute_scores()
        per = scores.stacked()
        per = per.mean(dim=-1) if self.reduction == "mean" else per
        return format_scores(per, self.output, self.hash_code if self.return_hash else None)

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
        # the setting's precision (whatever autocast the caller runs under) and CPU threads
        with own_precision(self.device), self.scorer.threads():
            collective, self._collective = self._collective, False
            group = self._collective_group if collective else None  # None: the default group, or no exchange
            if collective:  # the first exchange, of one fixed size whatever the setting: mismatched ranks never hang
                check_same_settings(self.settings(), group, self.device)
                seen = self.context_seen.to(self.device, copy=True)  # where the backend exchanges (compute_on_cpu)
                torch.distributed.all_reduce(seen, torch.distributed.ReduceOp.MAX, group=group)
                self.context_seen = seen.to(self.context_seen.device)  # a context on any rank: the code names it
            self._score_queued()  # pairs still being tokenised: scored in chunks as they join (`QueuedUpdates`)
            local = sum(len(x) for x in self.scored)
            plan = PairPlan(local, cat_state(self.indexes, torch.long, self.device), collective, group)
            scores = self._local_scores(collective, group, plan.dropped)
            if collective:
                scores = torch.cat(gather(scores, group))
            scores = plan.kept(scores)
        return scores_of(scores, self.all_layers, self.hash_code)

    def _local_scores(self, collective: bool, group: Any, dropped: Tensor | None) -> Tensor:
        """This rank's per-candidate P, R, F and best reference ([pairs, rows, 4]); `dropped` marks pairs whose
        index repeats an earlier pair's: their references leave the IDF counts. Counts are summed over the ranks (when
        `collective`) before any weight is applied, so the weights equal one process's over all pairs."""
        device = self.device
        pairs = self._pairs(device)
        doc_freq, num_refs = self.doc_freq.to(device, copy=True), self.num_refs.to(device, copy=True)
        if self.scorer.counts_idf:
            doc_freq, num_refs = corpus_counts(doc_freq, num_refs, pairs, dropped, collective, group)
        weights = self.scorer.weights(doc_freq, int(num_refs), device)
        best = (cat_state(getattr(self, n), torch.float32, device) for n in ("cand_best", "ref_best"))
        return weigh_pairs(self.scorer, pairs, TokenMatches(*best), weights)
