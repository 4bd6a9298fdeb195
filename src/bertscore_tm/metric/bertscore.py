"""BERTScore as a `torchmetrics.Metric` that streams, runs across processes and equals the reference.

update() only tokenises; compute() embeds the pairs not scored yet and keeps their per-token best similarities.
Under DDP compute() makes its own exchanges (a settings digest, the IDF counts, the per-pair results) and
torchmetrics is handed ``sync_on_compute=False``, so that no rank ever receives another's token ids."""

from __future__ import annotations

import functools
import os
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor
from torchmetrics import Metric
from torchmetrics.utilities.data import apply_to_collection

from bertscore_tm.distributed.ranks import check_same_settings, first_difference, gather
from bertscore_tm.embedding.cache import EmbeddingCache
from bertscore_tm.embedding.embedder import Embedder, own_precision
from bertscore_tm.embedding.rows import send
from bertscore_tm.engines.mbr import select
from bertscore_tm.engines.paired import PairTokens, TokenMatches, corpus_counts, interleave, match_pairs, weigh_pairs
from bertscore_tm.engines.pairwise import pairwise_scores
from bertscore_tm.errors import ArgumentTypeError, ArgumentValueError, SettingsMismatchError, warn_user
from bertscore_tm.metric.checkpoint import check_mergeable, loaded_states, setting_digests, with_marks
from bertscore_tm.metric.indexes import PairPlan, checked_indexes
from bertscore_tm.metric.states import (
    STATES,
    TOKEN_STATES,
    HostCopies,
    as_bits,
    cat_state,
    new_entries,
    similarities,
    token_dtype,
)
from bertscore_tm.models.tokenizing import PairTokenizer, TokenizedPairs
from bertscore_tm.models.windows import WindowRule
from bertscore_tm.scoring.hashcode import HashSignature
from bertscore_tm.scoring.idf import document_frequency
from bertscore_tm.scoring.results import Scores, format_scores, scores_of
from bertscore_tm.scoring.scorer import Scorer
from bertscore_tm.settings.arguments import ForwardFn, IgnoreRule, LongTexts, OutputName, Reduction
from bertscore_tm.settings.config import Config
from bertscore_tm.settings.peers import TORCHMETRICS, from_torchmetrics
from bertscore_tm.settings.rules import boolean, instance_of
from bertscore_tm.settings.texts import check_text

if TYPE_CHECKING:
    from bertscore_tm.explanations.types import PairExplanation

#: The key torch gives a module's extra state (`get_extra_state`) in its state_dict, after the module's prefix.
EXTRA_STATE_KEY = "_extra_state"

#: The format of the extra state: 2 holds the marks of a prompt's and a context's tokens beside real ids, 1 (read
#: too) marked them in the ids (`checkpoint.with_marks`); another is refused when loaded.
STATE_FORMAT = 2
READ_FORMATS = (1, 2)


