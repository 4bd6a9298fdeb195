"""Tokenising: checks what the user passed and turns texts into compact token-id sequences.

Texts are stripped, tokenised with the model's tokenizer (the fast one where the model has one) and its
special tokens, and truncated to the model's window, as the reference does (unless `truncate` is off: the
window mode of `bertscore_tm.windows` keeps every token). Byte-level BPE tokenizers (RoBERTa, GPT-2, BART)
get a prefix space.
The ids are returned ragged (one flat int32 tensor and the lengths) so that no padding is ever stored.
"""

from __future__ import annotations

import warnings
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import torch
from torch import Tensor

#: Tokenizers report this (or more) when they know no maximum length.
_NO_LIMIT = 10**8


def normalize_inputs(preds: str | Sequence[str], target: str | Sequence[str | Sequence[str]]) -> tuple[list[str], list[list[str]]]:
    """Candidates as a list of strings and references as one list of strings per candidate.

    Raises ValueError for mismatched lengths or a candidate without references, TypeError naming the
    position of anything that is not a string.
    """
    cands = [preds] if isinstance(preds, str) else preds
    refs = [target] if isinstance(target, str) else target
    if not isinstance(cands, Sequence):
        raise TypeError(f"preds must be a string or a sequence of strings, got {type(preds).__name__}")
    if not isinstance(refs, Sequence):
        raise TypeError(
            f"target must be a string, a sequence of strings or a sequence of sequences of strings, got {type(target).__name__}"
        )
    if len(cands) != len(refs):
        raise ValueError(
            f"preds and target must have the same length: got {len(cands)} predictions and {len(refs)} targets"
        )
    out_cands: list[str] = []
    for i, cand in enumerate(cands):
        if not isinstance(cand, str):
            raise TypeError(f"preds[{i}] must be a string, got {type(cand).__name__}: {cand!r:.60}")
        out_cands.append(cand)
    groups: list[list[str]] = []
    for i, ref in enumerate(refs):
        if isinstance(ref, str):
            groups.append([ref])
            continue
        if not isinstance(ref, Sequence):
            raise TypeError(f"target[{i}] must be a string or a sequence of strings, got {type(ref).__name__}")
        if len(ref) == 0:
            raise ValueError(f"target[{i}] is an empty list: every candidate needs at least one reference")
        for j, r in enumerate(ref):
            if not isinstance(r, str):
                raise TypeError(f"target[{i}][{j}] must be a string, got {type(r).__name__}: {r!r:.60}")
        groups.append(list(ref))
    return out_cands, groups


def uses_prefix_space(tokenizer: object) -> bool:
    """The reference's rule: GPT-2 and RoBERTa-family (byte-level BPE) tokenizers get `add_prefix_space`."""
    from transformers import GPT2Tokenizer, RobertaTokenizer

    classes: list[type] = [GPT2Tokenizer, RobertaTokenizer]
    for name in ("GPT2TokenizerFast", "RobertaTokenizerFast"):  # transformers 4 keeps separate fast classes
        import transformers

        cls = getattr(transformers, name, None)
        if isinstance(cls, type):
            classes.append(cls)
    return isinstance(tokenizer, tuple(classes))


class TextEncoder:
    """A model's tokenizer, set up as the reference uses it, producing ragged int32 ids."""

    def __init__(
        self, model_path: Path, max_length: int | None = None, model_window: int | None = None, truncate: bool = True
    ) -> None:
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(str(model_path), local_files_only=True)
        # XLM has only a Python tokenizer, which the reference also uses (its `use_fast_tokenizer` falls back).
        self.is_fast = bool(getattr(tokenizer, "is_fast", False))
        if uses_prefix_space(tokenizer):
            tokenizer = AutoTokenizer.from_pretrained(str(model_path), local_files_only=True, add_prefix_space=True)
        self.tokenizer = tokenizer
        window = self.model_window(tokenizer, model_window)
        if max_length is not None:
            if max_length < 2:
                raise ValueError(f"max_length must be at least 2 (room for the special tokens), got {max_length}")
            if window is not None and max_length > window:
                raise ValueError(f"max_length={max_length} is past the model's window of {window} tokens")
            window = max_length
        self.max_length = window
        self.truncate = truncate  # long texts: False keeps every token (window mode)
        self.num_special = tokenizer.num_special_tokens_to_add(pair=False)
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        #: Tokens that weigh 0 without IDF, as in the reference: the CLS and SEP ids.
        self.zero_weight_ids = [i for i in (tokenizer.cls_token_id, tokenizer.sep_token_id) if i is not None]
        self.vocab_size = len(tokenizer)

    @staticmethod
    def model_window(tokenizer: object, model_window: int | None) -> int | None:
        """The tokenizer's maximum length, or the model's position limit where the tokenizer knows none."""
        limit = getattr(tokenizer, "model_max_length", None)
        if isinstance(limit, int) and limit < _NO_LIMIT:
            return limit
        return model_window

    def encode(self, texts: Sequence[str]) -> tuple[Tensor, Tensor]:
        """Flat int32 ids and int32 lengths of `texts`, warning once about truncated or blank texts."""
        stripped = [t.strip() for t in texts]
        if not stripped:
            return torch.zeros(0, dtype=torch.int32), torch.zeros(0, dtype=torch.int32)
        kwargs: dict[str, object] = {"add_special_tokens": True}
        if not self.truncate:  # long texts: keep every token, and no "longer than the model" log line
            kwargs["verbose"] = False
        elif self.max_length is not None:
            kwargs.update(truncation=True, max_length=self.max_length, return_overflowing_tokens=True, stride=0)
        if not self.is_fast:  # Python tokenizers report overflow per text, not as extra rows
            ids, truncated = [], 0
            for text in stripped:
                one = self.tokenizer(text, **kwargs)
                ids.append(one["input_ids"])
                truncated += bool(one.get("num_truncated_tokens", 0) > 0)
            if truncated:
                self._warn_truncated(truncated)
        else:
            enc = self.tokenizer(stripped, **kwargs)
            ids = enc["input_ids"]
            if self.truncate and self.max_length is not None and len(ids) != len(stripped):
                mapping = enc["overflow_to_sample_mapping"]
                first = [i for i, sample in enumerate(mapping) if i == 0 or mapping[i - 1] != sample]
                ids = [ids[i] for i in first]
                self._warn_truncated(sum(1 for count in Counter(mapping).values() if count > 1))
        lens = torch.tensor([len(x) for x in ids], dtype=torch.int32)
        blank = int(self.is_blank(lens).sum())
        if blank:
            warnings.warn(
                f"{blank} blank text(s) (empty after stripping white space, or nothing the tokenizer keeps): "
                "every pair with a blank candidate or reference scores P = R = F = 0.",
                UserWarning,
                stacklevel=3,
            )
        flat = torch.tensor([t for seq in ids for t in seq], dtype=torch.int32)
        return flat, lens

    def _warn_truncated(self, truncated: int) -> None:
        warnings.warn(
            f"{truncated} text(s) are longer than the model's window of {self.max_length} tokens and were "
            "truncated to it (as the reference does).",
            UserWarning,
            stacklevel=4,
        )

    def is_blank(self, lens: Tensor) -> Tensor:
        """Which sequences hold nothing but the special tokens (blank text, or text the tokenizer drops)."""
        return lens <= self.num_special
