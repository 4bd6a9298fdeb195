"""IDF: weight(t) = ln((M + 1) / (df(t) + 1)) over M reference texts. Counts are plain sums, so they add up
across updates and ranks before any weight is applied; a table fixed beforehand (``idf_texts``, ``idf_weights``)
is the same on every rank and never summed."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Mapping, Sequence

import torch
from torch import Tensor

from bertscore_tm.errors import ArgumentValueError


def document_frequency(ids: Tensor, lengths: Tensor, vocab_size: int, *, marked: Tensor | None) -> Tensor:
    """How many texts (flat `ids` split by `lengths`) contain each id: int64 [vocab_size]; the `marked` tokens
    (a prompt's, a context's; None: none) are not counted."""
    doc = torch.repeat_interleave(torch.arange(len(lengths), device=ids.device), lengths.long().to(ids.device))
    ids = ids.long()
    if marked is not None:
        counted = ~marked.to(ids.device)
        doc, ids = doc[counted], ids[counted]
    if ids.numel() == 0:
        return torch.zeros(vocab_size, dtype=torch.long, device=ids.device)
    if int(ids.max()) >= vocab_size:
        raise ValueError(f"token id out of the vocabulary of {vocab_size}: the tokenizer and model disagree")
    pairs = torch.unique(doc * vocab_size + ids)
    return torch.bincount(pairs % vocab_size, minlength=vocab_size)


def without_documents(
    doc_freq: Tensor, num_docs: Tensor, ids: Tensor, lengths: Tensor, vocab_size: int, marked: Tensor | None
) -> tuple[Tensor, Tensor]:
    """The counts with these texts taken out again."""
    return doc_freq - document_frequency(ids, lengths, vocab_size, marked=marked), num_docs - len(lengths)


def idf_weights(doc_freq: Tensor, num_docs: int | Tensor) -> Tensor:
    """The one IDF formula, float64; `num_docs` a tensor where each token's documents differ (MBR's groups).

    >>> idf_weights(torch.tensor([0, 1, 3]), 3)
    tensor([1.3863, 0.6931, 0.0000], dtype=torch.float64)
    """
    m = num_docs if isinstance(num_docs, Tensor) and num_docs.dim() else float(num_docs)
    return torch.log((m + 1.0) / (doc_freq.to(torch.float64) + 1.0))


def plain_weights(vocab_size: int, zero_ids: Sequence[int], device: torch.device | str = "cpu") -> Tensor:
    """Weight 1 for every token id but `zero_ids` (CLS, SEP), float64."""
    weights = torch.ones(vocab_size, dtype=torch.float64, device=device)
    if zero_ids:
        weights[torch.tensor(list(zero_ids), dtype=torch.long, device=device)] = 0.0
    return weights


def corpus_weights(
    encode: Callable[[Sequence[str]], tuple[Tensor, Tensor]], texts: Sequence[str], vocab_size: int, chunk: int = 4096
) -> Tensor:
    """IDF over a corpus of its own (``idf_texts``, bert-score's ``idf_sents``), each text tokenised as a
    scored one; `encode` gives flat ids and lengths, a chunk at a time."""
    doc_freq = torch.zeros(vocab_size, dtype=torch.long)
    for start in range(0, len(texts), chunk):
        ids, lengths = encode(texts[start : start + chunk])
        doc_freq += document_frequency(ids, lengths, vocab_size, marked=None).cpu()
    return idf_weights(doc_freq, len(texts))


def mapping_weights(weights: Mapping[int, float], vocab_size: int) -> Tensor:
    """A float64 table from a mapping id -> weight (bert-score's idf_dict): ids it lacks get its default (a
    ``defaultdict``'s), else NaN, unknown (`unknown_ids`)."""
    factory = getattr(weights, "default_factory", None)
    table = torch.full((vocab_size,), float(factory()) if callable(factory) else math.nan, dtype=torch.float64)
    ids = torch.tensor([int(i) for i in weights], dtype=torch.long)
    if ids.numel() and int(ids.max()) >= vocab_size:
        raise ArgumentValueError(
            f"idf_weights has token id {int(ids.max())}, past the tokenizer's vocabulary of {vocab_size} ids: "
            "were the weights made for another tokenizer?",
            argument="idf_weights",
            allowed=f"token ids 0 to {vocab_size - 1}",
            value=int(ids.max()),
        )
    table[ids] = torch.tensor([float(w) for w in weights.values()], dtype=torch.float64)
    return table


def table_digest(table: Tensor) -> str:
    """Eight hex digits naming a weight table, for the hash code."""
    return hashlib.sha1(table.to(torch.float64).cpu().numpy().tobytes()).hexdigest()[:8]


def unknown_ids(table: Tensor, ids: Tensor, marked: Tensor | None) -> list[int]:
    """The distinct ids among `ids` whose weight in `table` is unknown (NaN), in increasing order; the `marked`
    tokens (a prompt's, a context's) weigh 0 whatever the table says."""
    ids = ids.long().cpu()
    if marked is not None:
        ids = ids[~marked.cpu()]
    unknown = torch.isnan(table[ids])
    return torch.unique(ids[unknown]).tolist()
