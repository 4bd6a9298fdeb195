"""The functional API: `bert_score` (torchmetrics-style twin of the Metric) and `score` (a drop-in for
`bert_score.score`). Both run the Metric itself, so all logic is shared and results are identical.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor

from bertscore_tm.metric import BERTScore


def bert_score(
    preds: str | Sequence[str],
    target: str | Sequence[str | Sequence[str]],
    model_name_or_path: str | os.PathLike[str] | None = None,
    **kwargs: Any,
) -> dict[str, Tensor | str] | Tensor:
    """Score `preds` against `target` in one call: the same arguments and result as :class:`BERTScore`.

    Scores only this process's pairs, also inside a distributed job (it never waits on other ranks).
    """
    kwargs.setdefault("sync_on_compute", False)
    metric = BERTScore(model_name_or_path=model_name_or_path, **kwargs)
    metric.update(preds, target)
    return metric.compute()


def score(
    cands: Sequence[str],
    refs: Sequence[str] | Sequence[Sequence[str]],
    model_type: str | None = None,
    num_layers: int | None = None,
    idf: bool = False,
    lang: str | None = None,
    rescale_with_baseline: bool = False,
    baseline_path: str | os.PathLike[str] | None = None,
    all_layers: bool = False,
    batch_size: int | None = 64,
    return_hash: bool = False,
    device: torch.device | str | None = None,
    verbose: bool = False,
    model_dtype: torch.dtype = torch.float32,
    long_texts: str = "truncate",
    window_stride: int | None = None,
) -> tuple[Tensor, Tensor, Tensor] | tuple[tuple[Tensor, Tensor, Tensor], str]:
    """BERTScore of candidates against references, as `bert_score.score` returns it: ``(P, R, F)``, each
    ``[N]`` (``[L + 1, N]`` with `all_layers`), on the CPU; ``((P, R, F), hash)`` with `return_hash`.

    `refs` may hold one string per candidate or a list of references per candidate (the best is taken).
    `long_texts="window"` scores texts longer than the model's window whole (see :class:`BERTScore`).
    """
    if model_type is None and lang is None:
        raise ValueError("Either lang or model_type must be given")
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    metric = BERTScore(
        model_name_or_path=model_type,
        num_layers=num_layers,
        all_layers=all_layers,
        lang=lang,
        idf=idf,
        rescale_with_baseline=rescale_with_baseline,
        baseline_path=baseline_path,
        batch_size=batch_size,
        device=device,
        model_dtype=model_dtype,
        long_texts=long_texts,
        window_stride=window_stride,
        verbose=verbose,
        sync_on_compute=False,  # a function call scores its own pairs, even inside a distributed job
    )
    metric.update(list(cands), list(refs))
    result = metric.compute()
    assert isinstance(result, dict)
    out = (result["precision"].cpu(), result["recall"].cpu(), result["f1"].cpu())
    if return_hash:
        return out, metric.hash_code
    return out
