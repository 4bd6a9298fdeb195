"""The door from mbrs: the metric ``"bertscore_tm"`` in mbrs's registry, so that its decoders (MBR, pruning,
probabilistic...) and ``mbrs-decode`` / ``mbrs-score`` use it by name, scored by this package's engines: every
pairwise matrix by the all-pairs engine (each distinct text embedded once, matched in batched tiles), paired
scores by the Metric.

Its configuration is that of mbrs's own ``bertscore`` (a YAML file written for it works with ``metric:
bertscore_tm``), with our meanings where it had none: ``idf`` without ``idf_sents`` counts IDF over each call's
references, ``nthreads`` sets torch's threads for each call, and a ``source`` (BERTScore takes none) is refused
rather than ignored. Importing this module registers the metric where mbrs is installed; ``mbrs-decode
--plugin_dir "$(python -c 'from bertscore_tm.integrations.mbrs import plugin_dir; print(plugin_dir())')"`` does
it for the command line. Usage and the differences: docs/migrating.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from bertscore_tm.errors import ArgumentValueError
from bertscore_tm.integrations.common import missing_peer, torch_threads
from bertscore_tm.settings.rules import boolean

#: The name mbrs's registry knows this metric by (``--metric bertscore_tm``).
NAME = "bertscore_tm"


def plugin_dir() -> str:
    """The folder to give ``mbrs-decode`` / ``mbrs-score`` as ``--plugin_dir``: importing it registers ``NAME``."""
    return str(Path(__file__).resolve().parent / "mbrs_plugin" / "bertscore_tm_mbrs")


def no_source(source: object) -> None:
    """BERTScore compares a hypothesis with references only: a source is refused, never silently dropped."""
    if source is not None:
        raise ArgumentValueError(
            "BERTScore takes no source (it compares each hypothesis with references only): leave out the source "
            "(mbrs-decode's --source) with --metric bertscore_tm",
            argument="source",
            allowed="None",
            value=source,
        )


def metric_arguments(cfg: Any) -> dict[str, Any]:
    """`BERTScore`'s arguments for an mbrs configuration (its fields are those of mbrs's own BERTScore)."""
    for name in ("idf", "rescale_with_baseline", "use_fast_tokenizer", "fp16", "bf16", "cpu"):
        boolean(name, getattr(cfg, name))
    if cfg.fp16 and cfg.bf16:
        raise ArgumentValueError(
            "fp16 and bf16 are both set: choose one 16-bit type (or neither, for exact float32)",
            argument="fp16",
            allowed="at most one of fp16 and bf16",
            value=True,
            others=("bf16",),
        )
    dtype = torch.float16 if cfg.fp16 else torch.bfloat16 if cfg.bf16 else torch.float32
    return {
        "model_name_or_path": cfg.model_type,
        "num_layers": cfg.num_layers,
        "lang": cfg.lang,
        "idf": cfg.idf,
        "idf_texts": cfg.idf_sents,
        "rescale_with_baseline": cfg.rescale_with_baseline,
        "use_fast_tokenizer": cfg.use_fast_tokenizer,
        "baseline_path": cfg.baseline_path,
        "batch_size": cfg.batch_size,
        "model_dtype": dtype,
        "device": "cpu" if cfg.cpu or not torch.cuda.is_available() else "cuda",
    }


if find_spec("mbrs") is not None:
    from mbrs.metrics import register
    from mbrs.metrics.base import MetricCacheable
    from mbrs.metrics.bertscore import BERTScoreScoreType
    from simple_parsing.helpers.fields import choice

    def score_field(score_type: object) -> str:
        """``"precision"``, ``"recall"`` or ``"f1"`` for a score type given as mbrs's enum, its number or its name."""
        try:
            return (
                BERTScoreScoreType[score_type] if isinstance(score_type, str) else BERTScoreScoreType(score_type)
            ).name
        except (KeyError, ValueError):
            raise ArgumentValueError(
                f"score_type must be precision, recall or f1 (or 0, 1, 2), got {score_type!r}",
                argument="score_type",
                allowed="precision | recall | f1",
                value=score_type,
            ) from None

    @register(NAME)
    class MetricBERTScoreTM(MetricCacheable):
        """BERTScore in mbrs's interface over `bertscore_tm.BERTScore`: ``pairwise_scores`` is its all-pairs
        engine, ``scores`` its paired scores; ``encode`` keeps the texts (the cache mbrs's decoders pass back)."""

        @dataclass
        class Config(MetricCacheable.Config):
            """mbrs's BERTScore fields (``--metric.score_type f1``, ``--metric.model_type ...``)."""

            score_type: BERTScoreScoreType = choice(BERTScoreScoreType, default=BERTScoreScoreType.f1)  # noqa: RUF009
            model_type: str | None = None
            num_layers: int | None = None
            batch_size: int = 64
            nthreads: int = 4
            idf: bool = False
            idf_sents: list[str] | None = None
            lang: str | None = None
            rescale_with_baseline: bool = False
            baseline_path: str | None = None
            use_fast_tokenizer: bool = False
            fp16: bool = False
            bf16: bool = False
            cpu: bool = False

        @dataclass
        class Cache(MetricCacheable.Cache):
            """The encoded sentences are the sentences: the engines embed each distinct text once per call."""

            texts: list[str]

            def __len__(self) -> int:
                return len(self.texts)

            def __getitem__(self, key: Any) -> MetricBERTScoreTM.Cache:
                if isinstance(key, Tensor):
                    key = key.nonzero().flatten().tolist() if key.dtype == torch.bool else key.flatten().tolist()
                if isinstance(key, slice):
                    return type(self)(self.texts[key])
                if isinstance(key, int):
                    return type(self)([self.texts[key]])
                return type(self)([self.texts[int(k)] for k in key])

            def repeat(self, n: int) -> MetricBERTScoreTM.Cache:
                return type(self)(self.texts * n)

        def __init__(self, cfg: MetricBERTScoreTM.Config) -> None:
            super().__init__(cfg)
            from bertscore_tm.metric.bertscore import BERTScore

            self.field = score_field(cfg.score_type)
            with torch_threads(cfg.nthreads):
                self.metric = BERTScore(**metric_arguments(cfg))

        @property
        def device(self) -> torch.device:
            """Where the model runs, and where the scores are returned."""
            return self.metric.device

        @property
        def embed_dim(self) -> int:
            """The model's hidden size."""
            model: Any = self.metric.embedder.model  # a model the metric loaded: a transformers model
            return int(model.config.hidden_size)

        def encode(self, sentences: list[str]) -> MetricBERTScoreTM.Cache:
            """The sentences, kept for the scoring calls (embedding happens there, each distinct text once)."""
            return self.Cache(list(sentences))

        def out_proj(self, hypotheses_ir: Cache, references_ir: Cache, sources_ir: Cache | None = None) -> Tensor:
            """The paired score of each hypothesis with the reference at its position ([N])."""
            no_source(sources_ir)
            with torch_threads(self.cfg.nthreads):
                self.metric.update(hypotheses_ir.texts, references_ir.texts)
                try:
                    scores = self.metric.compute_scores()
                finally:
                    self.metric.reset()
            return getattr(scores, self.field).to(self.device)

        def pairwise_scores_from_ir(
            self, hypotheses_ir: Cache, references_ir: Cache, source_ir: Cache | None = None
        ) -> Tensor:
            """Every hypothesis against every reference ([H, R]), by the all-pairs engine."""
            no_source(source_ir)
            with torch_threads(self.cfg.nthreads):
                matrices = self.metric.pairwise(hypotheses_ir.texts, references_ir.texts)
            assert isinstance(matrices, dict)  # the metric's own output setting: the dict of all three
            return torch.as_tensor(matrices[self.field]).to(self.device)

        def pairwise_scores(self, hypotheses: list[str], references: list[str], source: str | None = None) -> Tensor:
            """Every hypothesis against every reference ([H, R]); IDF (where counted) over these references."""
            no_source(source)
            return self.pairwise_scores_from_ir(self.encode(hypotheses), self.encode(references))

else:
    __getattr__ = missing_peer(__name__, "mbrs", "mbrs==0.1.8", ("MetricBERTScoreTM",))