class BERTScore(Metric):
    """BERTScore (Zhang et al., 2019): P, R and F1 of greedy cosine matching of contextual token embeddings,
    equal to bert-score 0.3.13 to floating-point noise. Every argument is checked before the model loads; each is
    described in docs/metric.md (torchmetrics' own and its spellings: docs/lightning.md, docs/migrating.md).

    >>> from bertscore_tm import PACKAGED_MINILM, BERTScore
    >>> metric = BERTScore(PACKAGED_MINILM)
    >>> metric.update(["It rained all day."], [["It was raining.", "Rain fell all day long."]])  # the best counts
    >>> {name: [round(float(x), 4) for x in value] for name, value in metric.compute().items()}
    {'precision': [0.887], 'recall': [0.8059], 'f1': [0.8408]}
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
    has_context: list[Tensor]
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
        prefix_space: bool = True,
        num_threads: int | None = None,
        **kwargs: Any,
    ) -> None:
        arguments = {k: v for k, v in locals().items() if k not in ("self", "kwargs", "__class__")}
        peers = {name: kwargs.pop(name) for name in TORCHMETRICS if name in kwargs}  # torchmetrics' spellings
        self._set_up(Config.of(from_torchmetrics({**arguments, **peers})), kwargs)

    @classmethod
    def from_config(cls, config: Config, **kwargs: Any) -> BERTScore:
        """A metric of settings already checked (`Config.of`); `kwargs`: torchmetrics' own Metric arguments."""
        instance_of(config, Config, "config", "Config.of")
        new = cls.__new__(cls)
        new._set_up(config, kwargs)
        return new

    def _set_up(self, config: Config, kwargs: dict[str, Any]) -> None:
        collective = _collective_option(kwargs)
        super().__init__(**kwargs, sync_on_compute=False, compute_with_cache=False)
        self.config = config
        out = config.output
        self.reduction, self.output, self.return_hash = out.reduction, out.output, out.return_hash
        self.verbose = config.runtime.verbose
        #: Whether compute() is collective under DDP (torchmetrics' ``sync_on_compute``, which it is not handed).
        self.collective_compute = collective
        #: Whether `state_dict()` holds the pairs (`persistent`).
        self.saves_states = False
        #: The scoring core: the model's handle, tokenizer, weights policy, baseline, hash signature (`scorer.py`).
        self.scorer = Scorer(config)
        s = self.scorer
        #: ``tokenize(preds, target, context=None)``: a batch as update() would tokenise it, for update() to take
        #: in place of the texts; it holds the tokenizer alone, so a DataLoader's collate_fn or worker can call it.
        self.tokenize: PairTokenizer = s.pairs
        self.lang, self.idf, self.all_layers = config.model.lang, config.scoring.idf, config.model.all_layers
        self.long_texts = config.text.long_texts
        self.model_name, self.num_layers, self.model_depth = s.model_name, s.num_layers, s.model_depth
        self.user_supplied = s.user_supplied
        for name in STATES:
            self.add_state(name, default=[], dist_reduce_fx="cat")
        counted = s.vocab_size if s.counts_idf else 0
        self.add_state("doc_freq", torch.zeros(counted, dtype=torch.long), dist_reduce_fx="sum")
        self.add_state("num_refs", torch.zeros((), dtype=torch.long), dist_reduce_fx="sum")
        self._host_copies = HostCopies()  # of the entries sent to an accelerator and not scored yet
        self._scoring_batch = False  # forward()'s value: this process's batch alone
        self._context_in_job = False  # a collective compute() found a context on another rank (the hash code)
        self.compute = _keeping_pair_axis(self, self.compute)  # type: ignore[method-assign]
        self.register_load_state_dict_pre_hook(_before_loading)
        if config.runtime.device is not None:
            self.to(config.runtime.device)
            s.follow(self.device)

    def __setstate__(self, state: dict[str, Any]) -> None:
        """A copy or an unpickled metric: torchmetrics wraps compute() again, so the pair axis is kept again."""
        super().__setstate__(state)
        self.compute = _keeping_pair_axis(self, self.compute)  # type: ignore[method-assign]

    # -- update -----------------------------------------------------------------------------------------------
    def update(
        self,
        preds: str | Sequence[str] | TokenizedPairs,
        target: str | Sequence[str | Sequence[str]] | None = None,
        indexes: Tensor | Sequence[int] | None = None,
        context: str | Sequence[str] | None = None,
    ) -> None:
        """Tokenise candidates and their references (one text, or a sequence, per candidate), or take a batch
        `tokenize` made. With dataset `indexes`, compute() keeps one pair per index, so the repeats a distributed
        sampler pads in do not count. `context` (one text per pair) is encoded with the pair, out of the matching."""
        if isinstance(preds, TokenizedPairs):
            if target is not None or context is not None:
                raise ArgumentTypeError(
                    "update(batch): a batch made by tokenize() holds its references and contexts already",
                    argument="target" if target is not None else "context",
                    expected="None with a tokenised batch",
                    value=target if target is not None else context,
                )
            batch = preds
            if batch.digest != self.tokenize.digest:
                raise SettingsMismatchError(
                    "update() was given pairs tokenised by another setting's tokenize() (another tokenizer, "
                    "max_length, long_texts or prompt), so their token ids cannot be scored here: tokenise them "
                    "with this metric's own `tokenize`.",
                    setting="tokenisation",
                    values=[batch.digest, self.tokenize.digest],
                )
        elif target is None:
            raise ArgumentTypeError(
                "update() needs target: one reference (or a list of references) per candidate",
                argument="target",
                expected="str | Sequence[str | Sequence[str]]",
                value=None,
            )
        else:
            batch = self.tokenize(preds, target, context)
        index_tensor = None if indexes is None else checked_indexes(indexes, len(batch))
        for note in batch.notes:
            warn_user(note)
        if len(batch):
            self._add_pairs(batch, index_tensor)

    def _add_pairs(self, batch: TokenizedPairs, index_tensor: Tensor | None) -> None:
        """Add tokenised pairs to the state (ids ``idf_weights`` cannot weigh refused first). The host
        tensors are sent from pinned memory and not waited for, so that an update() never stalls a GPU."""
        self.scorer.check_known_weights(
            torch.cat([batch.cand_ids, batch.ref_ids]), torch.cat([batch.cand_marked, batch.ref_marked])
        )
        device, n = self.device, len(batch)
        unscored = torch.zeros(n, dtype=torch.bool)
        hosts = (
            *(batch.cand_ids, batch.cand_lens, batch.cand_marked),
            *(batch.ref_ids, batch.ref_lens, batch.ref_marked),
            *(batch.ref_counts, unscored),
        )
        for name, value in zip((*TOKEN_STATES, "scored"), hosts, strict=True):
            getattr(self, name).append(self._host_copies.keep(send(value, device), value))
        flags = batch.has_context
        self.has_context.append(
            send(flags, device) if bool(flags.any()) else torch.zeros(n, dtype=torch.bool, device=device)
        )
        if index_tensor is not None:
            self.indexes.append(send(index_tensor.to(torch.long), device))
        if self.scorer.counts_idf:
            counts = document_frequency(batch.ref_ids, batch.ref_lens, self.scorer.vocab_size, marked=batch.ref_marked)
            self.doc_freq += send(counts, self.doc_freq.device)
        self.num_refs += len(batch.ref_lens)

    # -- forward, merging, resetting: torchmetrics' own, with this metric's checks ----------------------------
    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """torchmetrics' forward(): this process's batch's scores (also under DDP); the batch is kept, and a later
        compute() does not embed it again."""
        job_context, self._scoring_batch = self._context_in_job, True
        try:
            return super().forward(*args, **kwargs)
        finally:
            self._scoring_batch, self._context_in_job = False, job_context

    def merge_state(self, incoming_state: dict[str, Any] | Metric) -> None:
        """torchmetrics' merge of another `BERTScore`, or of its `state_dict()` saved with `persistent(True)`.
        A metric or state of another setting is refused, and so is a bare mapping of states that cannot say which
        setting made it: merged, its ids and similarities would be scored as this one's, a confident wrong number."""
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
            super().merge_state(incoming_state)
            return
        saved = incoming_state.get(EXTRA_STATE_KEY) if isinstance(incoming_state, Mapping) else None
        if not (isinstance(saved, Mapping) and isinstance(saved.get("states"), Mapping)):
            raise ArgumentValueError(
                "merge_state takes another BERTScore, or its state_dict() saved after persistent(True): a mapping of "
                "states alone (such as metric_state) does not say which setting made its token ids and "
                "similarities, so they cannot be scored as this metric's.",
                argument="incoming_state",
                allowed="a BERTScore, or its state_dict() with persistent(True)",
                value=type(incoming_state).__name__,
            )
        states = with_marks(saved["states"])
        check_mergeable(self.scorer, states, _digests(saved), self.doc_freq.numel())
        here = {name: getattr(self, name) for name in self.metric_state}
        super().merge_state(
            {n: v.to(here[n].device) if isinstance(v, Tensor) else list(v) for n, v in states.items() if n in here}
        )

    def reset(self) -> None:
        """Clear the state (the model and the embedding cache stay)."""
        self._host_copies.clear()
        self._context_in_job = False
        super().reset()

    def sync(
        self,
        dist_sync_fn: Callable | None = None,
        process_group: Any | None = None,
        should_sync: bool = True,
        distributed_available: Callable | None = None,
    ) -> None:
        """Refused where it would gather the states: each rank keeps its own pairs, and compute() exchanges only
        counts and per-pair results (torchmetrics calls it with ``should_sync=False``, which does nothing)."""
        available = distributed_available if distributed_available is not None else self.distributed_available_fn
        if should_sync and callable(available) and available():
            raise ArgumentValueError(
                "BERTScore.sync() would gather every rank's token ids and similarities into this one; compute() "
                "is collective by itself and exchanges only IDF counts and per-pair scores: call compute() on "
                "every rank instead.",
                argument="should_sync",
                allowed="False",
                value=should_sync,
            )
        super().sync(dist_sync_fn, process_group, False, distributed_available)

    def set_dtype(self, dst_type: str | torch.dtype) -> BERTScore:
        """Leaves the states as they are, saying so: they are ids, flags, counts and exact float32
        similarities, which a cast would corrupt or round. The model's precision is ``model_dtype``."""
        warn_user(
            f"BERTScore.set_dtype({dst_type}) leaves the metric's states as they are (token ids and exact float32 "
            "similarities); the model's precision is set by model_dtype."
        )
        return self

    # -- saving and loading: the pairs and the digests of the setting that made them ---------------------------
    def persistent(self, mode: bool = False) -> None:
        """Whether `state_dict()` holds the pairs beside the digests of the setting that made them (off by
        default, as torchmetrics' states)."""
        boolean("mode", mode)
        self.saves_states = bool(mode)

    def get_extra_state(self) -> dict[str, Any]:
        """The setting's digests, and the states themselves with `persistent(True)`."""
        tokens, embedding = setting_digests(self.scorer)
        states = None
        if self.saves_states:  # copies, as torchmetrics copies its own states for state_dict()
            states = {
                name: apply_to_collection(getattr(self, name), Tensor, lambda x: x.detach().clone())
                for name in self.metric_state
            }
        return {"format": STATE_FORMAT, "tokens": tokens, "embedding": embedding, "states": states}

    def set_extra_state(self, state: Any) -> None:
        """Load a saved state made fit for this setting (`loaded_states`): ids of another tokenisation
        are refused before any state changes; similarities of another embedding are dropped, to be made again."""
        if state is None:  # saved before the metric had an extra state (`_before_loading`)
            return
        digests = _digests(state)
        if state.get("format") not in READ_FORMATS:
            raise SettingsMismatchError(
                f"This BERTScore state is of format {state.get('format')!r}, this version reads {READ_FORMATS}.",
                setting="format",
                values=[state.get("format"), STATE_FORMAT],
            )
        if state["states"] is not None:
            self._hold(loaded_states(self.scorer, state["states"], digests))

    def _hold(self, states: Mapping[str, Any]) -> None:
        """Take `states` (every state, fit for this setting) as the metric's own, where its states live."""
        lists = torch.device("cpu") if self.compute_on_cpu else self.device
        for name in self.metric_state:
            value = states[name]
            setattr(self, name, value.to(self.device) if isinstance(value, Tensor) else [x.to(lists) for x in value])
        self._host_copies.clear()

    # -- compute ------------------------------------------------------------------------------------------------
    def compute(self) -> dict[str, Tensor | str] | Tensor:
        """Scores of every pair seen (by every rank), in input order: a dict of ``precision``, ``recall``,
        ``f1`` (and ``hash`` with `return_hash`), or one of them with `output`; per pair, or means."""
        scores = self.compute_scores()
        per = scores.stacked()
        per = per.mean(dim=-1) if self.reduction == "mean" else per
        return format_scores(per, self.output, scores.hash_code if self.return_hash else None)

    def with_pair_axis(self, value: Any) -> Any:
        """compute()'s `value` with the pair axis torchmetrics squeezes from one pair's results."""
        if self.reduction != "none":
            return value
        shape = (1, 1) if self.all_layers else (1,)
        return apply_to_collection(value, Tensor, lambda x: x.reshape(shape) if x.dim() == 0 else x)

    def compute_scores(self) -> Scores:
        """The per-pair scores as a typed :class:`Scores`, whatever `reduction` and `output` are; collective
        like compute() under DDP: the ranks check they share the setting, sum the IDF counts and gather the results."""
        # collective where asked for (``sync_on_compute``), in a distributed run, and not forward()'s of its batch
        available = self.distributed_available_fn
        collective = self.collective_compute and not self._scoring_batch and callable(available) and bool(available())
        group, gather_fn = self.process_group, self.dist_sync_fn
        # the setting's precision (whatever autocast the caller runs under) and CPU threads
        with own_precision(self.device), self.scorer.threads():
            if collective:  # the first exchange, of one fixed size whatever the setting: mismatched ranks never hang
                check_same_settings(self.settings(), group, self.device, gather_fn)
            self._score_pending()
            local = sum(len(x) for x in self.scored)
            contexts = int(cat_state(self.has_context, torch.bool, self.device).sum())
            indexes = cat_state(self.indexes, torch.long, self.device)
            plan = PairPlan(local, indexes, contexts, collective, group, gather_fn)
            scores = self._local_scores(collective, group, plan.dropped)
            if collective:
                scores = torch.cat(gather(scores, group, gather_fn))
                self._context_in_job = plan.any_context
            scores = plan.kept(scores)
        return scores_of(scores, self.all_layers, self.scorer.signature_for(plan.any_context).format())

    def _local_scores(self, collective: bool, group: Any, dropped: Tensor | None) -> Tensor:
        """This rank's per-candidate P, R, F and best reference ([pairs, rows, 4]). The IDF counts are summed
        over the ranks (less the `dropped` pairs' references) before any weight is applied."""
        device = self.device
        pairs = self._pairs(device)
        doc_freq, num_refs = self.doc_freq.to(device, copy=True), self.num_refs.to(device, copy=True)
        if self.scorer.counts_idf:
            doc_freq, num_refs = corpus_counts(doc_freq, num_refs, pairs, dropped, collective, group)
        weights = self.scorer.weights(doc_freq, int(num_refs), device)
        matches = TokenMatches(similarities(self.cand_best, device), similarities(self.ref_best, device))
        return weigh_pairs(self.scorer, pairs, matches, weights)

    # -- the pairs not scored yet: embedded on the metric's device, their best similarities kept ---------------
    def _pairs(self, device: torch.device, entries: slice = slice(None)) -> PairTokens:
        """The state's pairs (of list `entries`) as tensors on `device`; on the host, from the host copies."""
        ids, lens, marked, r_ids, r_lens, r_marked, counts = (
            self._host_copies.cat(getattr(self, name)[entries], token_dtype(name), device) for name in TOKEN_STATES
        )
        return PairTokens(ids, lens.long(), r_ids, r_lens.long(), counts.long(), marked, r_marked)

    def _score_pending(self) -> None:
        """Embed and match the pairs no earlier compute() scored, and keep their bests. Where the new pairs
        are the last entries (nearly always) only those are read; where old and new alternate, the whole state."""
        scored = self._host_copies.cat(self.scored, torch.bool, torch.device("cpu"))
        if scored.numel() == 0 or bool(scored.all()):
            return
        self.scorer.follow(self.device)
        home = self.cand_ids[0].device  # where the states live
        first = new_entries(self.cand_lens, scored)
        # only the entries from `first` on are read, and become one per state (freed, not held twice)
        tail = 0 if first is None else first
        pairs = self._pairs(torch.device("cpu"), slice(tail, None))
        for name in TOKEN_STATES:
            entries = getattr(self, name)
            setattr(self, name, [*entries[:tail], cat_state(entries[tail:], token_dtype(name), home)])
        is_new = ~scored if first is None else torch.ones(len(pairs.ref_counts), dtype=torch.bool)
        new = match_pairs(self.scorer, pairs, is_new, self.verbose)
        if first is None:  # the bests interleaved in pair order
            old_c, old_r = similarities(self.cand_best, self.device), similarities(self.ref_best, self.device)
            cand = interleave(old_c, new.cand_best, is_new, pairs.cand_lens * pairs.ref_counts)
            ref = interleave(old_r, new.ref_best, torch.repeat_interleave(is_new, pairs.ref_counts), pairs.ref_lens)
            self.cand_best, self.ref_best = [as_bits(cand).to(home)], [as_bits(ref).to(home)]
        else:
            self.cand_best = [*self.cand_best, as_bits(new.cand_best).to(home)]
            self.ref_best = [*self.ref_best, as_bits(new.ref_best).to(home)]
        self._host_copies.clear()  # every pair is scored: no copy is needed again
        done = torch.ones(len(scored), dtype=torch.bool)
        self.scored = [self._host_copies.keep(send(done, home), done)]

    # -- what the metric tells about its setting, read from its scoring core ------------------------------------
    @property
    def signature(self) -> HashSignature:
        """The hash code's fields: the setting's, and ``context`` where a pair (of any rank, after a collective
        compute()) had one."""
        seen = self._context_in_job or bool(cat_state(self.has_context, torch.bool, self.device).any())
        return self.scorer.signature_for(seen)

    @property
    def hash_code(self) -> str:
        """The hash code of the scores this metric computes; ``_context`` once an update carried a context (until
        `reset()`)."""
        return self.signature.format()

    @property
    def model_commit(self) -> str | None:
        """The Hub commit of the model's files, to report beside the scores (None: a local folder or your own model)."""
        return self.scorer.model_commit

    @property
    def embedder(self) -> Embedder:
        """The frozen embedding model (outside the module tree): the last compute()'s, or the model where it is."""
        return self.scorer.embedder

    @property
    def embedding_cache(self) -> EmbeddingCache | None:
        """The embedding cache (``embedding_cache_mb``), or None when it is off."""
        return self.scorer.cache

    def clear_cache(self) -> None:
        """Empty the embedding cache (a no-op when it is off); the metric's state is untouched."""
        if self.scorer.cache is not None:
            self.scorer.cache.clear()

    @property
    def windows(self) -> WindowRule | None:
        """The long-text window rule in use, or None."""
        return self.scorer.windows

    @property
    def baseline(self) -> Tensor | None:
        """The rescale baseline rows in use ([1, 3], or [L + 1, 3] with all_layers), or None."""
        return self.scorer.baseline

    def token_ids(self, text: str) -> Tensor:
        """The token ids this metric scores for `text` (int32): stripped, with special tokens, within the window."""
        return self.scorer.encoder.encode([check_text(text, "text")])[0]

    @property
    def tokenizer(self) -> Any:
        """The Hugging Face tokenizer, set up as the reference uses it."""
        return self.scorer.encoder.tokenizer

    def idf_weights(self) -> dict[int, float]:
        """Every token id's IDF weight, to pass as ``idf_weights=`` to a metric with the same tokenizer, which
        then scores exactly as this one: the fixed table (unknown ids left out), else this process's counts so far."""
        if not self.idf:
            raise ArgumentValueError(
                "idf_weights(): this metric has idf=False, so it weighs no token by IDF",
                argument="idf",
                allowed="True",
                value=False,
            )
        if self.scorer.counts_idf and int(self.num_refs) == 0:
            raise RuntimeError("idf_weights(): no reference seen yet (the weights come from the references' counts)")
        table = self.scorer.weights(self.doc_freq.cpu(), int(self.num_refs))
        return {i: w for i, w in enumerate(table.tolist()) if w == w}  # NaN: unknown

    def settings(self) -> dict[str, object]:
        """Everything ranks must share to combine their scores (`Scorer.settings_record`)."""
        return self.scorer.settings_record()

    def explain(
        self,
        candidate: str,
        references: str | Sequence[str],
        *,
        idf_references: Sequence[str] | None = None,
        threshold: float | None = None,
        layer: int | None = None,
        context: str | None = None,
    ) -> PairExplanation:
        """Why this metric scores `candidate` against `references` as it does, token by token (docs/explain.md);
        the state is left alone. With IDF counted, over `idf_references`, else over the references held so far, so
        that it matches the corpus run; `threshold` (weak words), `layer` and `context` as :func:`explain` takes them.

        >>> from bertscore_tm import PACKAGED_MINILM, BERTScore
        >>> why = BERTScore(PACKAGED_MINILM).explain("The cat sat on the mat.", "A cat was sitting on the mat.")
        >>> round(why.recall, 4), round(sum(t.contribution for t in why.reference_tokens), 4)
        (0.9053, 0.9053)
        """
        from bertscore_tm.explanations.explanation import explain_with

        counts = None
        if self.scorer.counts_idf and int(self.num_refs) > 0:
            counts = (self.doc_freq, self.num_refs)
        return explain_with(
            self.scorer,
            self.device,
            candidate,
            references,
            idf_references=idf_references,
            counts=counts,
            threshold=threshold,
            layer=layer,
            context=context,
        )

    def pairwise(self, cands: str | Sequence[str], refs: str | Sequence[str]) -> dict[str, Tensor | str] | Tensor:
        """Every candidate against every reference: each score [N, M] ([L + 1, N, M] with all_layers), IDF (if
        on) over these references; honours ``output`` and ``return_hash``, not ``reduction``; the state is untouched."""
        per = pairwise_scores(self.scorer, cands, refs, self.device, verbose=self.verbose)
        return format_scores(per, self.output, self.scorer.hash_code if self.return_hash else None)

    def mbr_select(
        self,
        groups: Sequence[Sequence[str]],
        references: Sequence[Sequence[str]] | None = None,
        return_utilities: bool = False,
        utility: str = "f1",
    ) -> list[int] | tuple[list[int], list[Tensor]]:
        """Minimum-Bayes-risk choice per group with this metric's model and settings
        (:func:`bertscore_tm.engines.mbr_select`; `utility`: ``"f1"``, ``"f_beta"``, ``"precision"`` or
        ``"recall"``); the state is untouched."""
        return select(
            self.scorer, self.device, groups, references, return_utilities, verbose=self.verbose, utility=utility
        )


