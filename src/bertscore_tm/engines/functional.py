"""The functional API: `bert_score` (the Metric's twin) and `score` (a drop-in for `bert_score.score`). Both run
the paired engine, the very code of the Metric's compute(), so results are identical, with no Metric state made."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch import Tensor

from bertscore_tm.engines.paired import score_texts
from bertscore_tm.errors import ArgumentValueError
from bertscore_tm.scoring.results import Scores, format_scores, scores_of
from bertscore_tm.scoring.scorer import Scorer
from bertscore_tm.settings.arguments import RULES, ForwardFn, IgnoreRule, LongTexts
from bertscore_tm.settings.config import Config
from bertscore_tm.settings.peers import from_torchmetrics
from bertscore_tm.settings.texts import check_contexts, check_pairs


def bert_score(
    preds: str | Sequence[str],
    target: str | Sequence[str | Sequence[str]],
    model_name_or_path: str | os.PathLike[str] | None = None,
    **kwargs: Any,
) -> dict[str, Tensor | str] | Tensor:
    """Score `preds` against `target` in one call: the same arguments and result as :class:`BERTScore`.

    Scores only this process's pairs, even in a distributed job; arguments are checked before the model loads. A
    model object goes in `kwargs` as ``model=..., tokenizer=...``.

    >>> from bertscore_tm import PACKAGED_MINILM
    >>> f1 = bert_score(["The cat sat on the mat."], ["A cat was sitting on the mat."], PACKAGED_MINILM,
    ...                 reduction="mean", output="f1")
    >>> round(float(f1), 4)
    0.9183
    """
    context = kwargs.pop("context", None)
    arguments = from_torchmetrics({"model_name_or_path": model_name_or_path, **kwargs})  # its spellings too
    config = Config.of(arguments, caller="bert_score")
    cands, groups = check_pairs(preds, target, empty=False)
    contexts = check_contexts(context, len(cands))
    scorer = Scorer(config)
    device = torch.device(config.runtime.device or "cpu")
    scores = score_pairs(scorer, cands, groups, device, config.runtime.verbose, contexts)
    per = scores.stacked()
    out = config.output
    per = per.mean(dim=-1) if out.reduction == "mean" else per
    return format_scores(per, out.output, scores.hash_code if out.return_hash else None)


#: `score()`'s argument names that the Metric spells otherwise (bert-score's spellings).
_METRIC_NAMES = {"model_type": "model_name_or_path", "nthreads": "num_threads"}


def score(
    cands: Sequence[str],
    refs: Sequence[str] | Sequence[Sequence[str]],
    model_type: str | None = None,
    num_layers: int | None = None,
    verbose: bool = False,
    idf: bool | Mapping[int, float] = False,
    device: torch.device | str | None = None,
    batch_size: int | None = 64,
    nthreads: int | None = None,
    all_layers: bool = False,
    lang: str | None = None,
    return_hash: bool = False,
    rescale_with_baseline: bool = False,
    baseline_path: str | os.PathLike[str] | None = None,
    use_fast_tokenizer: bool = False,
    *,
    model_dtype: torch.dtype = torch.float32,
    model: torch.nn.Module | None = None,
    tokenizer: Any = None,
    forward_fn: ForwardFn | None = None,
    idf_texts: Sequence[str] | None = None,
    idf_weights: Mapping[int, float] | None = None,
    long_texts: LongTexts = "truncate",
    window_stride: int | None = None,
    compile_model: bool = False,
    beta: float | None = None,
    ignore: IgnoreRule | None = None,
    candidate_prompt: str | None = None,
    reference_prompt: str | None = None,
    context: Sequence[str] | None = None,
    revision: str | None = None,
    local_files_only: bool = False,
    trust_remote_code: bool = False,
    prefix_space: bool = True,
) -> tuple[Tensor, ...] | tuple[tuple[Tensor, ...], str]:
    """BERTScore as `bert_score.score` returns it: ``(P, R, F)``, each ``[N]`` (``[L + 1, N]`` with
    `all_layers`), on the CPU; ``((P, R, F), hash)`` with `return_hash`; F-beta fourth with `beta`.

    The arguments up to `use_fast_tokenizer` are bert-score's, in its order and with its defaults; the keyword-only
    ones are :class:`BERTScore`'s. `refs`: one string or a list of references per candidate (the best counts).

    >>> from bertscore_tm import PACKAGED_MINILM
    >>> (P, R, F), code = score(["The cat sat on the mat."], ["A cat was sitting on the mat."],
    ...                         model_type=PACKAGED_MINILM, return_hash=True)
    >>> [round(float(x), 4) for x in (P[0], R[0], F[0])]
    [0.9316, 0.9053, 0.9183]
    >>> code.split("_version")[0]  # bert-score's default use_fast_tokenizer=False, its code
    'sentence-transformers/all-MiniLM-L6-v2_L5_no-idf'
    """
    # every argument but the texts, under the Metric's names (`model_type` is its `model_name_or_path`)
    arguments = {_METRIC_NAMES.get(k, k): v for k, v in locals().items() if k not in ("cands", "refs", "context")}
    for theirs, ours in _METRIC_NAMES.items():  # bert-score's names, checked under them by the settings' rules
        RULES[ours](theirs, arguments[ours])
    if isinstance(idf, Mapping):  # bert-score's idf_dict: weights given
        if idf_weights is not None:
            raise ArgumentValueError(
                "idf is a dict of weights and idf_weights is given too: pass the weights once",
                argument="idf",
                allowed="True, False or a dict of weights (without idf_weights)",
                value=type(idf).__name__,
                others=("idf_weights",),
            )
        arguments.update(idf=True, idf_weights=idf)
    if model_type is None and lang is None and model is None:  # as bert-score: its lang has no default
        message, allowed = "Either lang or model_type must be given", "a model, or lang"
        raise ArgumentValueError(message, argument="model_type", allowed=allowed, value=None, others=("lang",))
    config = Config.of(arguments, caller="score")  # the hash, where asked for, comes beside the tuple
    cands_list, groups = check_pairs(cands, refs, ("cands", "refs"), empty=False)
    contexts = check_contexts(context, len(cands_list))
    if device is None and model is None:  # a model object runs where it is: it is not the function's to move
        device = "cuda" if torch.cuda.is_available() else "cpu"
    scores = score_pairs(Scorer(config), cands_list, groups, torch.device(device or "cpu"), verbose, contexts)
    out = tuple(t.cpu() for t in scores.stacked().unbind(0))
    return (out, scores.hash_code) if return_hash else out


def score_pairs(
    scorer: Scorer,
    cands: list[str],
    groups: list[list[str]],
    device: torch.device,
    verbose: bool,
    context: list[str] | None = None,
) -> Scores:
    """Each candidate against its references, IDF over these references: the paired engine as compute() runs it."""
    with scorer.threads():
        scores = score_texts(scorer, cands, groups, device, verbose, context=context)
    return scores_of(scores, scorer.all_layers, scorer.code_with(context))
