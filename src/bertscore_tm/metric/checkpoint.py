"""Which saved states this setting can use. Token ids come from a tokenisation, kept similarities from an
embedding: a state of another setting is refused where its ids cannot be scored here, and its similarities
dropped (to be made again) where another embedding made them. IDF and rescaling act at compute() only."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from bertscore_tm.distributed.ranks import settings_digest
from bertscore_tm.errors import SettingsMismatchError
from bertscore_tm.metric.states import as_bits, cat_state, pair_count, token_dtype
from bertscore_tm.scoring.idf import document_frequency
from bertscore_tm.scoring.scorer import Scorer

#: The settings that act only on kept best similarities, at compute(): a state loaded from a metric that
#: differs in these alone keeps its similarities.
APPLIED_AT_COMPUTE = frozenset({"idf", "idf_digest", "rescaled", "custom_baseline", "baseline", "beta"})

#: Digests of a setting: of what makes the token ids, and of what makes the per-token best similarities.
Digests = tuple[int, int]


def setting_digests(scorer: Scorer) -> Digests:
    """Digests of what makes the token ids (`TextEncoder.digest`) and of what makes the kept similarities
    (the setting less what acts at compute())."""
    embedding = {k: v for k, v in scorer.settings_record().items() if k not in APPLIED_AT_COMPUTE}
    return scorer.encoder.digest, settings_digest(embedding)


def check_loadable(scorer: Scorer, states: Mapping[str, Any], saved: Digests | None) -> bool:
    """Refuse states whose ids another tokenisation made, or whose IDF counts span another vocabulary; return
    whether their similarities are usable here. States without digests (`saved` None) are taken as this setting's."""
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
    spans = _counted(states)
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
    """Refuse states to merge that another setting made: unlike a loaded state, whose similarities are made
    again, a merged one is taken as it is, so its similarities and counts must be this setting's too."""
    if not check_loadable(scorer, states, saved):
        raise SettingsMismatchError(
            "merge_state: the incoming state's similarities were kept under another setting (model, layer, "
            "prompts, ignored tokens, dtype, ...), so they cannot be scored as this metric's. Merge states of "
            "metrics created with the same arguments.",
            setting="embedding",
            values=[list(saved), list(setting_digests(scorer))],
        )
    spans = _counted(states)
    if spans not in (None, counted):
        raise SettingsMismatchError(
            f"merge_state: the incoming state's IDF counts span {spans} token ids, this metric's {counted}: one "
            "of the two counts IDF and the other does not. Merge states of metrics created with the same "
            "arguments.",
            setting="idf",
            values=[spans, counted],
        )


def _counted(states: Mapping[str, Any]) -> int | None:
    """How many token ids the states' IDF counts span (None: they hold none)."""
    counts = states.get("doc_freq")
    return None if counts is None else torch.as_tensor(counts).numel()


def loaded_states(
    scorer: Scorer, states: Mapping[str, Any], saved: Digests | None, context: bool = False
) -> dict[str, Any]:
    """The states once `states` are loaded (checked first): similarities another embedding made dropped,
    the rest kept as bits, IDF counts fitted, and each pair's context flag made where the state has none."""
    keeps_similarities = check_loadable(scorer, states, saved)
    out = with_marks(states)
    pairs = pair_count(states["scored"])
    if not keeps_similarities:
        out.update(cand_best=[], ref_best=[], scored=[torch.zeros(pairs, dtype=torch.bool)])
    for name in ("cand_best", "ref_best"):
        out[name] = [x if not x.is_floating_point() else as_bits(x) for x in out[name]]
    if pair_count(out.get("has_context", [])) != pairs:
        out["has_context"] = [torch.full((pairs,), context, dtype=torch.bool)]
    # the IDF counts: counted again from the references where the state has none, none where this setting
    # counts none, else its own
    doc_freq = torch.as_tensor(states["doc_freq"])
    if scorer.counts_idf and doc_freq.numel() == 0:
        cpu = torch.device("cpu")
        ids, lens, marked = (
            cat_state(out[name], token_dtype(name), cpu) for name in ("ref_ids", "ref_lens", "ref_marked")
        )
        doc_freq = document_frequency(ids, lens, scorer.vocab_size, marked=marked)
    elif not scorer.counts_idf and doc_freq.numel():
        doc_freq = torch.zeros(0, dtype=torch.long, device=doc_freq.device)
    out["doc_freq"] = doc_freq
    return out


def with_marks(states: Mapping[str, Any]) -> dict[str, Any]:
    """`states` with their tokens' marks: a state of format 1, saved before marks were held apart, held a
    marked token t as the id -(t + 1); its ids are made real and the marks kept beside them."""
    out = dict(states)
    for side in ("cand", "ref"):
        if f"{side}_marked" not in out:
            ids = [torch.as_tensor(x) for x in out[f"{side}_ids"]]
            out[f"{side}_marked"] = [x < 0 for x in ids]
            out[f"{side}_ids"] = [torch.where(x < 0, -x - 1, x) for x in ids]
    return out
