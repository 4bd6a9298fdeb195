"""Which saved Metric states this setting can use: digests of a setting, and the checks made when a
`state_dict` is loaded.

A Metric's state holds token ids (made by a tokenisation) and kept best similarities (made by an embedding).
A state saved under another setting is refused where its token ids cannot be scored here, and its kept
similarities are dropped (to be made again) where another embedding made them; IDF and rescaling act only on
kept similarities at compute(), so a state that differs in them alone keeps everything.
"""

from __future__ import annotations

from collections.abc import Mapping

import torch
from torch import Tensor

from bertscore_tm.distributed.ranks import settings_digest
from bertscore_tm.errors import SettingsMismatchError
from bertscore_tm.scoring.idf import document_frequency
from bertscore_tm.scoring.scorer import Scorer

#: The settings that act only on kept best similarities, at compute(): a state loaded from a metric that
#: differs in these alone keeps its similarities.
APPLIED_AT_COMPUTE = frozenset({"idf", "idf_digest", "rescaled", "custom_baseline", "baseline", "beta"})


def setting_digests(scorer: Scorer) -> Tensor:
    """Two digests (int64 [2]): of what makes the token ids (the tokenizer, and max_length where texts are
    truncated), and of what makes a text's vectors and so the per-token best similarities: the setting less
    what acts only on the kept similarities at compute() (IDF, rescaling)."""
    tokenizer = scorer.encoder.tokenizer
    size = scorer.encoder.vocab_size
    tokens = {
        "tokenizer": type(tokenizer).__name__,
        "vocab_size": size,
        "sample": tokenizer.convert_ids_to_tokens(list(range(0, size, max(1, size // 64)))),
        "special": (tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.pad_token_id),
        "truncate_at": scorer.encoder.max_length if scorer.encoder.truncate else None,
    }
    embedding = {k: v for k, v in scorer.settings_record().items() if k not in APPLIED_AT_COMPUTE}
    return torch.tensor([settings_digest(tokens), settings_digest(embedding)], dtype=torch.long)


def check_loadable(scorer: Scorer, state_dict: Mapping[str, object], prefix: str) -> bool:
    """Refuse (before any state changes) a state whose token ids another tokenisation made, or whose IDF counts
    span another vocabulary; return whether its kept similarities are usable here (the same embedding). A
    state without digests (saved before they existed) is taken as of this setting."""
    own_tokens, own_embedding = setting_digests(scorer).tolist()
    saved = state_dict.get(prefix + "state_setting")
    saved_tokens, saved_embedding = (own_tokens, own_embedding) if saved is None else torch.as_tensor(saved).tolist()
    scored = state_dict.get(prefix + "scored", [])
    pairs = sum(len(x) for x in scored) if isinstance(scored, list) else len(scored)  # type: ignore[arg-type]
    if pairs and saved_tokens != own_tokens:
        raise SettingsMismatchError(
            f"This state holds {pairs} pair(s) whose texts were tokenised differently from this metric's "
            "setting (another tokenizer, max_length or long_texts), so its token ids cannot be scored here. "
            "Load it into a metric built with the same model, max_length and long_texts as the one that "
            "saved it.",
            setting="tokenisation",
            values=[saved_tokens, own_tokens],
        )
    counts = state_dict.get(prefix + "doc_freq")
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


def check_mergeable(scorer: Scorer, incoming: Mapping[str, object], counted: int) -> None:
    """Refuse a state to merge (`BERTScore.merge_state` given a dict) that another setting made: token ids of
    another tokenisation, similarities of another embedding, or IDF counts of another length (`counted`, this
    metric's). Unlike a loaded state, whose similarities are embedded again, a merged one is taken as it is."""
    if not check_loadable(scorer, incoming, ""):
        raise SettingsMismatchError(
            "merge_state: the incoming state's similarities were kept under another setting (model, layer, "
            "prompts, ignored tokens, dtype, ...), so they cannot be scored as this metric's. Merge states of "
            "metrics created with the same arguments.",
            setting="embedding",
            values=[torch.as_tensor(incoming.get("state_setting")).tolist(), setting_digests(scorer).tolist()],
        )
    counts = incoming.get("doc_freq")
    spans = None if counts is None else torch.as_tensor(counts).numel()
    if spans not in (None, counted):
        raise SettingsMismatchError(
            f"merge_state: the incoming state's IDF counts span {spans} token ids, this metric's {counted}: one "
            "of the two counts IDF and the other does not. Merge states of metrics created with the same "
            "arguments.",
            setting="idf",
            values=[spans, counted],
        )


def fitted_counts(scorer: Scorer, doc_freq: Tensor, ref_ids: Tensor, ref_lens: Tensor) -> Tensor:
    """The IDF document counts a loaded state should hold under this setting: counted again from its references
    (`ref_ids`, `ref_lens`) where it has none (a metric without IDF saved it), none where this setting counts
    none, else its own."""
    if scorer.counts_idf and doc_freq.numel() == 0:
        return document_frequency(ref_ids, ref_lens, scorer.vocab_size)
    if not scorer.counts_idf and doc_freq.numel():
        return torch.zeros(0, dtype=torch.long, device=doc_freq.device)
    return doc_freq
