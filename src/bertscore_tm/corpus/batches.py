"""One batch scorer for Ray Data, Hugging Face ``datasets`` and pandas, on the Metric's own scoring code, so
that a pair's scores are the Metric's whatever the batches and workers. The model loads on first use and is
never pickled; IDF per batch would differ by worker, so it is refused. Docs: docs/dataframes.md."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from bertscore_tm.corpus import columns
from bertscore_tm.engines.paired import score_texts
from bertscore_tm.errors import ArgumentValueError
from bertscore_tm.scoring.scorer import Scorer
from bertscore_tm.settings import rules
from bertscore_tm.settings.config import Config

#: Metric arguments about the Metric's own result (reduced means, one tensor, the hash beside it): a batch
#: scorer always adds the per-pair columns, so these are refused rather than ignored (`Config.of`'s unused).
_RESULT_ARGUMENTS = ("reduction", "output", "return_hash")


class BatchScorer:
    """BERTScore of each row's candidate against its reference(s), added as ``<prefix>precision``, ``recall``,
    ``f1`` and, where rows may have several references, ``best_reference``. `several_references` fixes that
    choice for every batch, since Ray Data and ``datasets`` fail on batches of differing columns.
    `metric_arguments` are :class:`BERTScore`'s, checked here before any model loads. Docs: docs/dataframes.md.

    >>> from bertscore_tm import PACKAGED_MINILM
    >>> scorer = BatchScorer(PACKAGED_MINILM)
    >>> rows = scorer({"candidate": ["The cat sat on the mat."], "reference": ["A cat was sitting on the mat."]})
    >>> [round(float(x), 4) for x in rows["bertscore_f1"]]
    [0.9183]
    """

    def __init__(
        self,
        model_name_or_path: str | os.PathLike[str] | None = None,
        *,
        candidate_column: str = "candidate",
        reference_column: str | Sequence[str] = "reference",
        prefix: str = columns.PREFIX,
        several_references: bool | None = None,
        context_column: str | None = None,
        **metric_arguments: Any,
    ) -> None:
        rules.text()("candidate_column", candidate_column)
        rules.text(optional=True)("context_column", context_column)
        self.candidate_column, self.context_column = candidate_column, context_column
        self.reference_columns = rules.column_names("reference_column", reference_column)
        rules.text(blank=True)("prefix", prefix)
        self.prefix = prefix
        self.several_references = _several(several_references, self.reference_columns)
        self.config = _checked_config({"model_name_or_path": model_name_or_path, **metric_arguments})
        self._scorer: Scorer | None = None
        self._home = os.getpid()

    def __getstate__(self) -> dict[str, Any]:
        """Pickled, the arguments travel and the loaded model never does."""
        return {**self.__dict__, "_scorer": None}

    def __call__(self, batch: Any, rank: int | None = None) -> Any:
        """`batch` with the score columns added; `rank` (``datasets.map(..., with_rank=True)``) picks the GPU."""
        return self.score_batch(batch, rank=rank)

    def score_batch(self, batch: Any, first_row: int = 0, rank: int | None = None) -> Any:
        """`batch` with the score columns added; error messages number rows from `first_row`."""
        rules.integer(0)("first_row", first_row)
        RANK("rank", rank)
        kind = columns.batch_kind(batch)
        rows = columns.num_rows(batch, kind)
        cands = columns.texts(batch, kind, self.candidate_column, "candidate_column", first_row)
        groups, several = columns.reference_groups(
            batch, kind, self.reference_columns, first_row, "reference_column", self.several_references
        )
        context = None
        if self.context_column is not None:
            context = columns.contexts(batch, kind, self.context_column, "context_column", first_row)
        names = ["precision", "recall", "f1"] + ([] if self.config.scoring.beta is None else ["f_beta"])
        if rows == 0:
            per = np.zeros((0, len(names) + 1), dtype=np.float32)
        else:
            scorer = self.scorer(rank)
            device = torch.device(scorer.config.runtime.device or "cpu")
            with torch.inference_mode():
                out = score_texts(scorer, cands, groups, device, False, scorer.weights(device=device), context)
            per = out[:, 0, :].cpu().numpy()  # P, R, F (F-beta with beta), then the best reference
        new = {f"{self.prefix}{name}": per[:, i].copy() for i, name in enumerate(names)}
        if several:
            new[f"{self.prefix}best_reference"] = per[:, -1].astype(np.int64)
        stale = columns.stale_scores(columns.column_names(batch, kind), new, self.prefix)
        return columns.with_columns(batch, kind, new, stale)

    def scorer(self, rank: int | None = None) -> Scorer:
        """The scoring core, loaded on first use, once per object and process."""
        RANK("rank", rank)
        if self._scorer is None:
            if os.getpid() != self._home:
                # a copy in another process (datasets' num_proc workers): the processes are the parallelism, and
                # a forked child must not enter torch's OpenMP pool, which did not survive the fork (it hangs)
                torch.set_num_threads(1)
            config = self.config
            if config.runtime.device is None:  # a model object of the user's stays on the CPU; else a GPU by rank
                on_cpu = config.model.model is not None or not torch.cuda.is_available()
                config = config.replace(device="cpu" if on_cpu else f"cuda:{(rank or 0) % torch.cuda.device_count()}")
            self._scorer = Scorer(config)
        return self._scorer

    @property
    def hash_code(self) -> str:
        """The setting's hash code; the `context_column`, not its cells, decides ``_context``, since rows may be scored
        in other processes."""
        return self.scorer().signature_for(self.context_column is not None).format()


#: A worker's number (``datasets.map(..., with_rank=True)``), or None.
RANK = rules.integer(0, optional=True)


def _several(value: object, references: list[str]) -> bool | None:
    if value is not None:
        rules.boolean("several_references", value)
    if value is False and len(references) > 1:
        raise ArgumentValueError(
            "several_references=False, but several reference columns are named: each row has several references",
            argument="several_references",
            allowed="None or True with several reference columns",
            value=value,
            others=("reference_column",),
        )
    return True if len(references) > 1 else value  # type: ignore[return-value]


def _checked_config(arguments: dict[str, Any]) -> Config:
    """The Metric's checks and a batch scorer's own: no result formatting (the columns are its result), IDF fixed."""
    config = Config.of(arguments, caller="BatchScorer", unused=(*_RESULT_ARGUMENTS, "all_layers"))
    if config.scoring.idf and config.scoring.idf_weights is None and config.scoring.idf_texts is None:
        raise ArgumentValueError(
            "idf=True would count document frequencies over each batch alone, and every worker would weigh "
            "tokens differently: count them over the whole corpus first, "
            "weights = bertscore_tm.corpus.corpus_idf(refs, model), and pass "
            "BatchScorer(..., idf=True, idf_weights=weights)",
            argument="idf",
            allowed="idf=True with idf_weights (or idf_texts)",
            value=True,
        )
    return config