def _collective_option(kwargs: dict[str, Any]) -> bool:
    """torchmetrics' options as this metric honours them: ``sync_on_compute`` popped (torchmetrics is
    handed False); ``compute_with_cache`` and ``dist_sync_on_step`` refused where they ask for what it cannot do."""
    collective = kwargs.pop("sync_on_compute", True)
    boolean("sync_on_compute", collective)
    cache = kwargs.pop("compute_with_cache", False)
    if cache is not False:
        raise ArgumentValueError(
            f"compute_with_cache={cache!r}: BERTScore never caches a result (a cached one would outlive a "
            "merge_state); a compute() without new pairs embeds nothing again, it only weighs the kept "
            "similarities",
            argument="compute_with_cache",
            allowed="False",
            value=cache,
        )
    if kwargs.get("dist_sync_on_step", False) is not False:
        raise ArgumentValueError(
            "dist_sync_on_step=True would make torchmetrics gather every rank's token ids at each forward(); "
            "forward() scores this process's batch, and compute() is collective by itself",
            argument="dist_sync_on_step",
            allowed="False",
            value=kwargs["dist_sync_on_step"],
        )
    return collective


def _keeping_pair_axis(metric: BERTScore, compute: Callable[..., Any]) -> Callable[..., Any]:
    """torchmetrics' compute() wrapper, keeping one pair's results' pair axis and without its warning of a
    compute() before update(): a rank without pairs is fine under DDP (with none anywhere compute() raises)."""

    @functools.wraps(compute)
    def compute_value(*args: Any, **kwargs: Any) -> Any:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=r".*was called before the ``update`` method")
            value = compute(*args, **kwargs)
        return metric.with_pair_axis(value)

    return compute_value


