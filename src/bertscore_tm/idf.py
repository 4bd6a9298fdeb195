"""IDF: document frequencies over the references, and the token weights they give.

weight(t) = ln((M + 1) / (df(t) + 1)) with M the number of reference texts and df(t) how many of them
contain t. Counts are plain sums, so they accumulate across `update()` calls and all-reduce across ranks
before any weight is applied. Without IDF every token weighs 1 but the CLS and SEP tokens, which weigh 0.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor


def document_frequency(ids: Tensor, lengths: Tensor, vocab_size: int) -> Tensor:
    """How many of the texts (flat `ids`, split by `lengths`) contain each token id: int64 [vocab_size]."""
    if ids.numel() == 0:
        return torch.zeros(vocab_size, dtype=torch.long, device=ids.device)
    doc = torch.repeat_interleave(torch.arange(len(lengths), device=ids.device), lengths.long().to(ids.device))
    ids = ids.long()
    if int(ids.max()) >= vocab_size or int(ids.min()) < 0:
        raise ValueError(f"token id out of the vocabulary of {vocab_size}: the tokenizer and model disagree")
    pairs = torch.unique(doc * vocab_size + ids)
    return torch.bincount(pairs % vocab_size, minlength=vocab_size)


def without_documents(
    doc_freq: Tensor, num_docs: Tensor, ids: Tensor, lengths: Tensor, vocab_size: int
) -> tuple[Tensor, Tensor]:
    """The counts `doc_freq` and `num_docs` with the texts (flat `ids`, split by `lengths`) taken out again.

    >>> df, n = document_frequency(torch.tensor([1, 2, 2, 3]), torch.tensor([2, 2]), 4), torch.tensor(2)
    >>> df.tolist(), [t.tolist() for t in without_documents(df, n, torch.tensor([2, 3]), torch.tensor([2]), 4)]
    ([0, 1, 2, 1], [[0, 1, 1, 0], 1])
    """
    return doc_freq - document_frequency(ids, lengths, vocab_size), num_docs - len(lengths)


def idf_weights(doc_freq: Tensor, num_docs: int | Tensor) -> Tensor:
    """ln((M + 1) / (df + 1)) for every token id, float64."""
    m = float(num_docs)
    return torch.log((m + 1.0) / (doc_freq.to(torch.float64) + 1.0))


def plain_weights(vocab_size: int, zero_ids: Sequence[int], device: torch.device | str = "cpu") -> Tensor:
    """Weight 1 for every token id but `zero_ids` (CLS, SEP), float64."""
    weights = torch.ones(vocab_size, dtype=torch.float64, device=device)
    if zero_ids:
        weights[torch.tensor(list(zero_ids), dtype=torch.long, device=device)] = 0.0
    return weights
