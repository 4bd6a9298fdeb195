"""Which saved Metric states this setting can use: digests of a setting, and the checks made when a state is
loaded or merged.

A Metric's state holds token ids (made by a tokenisation) and kept best similarities (made by an embedding).
A state saved under another setting is refused where its token ids cannot be scored here, and its kept
similarities are dropped (to be made again) where another embedding made them; IDF and rescaling act only on
kept similarities at compute(), so a state that differs in them alone keeps everything. The digests travel with
the state in the Metric's extra state (`BERTScore.get_extra_state`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch import Tensor

from bertscore_tm.distributed.ranks import settings_digest
from bertscore_tm.errors import SettingsMismatchError
from bertscore_tm.metric.states import as_bits, cat_state, pair_count
from bertscore_tm.scoring.idf import document_frequency
from bertscore_tm.scoring.scorer import Scorer

#: The settings that act only on kept best similarities, at compute(): a state loaded from a metric that
#: differs in these alone keeps its similarities.
APPLIED_AT_COMPUTE = frozenset({"idf", "idf_digest", "rescaled", "custom_baseline", "baseline", "beta"})

#: Digests of a setting: of what makes the token ids, and of what makes the per-token best similarities.
Digests = tuple[int, int]


def setting_digests(scorer: Scorer) -> Digests:
    """Two digests: of what makes the token ids (`TextEncoder.digest`: the tokenizer, and max_length where texts
    are truncated), and of what makes a text's vectors and so the per-token best similarities: the setting less
    what acts only on the kept similarities at compute() (IDF, rescaling)."""
    embedding = {k: v for k, v in scorer.settings_record().items() if k not in APPLIED_AT_COMPUTE}
    return scorer.encoder.digest, settings_digest(embedding)


def check_loadable(scorer: Scorer, states: Mapping[str, Any], saved: Digests | None) -> bool:
    """Refuse (before any state changes) states whose token ids another tokenisation made, or whose IDF counts
    span another vocabulary; return whether their kept similarities are usable here (the same embedding).
    States without digests (`saved` None: saved before they existed) are taken as of this setting."""
    own_tokens, own_embedding = setting_digests(scorer)
    saved_tokens, saved_embedding = (own_tokens, own_embedding) if saved is None else saved
    pairs = pair_count(states.get("scored", []))
    if pairs and saved_tokens != own_tokens:
        raise SettingsMismatchError(
            f"This state holds {pairs} pair(s) whose texts were tokenised differently from this metric's "
            "setting (another tokenizer, max_length or long_texts), so its token ids cannot be scored here. "
            "Load it into a metric built with the same model, max_length and long_texts as the one that "
            "saved it.",
            setting="tokenisation",
            values=[saved_tokens, own_tokens],
        )
    counts = states.get("doc_freq")
    spans = None if counts is None else torch.as_tensor(counts).numel()
    if spans not in (None, 0, scorer.vocab_size):
        raise SettingsMismatchError(
            f"This state's IDF counts span {spans} token ids, this metric's vocabulary {scorer.vocab_size}: it "
            "was saved by a metric with another tokenizer. Load it into a metric built with the same model as "
            "the one that saved it.",
            setting="vocab_size",
            values=[spans, scorer.vocab_size],
        )
    return not pairs or saved_embedding == own_embedding


def check_mergeable(scorer: Scorer, states: Mapping[str, Any], saved: Digests, counted: int) -> None:
    """Refuse states to merge (`BERTScore.merge_state` given a saved state) that another setting made: token ids
    of another tokenisation, similarities of another embedding, or IDF counts of another length (`counted`, this
    metric's). Unlike a loaded state, whose similarities are embedded again, a merged one is taken as it is."""
    if not check_loadable(scorer, states, saved):
        raise SettingsMismatchError(
            "merge_state: the incoming state's similarities were kept under another setting (model, layer, "
            "prompts, ignored tokens, dtype, ...), so they cannot be scored as this metric's. Merge states of "
            "metrics created with the same arguments.",
            setting="embedding",
            values=[list(saved), list(setting_digests(scorer))],
        )
    counts = states.get("doc_freq")
    spans = None if counts is None else torch.as_tensor(counts).numel()
    if spans not in (None, counted):
        raise SettingsMismatchError(
            f"merge_state: the incoming state's IDF counts span {spans} token ids, this metric's {counted}: one "
            "of the two counts IDF and the other does not. Merge states of metrics created with the same "
            "arguments.",
            setting="idf",
            values=[spans, counted],
        )


def loaded_states(
    scorer: Scorer, states: Mapping[str, Any], saved: Digests | None, context: bool = False
) -> dict[str, Any]:
    """The states a metric of this setting holds once it loads `states` (saved under digests `saved`), checked
    first (`check_loadable`): kept similarities another embedding made are dropped (compute() embeds those
    pairs again), IDF counts fitted to this setting (`fitted_counts`), similarities kept as their bits, and
    each pair's context flag made where the state has none (`context`: whether it said a context was seen)."""
    keeps_similarities = check_loadable(scorer, states, saved)
    out = dict(states)
    pairs = pair_count(states["scored"])
    if not keeps_similarities:
        out.update(cand_best=[], ref_best=[], scored=[torch.zeros(pairs, dtype=torch.bool)])
    for name in ("cand_best", "ref_best"):
        out[name] = [x if not x.is_floating_point() else as_bits(x) for x in out[name]]
    if pair_count(out.get("has_context", [])) != pairs:
        out["has_context"] = [torch.full((pairs,), context, dtype=torch.bool)]
    cpu = torch.device("cpu")
    refs = (cat_state(states["ref_ids"], torch.int32, cpu), cat_state(states["ref_lens"], torch.int32, cpu))
    out["doc_freq"] = fitted_counts(scorer, torch.as_tensor(states["doc_freq"]), *refs)
    return out


def fitted_counts(scorer: Scorer, doc_freq: Tensor, ref_ids: Tensor, ref_lens: Tensor) -> Tensor:
    """The IDF document counts a loaded state should hold under this setting: counted again from its references
    (`ref_ids`, `ref_lens`) where it has none (a metric without IDF saved it), none where this setting counts
    none, else its own."""
    if scorer.counts_idf and doc_freq.numel() == 0:
        return document_frequency(ref_ids, ref_lens, scorer.vocab_size)
    if not scorer.counts_idf and doc_freq.numel():
        return torch.zeros(0, dtype=torch.long, device=doc_freq.device)
    return doc_freq
