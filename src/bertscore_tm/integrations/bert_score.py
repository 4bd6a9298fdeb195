"""bert-score's `BERTScorer`: its constructor, its methods (`score`, `compute_idf`, `plot_example`) and its
properties (`hash`, `baseline_vals`, ...) with bert-score's meaning, over this package's scoring core, so a script
written for bert-score runs with the import changed. Its `score` is `bertscore_tm.score` with the model kept
loaded between calls; the scores are bert-score's run unpadded (docs/migrating.md)."""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor

from bertscore_tm.engines.paired import score_texts
from bertscore_tm.errors import ArgumentValueError
from bertscore_tm.metric.bertscore import BERTScore
from bertscore_tm.scoring.idf import corpus_weights
from bertscore_tm.settings.config import Config
from bertscore_tm.settings.rules import boolean, integer
from bertscore_tm.settings.rules import path as path_rule
from bertscore_tm.settings.texts import check_pairs, check_text, check_texts


class BERTScorer:
    """A scorer of one setting, its model loaded once: bert-score's `BERTScorer`, with its arguments in its order
    (`nthreads`: torch's CPU threads while scoring; `idf=True` weighs with the IDF of `idf_sents`, or of the
    sentences given to `compute_idf`, as bert-score's does).

    >>> from bertscore_tm import PACKAGED_MINILM, BERTScorer
    >>> scorer = BERTScorer(model_type=PACKAGED_MINILM)
    >>> P, R, F = scorer.score(["The cat sat on the mat."], ["A cat was sitting on the mat."])
    >>> round(float(F[0]), 4), scorer.hash.split("_version")[0]
    (0.9183, 'sentence-transformers/all-MiniLM-L6-v2_L5_no-idf')
    """

    def __init__(
        self,
        model_type: str | os.PathLike[str] | None = None,
        num_layers: int | None = None,
        batch_size: int | None = 64,
        nthreads: int | None = None,
        all_layers: bool = False,
        idf: bool = False,
        idf_sents: Sequence[str] | None = None,
        device: torch.device | str | None = None,
        lang: str | None = None,
        rescale_with_baseline: bool = False,
        baseline_path: str | os.PathLike[str] | None = None,
        use_fast_tokenizer: bool = False,
    ) -> None:
        if model_type is None and lang is None:
            raise ArgumentValueError(
                "Either lang or model_type must be given",
                argument="model_type",
                allowed="a model, or lang",
                value=None,
                others=("lang",),
            )
        boolean("idf", idf)
        integer(0, optional=True)("nthreads", nthreads)  # under bert-score's name; the setting's is num_threads
        sents = None if idf_sents is None else check_texts(idf_sents, "idf_sents", empty=False)
        arguments = {
            "model_name_or_path": model_type,
            "num_layers": num_layers,
            "batch_size": batch_size,
            "num_threads": nthreads,
            "all_layers": all_layers,
            "idf": idf,  # the hash code's `_idf`, as bert-score's; the weights are this scorer's own (compute_idf)
            "device": device if device is not None else ("cuda" if torch.cuda.is_available() else "cpu"),
            "lang": lang,
            "rescale_with_baseline": rescale_with_baseline,
            "baseline_path": baseline_path,
            "use_fast_tokenizer": use_fast_tokenizer,
        }
        self._config = Config.of(arguments, caller="BERTScorer")
        self._metric = BERTScore.from_config(self._config)
        self._weights: Tensor | None = None
        self._plain: BERTScore | None = None
        if sents is not None:
            self.compute_idf(sents)

    # -- bert-score's properties --------------------------------------------------------------------------------
    @property
    def model_type(self) -> str:
        return self._metric.model_name

    @property
    def num_layers(self) -> int:
        return self._metric.num_layers

    @property
    def lang(self) -> str | None:
        return self._config.model.lang

    @property
    def idf(self) -> bool:
        return self._config.scoring.idf

    @property
    def rescale_with_baseline(self) -> bool:
        return self._config.scoring.rescale_with_baseline

    @property
    def use_fast_tokenizer(self) -> bool:
        return self._config.model.use_fast_tokenizer

    @property
    def baseline_vals(self) -> Tensor:
        """The rescale baseline's P, R, F of the layer ([3]; [L + 1, 1, 3] with all_layers, as bert-score's)."""
        baseline = self._metric.baseline
        if baseline is None:
            raise ArgumentValueError(
                "baseline_vals: this scorer does not rescale (rescale_with_baseline=False)",
                argument="rescale_with_baseline",
                allowed="True",
                value=False,
            )
        return baseline[:, None, :] if self._config.model.all_layers else baseline[0]

    @property
    def hash(self) -> str:
        """The setting's hash code, bert-score's for the same arguments."""
        return self._metric.hash_code

    # -- bert-score's methods -----------------------------------------------------------------------------------
    def compute_idf(self, sents: Sequence[str]) -> None:
        """The IDF weights of `sents` (each a document), as bert-score's `get_idf_dict` counts them; the weights a
        later `score` uses with `idf=True` (computed again: a warning, as bert-score's)."""
        texts = check_texts(sents, "sents", empty=False)
        if self._weights is not None:
            warnings.warn("Overwriting the previous importance weights.", stacklevel=2)
        scorer = self._metric.scorer
        with warnings.catch_warnings():  # long or blank texts count as the reference counts them
            warnings.simplefilter("ignore")
            self._weights = corpus_weights(scorer.encoder.encode, texts, scorer.vocab_size)

    def score(
        self, cands: Sequence[str], refs: Sequence[str] | Sequence[Sequence[str]], verbose: bool = False,
        batch_size: int | None = 64, return_hash: bool = False,
    ) -> Any:  # fmt: skip
        """``(P, R, F)`` of each candidate against its reference(s) (the best of several), each ``[N]`` on the
        CPU (``[L + 1, N]`` with all_layers); ``((P, R, F), hash)`` with `return_hash`. `batch_size` caps the texts
        of a forward pass for this call (the scores never depend on it)."""
        boolean("verbose", verbose)
        boolean("return_hash", return_hash)
        integer(1, optional=True)("batch_size", batch_size)
        cands_list, groups = check_pairs(cands, refs, ("cands", "refs"), empty=False)
        scorer = self._metric.scorer
        weights = None
        if self.idf:
            if self._weights is None:
                raise ArgumentValueError(
                    "IDF weights are not computed: pass idf_sents= or call compute_idf(sentences) first, as "
                    "bert-score's BERTScorer needs",
                    argument="idf_sents",
                    allowed="the sentences to count the IDF over",
                    value=None,
                )
            weights = self._weights
        device = torch.device(self._config.runtime.device or "cpu")
        embedder = scorer.embedder
        shipped, embedder.batch_size = embedder.batch_size, batch_size
        try:
            with scorer.threads():
                per = score_texts(
                    scorer, cands_list, groups, device, verbose, None if weights is None else weights.to(device)
                )
        finally:
            embedder.batch_size = shipped
        p, r, f = (per[..., k].T.squeeze(0).cpu() for k in range(3))  # [rows, N] -> [N] for one layer
        out = (p, r, f)
        return (out, self.hash) if return_hash else out

    def plot_example(self, candidate: str, reference: str, fname: str | os.PathLike[str] = "") -> Any:
        """The heatmap of the pair's token similarities saved to `fname` (its format from the extension), as
        `bertscore-tm show` draws it; bert-score shows it on screen where `fname` is empty, so here one is needed."""
        check_text(candidate, "candidate")
        check_text(reference, "reference")
        if isinstance(fname, str) and not fname.strip():
            raise ArgumentValueError(
                "plot_example(candidate, reference, fname='out.png'): give the file to save the plot to (bert-score "
                "shows it on screen without one)",
                argument="fname",
                allowed="a file name",
                value=fname,
            )
        path_rule()("fname", fname)
        from bertscore_tm.reports.similarity_plot import plot_similarity

        if self._plain is None:  # bert-score plots without IDF weights
            self._plain = BERTScore.from_config(self._config.replace(idf=False, all_layers=False))
        return plot_similarity(self._plain, candidate, reference, fname)
