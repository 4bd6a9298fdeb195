"""What a `BERTScore` Metric tells about its setting, read from its scoring core: the hash code, the embedder
and its cache, the window rule, the baseline, the tokenizer and IDF weights; and what its model and settings do
to other texts, its state left alone (explanations, all pairs, MBR). A mixin, so that the Metric's module holds
the torchmetrics protocol alone."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor

from bertscore_tm.embedding.cache import EmbeddingCache
from bertscore_tm.embedding.embedder import Embedder
from bertscore_tm.engines.mbr import select
from bertscore_tm.engines.pairwise import pairwise_scores
from bertscore_tm.models.windows import WindowRule
from bertscore_tm.scoring.hashcode import HashSignature
from bertscore_tm.scoring.results import format_scores
from bertscore_tm.scoring.scorer import Scorer

if TYPE_CHECKING:
    from bertscore_tm.explanations.types import PairExplanation


class SettingViews:
    """Read-only views of `self.scorer` (and, for IDF, of the counts in `self.doc_freq` / `self.num_refs`)."""

    scorer: Scorer
    idf: bool
    doc_freq: Tensor
    num_refs: Tensor
    context_seen: Tensor
    output: str | None
    return_hash: bool
    verbose: bool
    if TYPE_CHECKING:  # the Metric's own (torchmetrics'); declared here for the type checker only

        @property
        def device(self) -> torch.device: ...

    @property
    def signature(self) -> HashSignature:
        """The hash code's fields: the setting's, and ``context`` where a pair of the state had a context."""
        return self.scorer.signature_for(bool(self.context_seen))

    @property
    def hash_code(self) -> str:
        """The hash code of the scores this metric computes, in the reference's format where they equal the
        reference's; ``_context`` once an update carried a context (until `reset()`)."""
        return self.signature.format()

    @property
    def model_commit(self) -> str | None:
        """The Hugging Face Hub commit the model's files are of, to report beside the scores (None for a local
        folder, the packaged MiniLM or a model object of your own)."""
        return self.scorer.model_commit

    @property
    def embedder(self) -> Embedder:
        """The frozen embedding model and its batching (outside the module tree)."""
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
        """The long-text window rule in use, or None (truncation, or a model without a window)."""
        return self.scorer.windows

    @property
    def baseline(self) -> Tensor | None:
        """The rescale baseline rows in use ([1, 3] for the layer, [L + 1, 3] with all_layers), or None."""
        return self.scorer.baseline

    def token_ids(self, text: str) -> Tensor:
        """The token ids this metric scores for `text`: stripped, with special tokens, truncated to the window
        unless long_texts="window" (int32)."""
        return self.scorer.encoder.encode([text])[0]

    @property
    def tokenizer(self) -> Any:
        """The Hugging Face tokenizer, set up as the reference uses it."""
        return self.scorer.encoder.tokenizer

    def idf_weights(self) -> dict[int, float]:
        """The IDF weight of every token id, as a dict to save and pass as ``idf_weights=`` of another metric
        with the same tokenizer (it then scores exactly as this one): the fixed table of ``idf_texts`` or
        ``idf_weights`` (unknown ids left out), else this process's references' counts so far."""
        if not self.idf:
            raise RuntimeError("idf_weights(): this metric has idf=False, so it weighs no token by IDF")
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
        """Why this metric scores `candidate` against `references` (one text or several) as it does: token by
        token, with this metric's model and setting (docs/explain.md). The state is left alone. `context`: the
        pair's context, as `update(..., context=)` takes it (its tokens shown with the role ``"context"``).

        With IDF counted over references, the IDF is over `idf_references` where given, else over the
        references this metric holds so far (this process's), so that an explanation matches the corpus run's
        scores; a metric holding none counts it over the pair's own references. `threshold` sets below what
        support a word is weak (default: the layer's rescale baseline where one is known); `layer` picks a layer
        of an ``all_layers=True`` metric.

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

    # -- all pairs and MBR: this metric's model and settings, its accumulated state left alone --------------
    def pairwise(self, cands: str | Sequence[str], refs: str | Sequence[str]) -> dict[str, Tensor | str] | Tensor:
        """Every candidate against every reference: ``{"precision", "recall", "f1"}`` each ``[N, M]``
        (``[L + 1, N, M]`` with all_layers; ``f_beta`` too with a beta), entry (i, j) this metric's score of
        ``cands[i]`` against ``refs[j]``; IDF (if on) over these M references. Honours ``output`` and
        ``return_hash`` (the setting's code: no context is used here), not ``reduction``; reuses the loaded model
        and never touches the state (see `bertscore_tm.engines.pairwise`)."""
        per = pairwise_scores(self.scorer, cands, refs, self.device, verbose=self.verbose)
        return format_scores(per, self.output, self.scorer.hash_code if self.return_hash else None)

    def mbr_select(
        self,
        groups: Sequence[Sequence[str]],
        references: Sequence[Sequence[str]] | None = None,
        return_utilities: bool = False,
        utility: str = "f1",
    ) -> list[int] | tuple[list[int], list[Tensor]]:
        """Minimum-Bayes-risk choice per group with this metric's model and settings: see
        :func:`bertscore_tm.mbr_select` (`utility`: ``"f1"``, ``"f_beta"`` with this metric's beta,
        ``"precision"`` or ``"recall"``). Never touches the state."""
        return select(
            self.scorer, self.device, groups, references, return_utilities, verbose=self.verbose, utility=utility
        )
