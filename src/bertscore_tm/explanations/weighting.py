"""An explanation's weights and weak-word threshold, apart from the engine so that the command line's
`explain` and `compare --html` build the weights once for many pairs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from torch import Tensor

from bertscore_tm.errors import BERTScoreError
from bertscore_tm.explanations.types import Threshold
from bertscore_tm.models.prompts import MarkedIds, prompted_ids
from bertscore_tm.scoring.baselines import baseline_rows, find_baseline, read_baseline
from bertscore_tm.scoring.scorer import Scorer


@dataclass(frozen=True)
class Weighting:
    """The weight of every token id (float64, on the CPU) and, in words, where the weights come from."""

    table: Tensor
    note: str


def weighting(
    scorer: Scorer,
    groups: Sequence[Sequence[str]],
    idf_references: Sequence[str] | None = None,
    counts: tuple[Tensor, Tensor] | None = None,
) -> Weighting:
    """The weights an explanation uses: the setting's where fixed; with IDF counted, over `idf_references`
    (a corpus run's, so that it matches its scores), else the document `counts`, else the pairs' own references."""
    if not scorer.idf:
        return Weighting(scorer.weights().cpu(), "plain: every token weighs 1, the CLS and SEP tokens 0")
    if not scorer.counts_idf:
        return Weighting(scorer.weights().cpu(), "IDF fixed beforehand (idf_texts or idf_weights)")
    if counts is not None and idf_references is None:
        doc_freq, num_refs = counts
        note = f"IDF over the metric's {int(num_refs)} references"
        return Weighting(scorer.weights(doc_freq.cpu(), int(num_refs)).cpu(), note)
    if idf_references is not None:
        refs, note = list(idf_references), f"IDF over the {len(idf_references)} references of idf_references"
    else:
        refs = [r for group in groups for r in group]
        note = f"IDF over the pair's own {len(refs)} reference(s) (idf_references= counts over a corpus)"
    prompt = scorer.prompts[1]  # counted as the paired scores count it: with the reference prompt, its tokens marked
    if prompt is None:
        ids = MarkedIds.plain(*scorer.encoder.encode(refs))
    else:
        ids = prompted_ids(scorer.encoder, refs, prompt, None, "reference_prompt")[0]
    return Weighting(scorer.reference_weights(ids, len(refs)).cpu(), note)


def weak_threshold(scorer: Scorer, layer: int, threshold: float | None) -> Threshold:
    """Below what support a word is weak: `threshold`; else the layer's rescale baseline (P for the
    candidate's words, R for the reference's), the setting's or the packaged one; else none."""
    if threshold is not None:
        return Threshold(threshold, threshold, "given (threshold)")
    if scorer.baseline is not None:
        row = scorer.baseline[layer] if scorer.all_layers else scorer.baseline[0]
        return Threshold(float(row[0]), float(row[1]), f"the rescale baseline of layer {layer}")
    try:
        file = find_baseline(scorer.config.model.lang, scorer.model_name, None)
        row = baseline_rows(read_baseline(file), layer, False, file)[0]
    except (BERTScoreError, ValueError, OSError):
        return Threshold(None, None, "none: no baseline is known for this model and layer (give a threshold)")
    return Threshold(float(row[0]), float(row[1]), f"the packaged baseline of layer {layer}")