def _before_loading(module: BERTScore, state_dict: dict[str, Any], prefix: str, *_: Any) -> None:
    """A load_state_dict pre-hook: a checkpoint saved before the extra state existed (one key per state, or
    none) loads too, checked and made fit as `set_extra_state` makes a saved state."""
    key = prefix + EXTRA_STATE_KEY
    if key in state_dict:
        return
    state_dict[key] = None
    legacy = state_dict.pop(prefix + "state_setting", None)
    seen = state_dict.pop(prefix + "context_seen", None)
    if legacy is None and seen is None:  # no per-key states: the metric keeps its own
        return
    digests = None if legacy is None else (int(legacy[0]), int(legacy[1]))
    states = {**module.metric_state, "has_context": []}  # a pair's context was one number then: `seen`
    try:
        states = loaded_states(module.scorer, states, digests, bool(seen is not None and int(seen)))
    except SettingsMismatchError:
        module.reset()
        raise
    module._hold(states)


def _digests(saved: Mapping[str, Any]) -> tuple[int, int]:
    """The digests a saved extra state holds; a clear error where this metric did not write it."""
    try:
        return int(saved["tokens"]), int(saved["embedding"])
    except (KeyError, TypeError, ValueError):
        raise SettingsMismatchError(
            "This is not a BERTScore state (no digests of the setting that made it): load or merge the "
            "state_dict() of a BERTScore.",
            setting="state",
            values=[type(saved).__name__],
        ) from None
