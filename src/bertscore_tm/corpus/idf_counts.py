"""IDF over a whole corpus, counted once before scoring, so that every worker of a distributed job weighs tokens
alike: a worker counting its own batch would weigh them by that batch alone. Counts are integers, summed
exactly in any order, so the weights equal the Metric's with ``idf=True``, bit for bit."""

from __future__ import annotations

import functools
import itertools
import os
import warnings
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np
import torch

from bertscore_tm.corpus import columns
from bertscore_tm.errors import ArgumentValueError
from bertscore_tm.models.tokenizing import TextEncoder
from bertscore_tm.scoring.idf import document_frequency, idf_weights
from bertscore_tm.scoring.scorer import Scorer
from bertscore_tm.settings import rules
from bertscore_tm.settings.config import Config, groups
from bertscore_tm.settings.texts import check_stream, check_texts

#: Texts tokenised at a time.
CHUNK = 4096
_GROUPS = groups()
#: The settings that do not act on the counts, refused rather than ignored (only the model's tokenizer counts):
#: every scoring and output setting, the runtime's but the CPU threads, and the model's that act on its forward pass.
NOT_COUNTING = (
    *_GROUPS["scoring"],
    *_GROUPS["output"],
    *(name for name in _GROUPS["runtime"] if name != "num_threads"),
    "all_layers",
    "model_dtype",
    "compile_model",
)


def corpus_idf(
    references: Any,
    model_name_or_path: str | os.PathLike[str] | None = None,
    *,
    reference_column: str | Sequence[str] = "reference",
    **metric_arguments: Any,
) -> dict[int, float]:
    """The IDF weight of every token id over `references`, as ``BERTScore(idf=True)`` counts it, to pass as
    ``idf_weights=``. `references`: texts (or lists of texts), a ``datasets.Dataset``, a Ray Dataset, a DataFrame,
    a pyarrow Table or a dict of columns; `metric_arguments` change how texts are tokenised.

    >>> from bertscore_tm import PACKAGED_MINILM
    >>> weights = corpus_idf(["A cat sat.", "A dog ran."], PACKAGED_MINILM)
    >>> round(weights[101], 4), round(weights[4937], 4)  # [CLS] is in both texts, 'cat' in one
    (0.0, 0.4055)
    """
    refs = rules.column_names("reference_column", reference_column)
    module = type(references).__module__
    if not (module.startswith(("ray.data", "datasets")) or _is_table(references)):
        # texts (one string is one text), or lists of texts, read as they come
        references = check_stream([references] if isinstance(references, str) else references, "references")
    arguments = {"model_name_or_path": model_name_or_path, **metric_arguments}
    config = Config.of(arguments, caller="corpus_idf", unused=NOT_COUNTING)
    scorer = Scorer(config.replace(idf=True, device="cpu"))
    encoder, vocab = scorer.encoder, scorer.vocab_size
    counts: Iterable[tuple[np.ndarray, int]]
    if module.startswith("ray.data"):
        counts = _ray_counts(references, refs, encoder, vocab)
    elif module.startswith("datasets") and hasattr(references, "iter"):
        counts = (_count(encoder, vocab, batch, refs) for batch in references.iter(CHUNK))
    elif _is_table(references):  # iterated, a table or a dict would give its column names, not its texts
        counts = _table_counts(references, encoder, vocab, refs)
    else:
        counts = _iterable_counts(references, encoder, vocab)
    doc_freq, num_refs = np.zeros(vocab, dtype=np.int64), 0
    for block, n in counts:  # integers: summed exactly in any order
        doc_freq += block
        num_refs += n
    if num_refs == 0:
        raise ArgumentValueError(
            "corpus_idf: no reference to count (the corpus is empty)",
            argument="references",
            allowed="at least one reference text",
            value=0,
        )
    table = idf_weights(torch.from_numpy(doc_freq), num_refs)
    return dict(enumerate(table.tolist()))


def _is_table(references: object) -> bool:
    try:
        columns.batch_kind(references)
    except TypeError:
        return False
    return True


def _table_counts(table: Any, encoder: TextEncoder, vocab: int, refs: list[str]) -> Iterator[tuple[np.ndarray, int]]:
    kind = columns.batch_kind(table)
    for first in range(0, columns.num_rows(table, kind), CHUNK):
        if kind == "pandas":
            rows = table.iloc[first : first + CHUNK]
        elif kind == "arrow":
            rows = table.slice(first, CHUNK)
        else:
            rows = {name: values[first : first + CHUNK] for name, values in table.items()}
        yield _count(encoder, vocab, rows, refs, first)


def _iterable_counts(references: Iterator[Any], encoder: TextEncoder, vocab: int) -> Iterator[tuple[np.ndarray, int]]:
    first = 0
    while chunk := list(itertools.islice(references, CHUNK)):
        texts = [t for i, item in enumerate(chunk, first) for t in check_texts(item, f"references[{i}]")]
        yield _count_texts(encoder, vocab, texts)
        first += len(chunk)


def _count(encoder: TextEncoder, vocab: int, batch: Any, refs: list[str], first_row: int = 0) -> tuple[np.ndarray, int]:
    kind = columns.batch_kind(batch)
    groups, _ = columns.reference_groups(batch, kind, refs, first_row, "reference_column")
    return _count_texts(encoder, vocab, [t for group in groups for t in group])


def _count_texts(encoder: TextEncoder, vocab: int, texts: list[str]) -> tuple[np.ndarray, int]:
    if not texts:
        return np.zeros(vocab, dtype=np.int64), 0
    with warnings.catch_warnings():  # long or blank references are warned about where they are scored
        warnings.simplefilter("ignore")
        ids, lens = encoder.encode(texts)
    return document_frequency(ids, lens, vocab, marked=None).cpu().numpy(), len(texts)


def _count_block(batch: dict[str, Any], encoder: TextEncoder, vocab: int, refs: list[str]) -> dict[str, np.ndarray]:
    """One Ray block's counts as a one-row batch; the caller sums the rows."""
    doc_freq, n = _count(encoder, vocab, batch, refs)
    return {"doc_freq": doc_freq[None, :], "num_refs": np.array([n], dtype=np.int64)}


def _ray_counts(dataset: Any, refs: list[str], encoder: TextEncoder, vocab: int) -> Iterator[tuple[np.ndarray, int]]:
    """Each block of a Ray Dataset counted where it lies, for the caller to sum."""
    missing = [c for c in refs if c not in dataset.columns()]
    if missing:
        columns.cells({c: [] for c in dataset.columns()}, "mapping", missing[0], "reference_column")
    count = functools.partial(_count_block, encoder=encoder, vocab=vocab, refs=refs)
    counted = dataset.select_columns(refs).map_batches(count, batch_format="numpy", batch_size=CHUNK)
    return (
        (batch["doc_freq"].sum(axis=0), int(batch["num_refs"].sum()))
        for batch in counted.iter_batches(batch_format="numpy", batch_size=None)
    )
