"""The scoring core every engine scores with: tokenisation, the model's handle, the weights policy, the
baseline and the hash signature of one setting. It knows nothing of torchmetrics, so no engine imports the Metric."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import warnings
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, cast

import torch
from torch import Tensor

from bertscore_tm.embedding.cache import CachingEmbedder, EmbeddingCache
from bertscore_tm.embedding.embedder import Embedder
from bertscore_tm.embedding.handle import ModelHandle
from bertscore_tm.errors import ArgumentValueError
from bertscore_tm.models.encoder import load_model
from bertscore_tm.models.prompts import MarkedIds
from bertscore_tm.models.tokenizing import PairTokenizer
from bertscore_tm.scoring.baselines import baseline_rows, f_beta_baseline, find_baseline, read_baseline, rescale
from bertscore_tm.scoring.hashcode import HashSignature, names_context
from bertscore_tm.scoring.idf import (
    corpus_weights,
    document_frequency,
    idf_weights,
    mapping_weights,
    plain_weights,
    table_digest,
    unknown_ids,
)
from bertscore_tm.scoring.token_rules import left_blank
from bertscore_tm.settings.config import Config, ScoringSettings


class Scorer:
    """The model, tokenizer, weights policy, baseline and hash signature of one scoring setting."""

    def __init__(self, config: Config) -> None:
        self.config = config
        model, text, scoring = config.model, config.text, config.scoring
        self.all_layers = model.all_layers
        self.idf = scoring.idf
        self.long_texts = text.long_texts
        self.beta: float | None = None if scoring.beta is None else float(scoring.beta)
        loaded = load_model(model, text, progress=config.runtime.verbose)
        #: The Hub commit of the model's files (None: a local folder, the packaged MiniLM, the user's object).
        self.model_commit = loaded.commit
        self.model_name = loaded.name
        #: Whether the model is the user's object (it then runs where it is, never moved).
        self.user_supplied = loaded.user_supplied
        self.encoder = loaded.text_encoder
        self.windows = loaded.windows
        self.model_depth = loaded.depth
        self.num_layers: int = self.model_depth if loaded.num_layers is None else int(loaded.num_layers)
        self.vocab_size = loaded.vocab_size
        self.window_label = loaded.window_label
        #: The model and where it runs: every copy of a metric shares it (`ModelHandle`).
        self.handle = ModelHandle.around(
            loaded.runner,
            self.encoder.pad_id,
            model.all_layers,
            model.model_dtype,
            config.runtime.batch_size,
            hidden_size=loaded.hidden_size,
            depth=self.model_depth if loaded.user_supplied else None,
            windows=self.windows,
            compile_model=model.compile_model,
        )
        cache_mb = config.runtime.embedding_cache_mb
        self.cache = EmbeddingCache(cache_mb << 20) if cache_mb else None
        self.prompts = (text.candidate_prompt, text.reference_prompt)
        #: Token ids left out of the matching (``ignore=``: `token_rules`), or None.
        self.ignored = loaded.ignored
        self.ignore_label = loaded.ignore_label
        #: IDF weights fixed beforehand (idf_texts, idf_weights): the same table on every rank, never summed.
        self.fixed_idf = self._fixed_weights(scoring)
        self.baseline: Tensor | None = None
        if scoring.rescale_with_baseline:
            file = find_baseline(model.lang, self.model_name, scoring.baseline_path)
            self.baseline = baseline_rows(read_baseline(file), self.num_layers, self.all_layers, file, self.model_depth)
        self.signature = self._signature(config)

    @functools.cached_property
    def pairs(self) -> PairTokenizer:
        """Texts to ids with the window and the prompts (a metric's `tokenize`), made on first use."""
        return PairTokenizer(self.encoder, self.prompts)

    def encode_pairs(
        self, cands: Sequence[str], refs: Sequence[str], context: Sequence[str] | None = None, counts: Any = None
    ) -> tuple[MarkedIds, MarkedIds]:
        """Both sides' ids, their prompts' and each pair's `context`'s tokens marked."""
        return self.pairs.encode(cands, refs, context, counts)

    def token_flags(self, *marked: Tensor | None) -> Tensor | None:
        """The ignored-token table the rules take: the mask's; none flagged where only a prompt or a context
        marks tokens (`marked`, one flag per token); None where nothing is left out."""
        if self.ignored is not None or not any(m is not None and bool(m.any()) for m in marked):
            return self.ignored
        return torch.zeros(self.vocab_size, dtype=torch.bool)

    def blank(self, ids: Tensor, marked: Tensor | None, lens: Tensor, flags: Tensor | None) -> Tensor:
        """Which texts (ragged `ids` of these `lens`) score as blank: a blank text, or one the mask, a prompt or a
        context (`flags`, `token_flags`'s table) left no token but the special ones."""
        return self.encoder.is_blank(lens) | left_blank(ids, marked, lens, flags, self.encoder.zero_weight_ids)

    def _fixed_weights(self, s: ScoringSettings) -> Tensor | None:
        if s.idf_texts is not None:
            with warnings.catch_warnings():  # blank or long corpus texts count as the reference counts them
                warnings.simplefilter("ignore")
                return corpus_weights(self.encoder.encode, s.idf_texts, self.vocab_size)
        if s.idf_weights is not None:
            return mapping_weights(s.idf_weights, self.vocab_size)
        return None

    def _signature(self, c: Config) -> HashSignature:
        dtype, prompts = c.model.model_dtype, self.prompts
        return HashSignature(
            self.model_name,
            self.num_layers,
            c.scoring.idf,
            rescaled=c.scoring.rescale_with_baseline,
            custom_baseline=c.scoring.baseline_path is not None,
            fast_tokenizer=self.encoder.is_fast and c.model.use_fast_tokenizer,
            all_layers=c.model.all_layers,
            max_length=self.encoder.max_length if self.encoder.truncates_below_window else None,
            model_dtype=None if dtype == torch.float32 else str(dtype).removeprefix("torch."),
            idf_digest=None if self.fixed_idf is None else table_digest(self.fixed_idf),
            window=self.window_label,
            beta=None if self.beta is None else f"{self.beta:g}",
            ignore=self.ignore_label,
            candidate_prompt=None if prompts[0] is None else repr(prompts[0]),
            reference_prompt=None if prompts[1] is None else repr(prompts[1]),
            no_prefix_space=self.encoder.without_prefix_space,
        )

    @contextlib.contextmanager
    def threads(self) -> Iterator[None]:
        """torch's CPU threads set to the setting's `num_threads` for the work inside (as it was, after)."""
        wanted = self.config.runtime.num_threads
        before = torch.get_num_threads()
        if wanted is not None:
            torch.set_num_threads(wanted)
        try:
            yield
        finally:
            if wanted is not None:
                torch.set_num_threads(before)

    @property
    def hash_code(self) -> str:
        """The setting's hash code."""
        return self.signature.format()

    def signature_for(self, context: bool) -> HashSignature:
        """The signature, flagged ``context`` where some pair had one (it changes scores, though no setting says so)."""
        return dataclasses.replace(self.signature, context=context) if context else self.signature

    def code_with(self, contexts: Sequence[str] | None) -> str:
        """The hash code of scores made under this setting with `contexts` (one per pair, or None)."""
        return self.signature_for(names_context(contexts)).format()

    @property
    def counts_idf(self) -> bool:
        """Whether IDF weights come from document counts over the references scored (not fixed beforehand)."""
        return self.idf and self.fixed_idf is None

    def settings_record(self) -> dict[str, object]:
        """Everything ranks must share to combine their scores."""
        fields = dataclasses.asdict(self.signature)
        del fields["context"]  # data, not a setting: ranks may hold pairs with and without a context
        return {
            **fields,
            "baseline": None if self.baseline is None else self.baseline.tolist(),
            "vocab_size": self.vocab_size,
            "model_depth": self.model_depth,
            "compile_model": self.embedder.compile_model,
        }

    def weights(
        self, doc_freq: Tensor | None = None, num_refs: int | None = None, device: torch.device | str = "cpu"
    ) -> Tensor:
        """Every token id's weight (float64): the fixed IDF table; else, with IDF, that of `doc_freq` over
        `num_refs` references; else 1, and 0 for the special tokens."""
        if self.fixed_idf is not None:
            return self.fixed_idf.to(device)
        if self.idf:
            assert doc_freq is not None and num_refs is not None
            return idf_weights(doc_freq.to(device), num_refs)
        return plain_weights(self.vocab_size, self.encoder.zero_weight_ids, device)

    def reference_weights(self, refs: MarkedIds, num_refs: int) -> Tensor:
        """The weights for scoring against these references as given (IDF counted over them when it is)."""
        if not self.counts_idf:
            return self.weights()
        return self.weights(document_frequency(refs.ids, refs.lens, self.vocab_size, marked=refs.marked), num_refs)

    def check_known_weights(self, ids: Tensor, marked: Tensor | None) -> None:
        """Refuse texts holding a token, not `marked`, that ``idf_weights`` gave no weight (before any state
        changes)."""
        if self.fixed_idf is None:
            return
        unknown = unknown_ids(self.fixed_idf, ids, marked)
        if unknown:
            shown = ", ".join(f"{i} {self.encoder.tokenizer.convert_ids_to_tokens(i)!r}" for i in unknown[:5])
            raise ArgumentValueError(
                f"idf_weights has no weight for {len(unknown)} token id(s) of these texts: {shown}"
                f"{', ...' if len(unknown) > 5 else ''}. Pass a weight for every token id (metric.idf_weights() "
                "gives them all), or a defaultdict whose default weighs the tokens it lacks (bert-score's "
                "get_idf_dict returns one).",
                argument="idf_weights",
                allowed="a weight for every token id of the texts scored",
                value=unknown[:5],
            )

    def rescaled(self, scores: Tensor, row: int | None = None) -> Tensor:
        """`scores` ([..., rows, 3], or 4 with F-beta) rescaled with the baseline (its `row` alone where given),
        F-beta's by `f_beta_baseline`; as they are without a baseline."""
        if self.baseline is None:
            return scores
        baseline = self.baseline if row is None else self.baseline[row : row + 1]
        if scores.shape[-1] == 4:
            baseline = torch.cat((baseline, f_beta_baseline(baseline, self.beta or 1.0)), -1)
        return rescale(scores, baseline)

    @property
    def embedder(self) -> Embedder:
        """The embedder this scorer last asked for (`follow`); before that, the model where it is."""
        return self.handle.current(self)

    def follow(self, device: torch.device | str) -> torch.device:
        """Ask the model's handle for the model on `device` (moved, or copied where another scorer uses it; a
        user's object stays); return where vectors, and so scores, are made."""
        return self.handle.on(device, self).device

    def embedding_source(self) -> Embedder:
        """What texts are embedded with: the embedder, through the cache where there is one."""
        if self.cache is None:
            return self.embedder
        # keyed on what changes a text's vectors beside its ids (the embedder adds its model, device, dtype, ...)
        setting = (self.model_name, self.num_layers, self.all_layers, self.long_texts, self.windows)
        return cast(Embedder, CachingEmbedder(self.embedder, self.cache, (*setting, self.encoder.max_length)))


def build_scorer(arguments: Mapping[str, Any], *, caller: str = "BERTScore") -> Scorer:
    """The scoring core of keyword arguments as `BERTScore` takes them, checked once before anything loads."""
    return Scorer(Config.of(arguments, caller=caller))
