"""Tokenising: texts to ragged int32 id sequences (one flat tensor and the lengths, so no padding is stored),
stripped and truncated as the reference does. `PairTokenizer` needs no model, so a DataLoader's workers can make
the very batches an update() would."""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections import Counter
from collections.abc import Mapping, Sequence
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor

from bertscore_tm.distributed.ranks import settings_digest
from bertscore_tm.errors import ArgumentValueError, ModelSetupError
from bertscore_tm.models.model_family import uses_prefix_space
from bertscore_tm.models.prompts import MarkedIds, check_context, encode_prompted_pairs, say
from bertscore_tm.settings.texts import check_pairs

#: Tokenizers report this (or more) when they know no maximum length.
_NO_LIMIT = 10**8

#: Texts the Rust tokenizer must encode as the tokenizer's call does before it replaces it (`rust_tokenizer`).
PROBE_TEXTS = (
    "The quick brown fox jumps over the lazy dog.",
    "Ünïcödé café «quotes» naïve coöperate — façade",
    "[CLS] [SEP] [UNK] [MASK] <s> </s> <pad> <unk> <mask> </w>",
    "中文文本和日本語のテキスト",
    "emoji 🙂👍 and symbols ∑ ≈ © ™ 42 3.14 1,000",
    "tabs\tand  double  spaces\nand lines",
    "",
    "don't isn't O'Neill e-mail U.S.A. co-operate",
)


def check_tokenizer_files(tokenizer: object, model_path: Path) -> None:
    """Fail unless `model_path` holds a vocabulary file of the tokenizer's class: without one transformers builds
    a tokenizer of special tokens alone, every word [UNK], and unrelated texts score alike."""
    names = sorted(set(getattr(type(tokenizer), "vocab_files_names", {}).values()))
    if not names or not model_path.is_dir() or any((model_path / name).is_file() for name in names):
        return
    raise ModelSetupError(
        f"The model directory {model_path} has no tokenizer files: none of {', '.join(names)} is there "
        f"({type(tokenizer).__name__} reads them). Copy the tokenizer files the model was trained with into "
        "that directory (e.g. from the model's page or the directory it was saved from).",
        path=str(model_path),
        argument="model_name_or_path",
    )


def check_vocabulary(tokenizer: Any, embedding_rows: int, model_path: Path) -> None:
    """Fail unless the vocabulary fits the embedding table: no id past it (no vector) and not under half of it
    (another model's files, or special tokens alone: texts of mostly [UNK]).

    >>> check_vocabulary(["[PAD]", "[UNK]", "the", "cat"], embedding_rows=4, model_path=Path("m"))
    >>> check_vocabulary(["[PAD]", "[UNK]"], embedding_rows=30522, model_path=Path("m"))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    bertscore_tm.errors.ModelSetupError: The tokenizer in m knows only 2 tokens (0 of them special) for a model ...
    """
    size = len(tokenizer)
    where = f"The tokenizer in {model_path}"
    if embedding_rows <= 0:  # a model that does not say: nothing to check against
        return
    if size > embedding_rows:
        raise ModelSetupError(
            f"{where} has {size} tokens but the model's embedding table has {embedding_rows} rows: the tokenizer "
            f"files do not belong to this model (ids from {embedding_rows} on have no vector). Use the tokenizer "
            "files the model was trained with.",
            path=str(model_path),
            argument="model_name_or_path",
        )
    if size < embedding_rows // 2:
        special = len(set(getattr(tokenizer, "all_special_ids", [])))
        raise ModelSetupError(
            f"{where} knows only {size} tokens ({special} of them special) for a model with {embedding_rows} "
            "token vectors: its vocabulary files are missing or do not belong to this model, so texts would be "
            "mostly unknown tokens and unrelated texts would score alike. Use the tokenizer files the model was "
            "trained with.",
            path=str(model_path),
            argument="model_name_or_path",
        )


class TextEncoder:
    """A model's tokenizer set up as the reference uses it; a user's tokenizer object is never reconfigured (a
    byte-level BPE one gets its prefix space put before each text instead, the same ids)."""

    def __init__(
        self,
        source: Path | str | os.PathLike[str] | Any,
        max_length: int | None = None,
        model_window: int | None = None,
        truncate: bool = True,
        heads_per_window: bool = True,
        *,
        trust_remote_code: bool = False,
        use_fast: bool = True,
        prefix_space: bool = True,
    ) -> None:
        from transformers import AutoTokenizer

        #: Whether this encoder loaded the tokenizer itself (a user's tokenizer object is only ever called).
        self.own_tokenizer = isinstance(source, (str, os.PathLike))
        if isinstance(source, (str, os.PathLike)):
            options = {"local_files_only": True, "trust_remote_code": trust_remote_code, "use_fast": use_fast}
            tokenizer = AutoTokenizer.from_pretrained(str(source), **options)
            check_tokenizer_files(tokenizer, Path(source))
            if prefix_space and uses_prefix_space(tokenizer):
                tokenizer = AutoTokenizer.from_pretrained(str(source), add_prefix_space=True, **options)
            self.prefix_space = False
        else:
            tokenizer = source
            self.prefix_space = (
                prefix_space and uses_prefix_space(tokenizer) and not getattr(tokenizer, "add_prefix_space", False)
            )
        #: Whether texts tokenise without the space bert-score gives this family (the hash code says so).
        self.without_prefix_space = not prefix_space and uses_prefix_space(tokenizer)
        # XLM has only a Python tokenizer, which the reference also uses (its `use_fast_tokenizer` falls back).
        self.is_fast = bool(getattr(tokenizer, "is_fast", False))
        self.tokenizer = tokenizer
        limit = getattr(tokenizer, "model_max_length", None)  # at _NO_LIMIT or more where it knows none
        window = limit if isinstance(limit, int) and limit < _NO_LIMIT else model_window
        #: Whether max_length cuts texts shorter than the model's own window would (which changes scores).
        self.truncates_below_window = max_length is not None and (window is None or max_length < window)
        if max_length is not None:  # at least 2: checked with the other arguments (arguments.py)
            if window is not None and max_length > window:
                raise ArgumentValueError(
                    f"max_length={max_length} is past the model's window of {window} tokens",
                    argument="max_length",
                    allowed=f"2 to {window}, or None",
                    value=max_length,
                )
            window = max_length
        self.max_length = window
        self.truncate = truncate  # long texts: False keeps every token (window and SLED modes)
        #: Without truncation: whether a text's head (prompt, context) rides in each of its windows, taking at most
        #: half of it ("window"), or is cut into windows with the text as any of its tokens ("sled").
        self.heads_per_window = heads_per_window
        self.num_special = tokenizer.num_special_tokens_to_add(pair=False)
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        #: Tokens that weigh 0 without IDF, as in the reference: the CLS and SEP ids.
        self.zero_weight_ids = [i for i in (tokenizer.cls_token_id, tokenizer.sep_token_id) if i is not None]
        self.vocab_size = len(tokenizer)
        self._rust: Any = None
        self._rust_checked = False

    def rust_tokenizer(self) -> Any | None:
        """The Rust tokenizer where it encodes `PROBE_TEXTS` as the wrapper does (it skips per-text dictionaries)."""
        if not self._rust_checked:
            self._rust_checked = True
            backend = getattr(self.tokenizer, "backend_tokenizer", None) if self.own_tokenizer else None
            if self.is_fast and backend is not None:
                probes = self._distinct([*PROBE_TEXTS, " ".join(["word"] * (2 * (self.max_length or 512)))])[0]
                with contextlib.suppress(Exception):  # a backend without a setting `_configure` makes: the wrapper
                    if self._rust_ids(probes, backend) == self._wrapper_ids(probes):
                        self._rust = backend
        return self._rust

    def _configure(self, backend: Any) -> None:
        """Set the Rust tokenizer up as `_wrapper_ids`'s call would: the tokenizer shares it and sets it its way."""
        want = None
        if self.truncate and self.max_length is not None:
            side = self.tokenizer.truncation_side
            want = {"max_length": self.max_length, "stride": 0, "strategy": "longest_first", "direction": side}
        if backend.truncation != want:
            if want is None:
                backend.no_truncation()
            else:
                backend.enable_truncation(**want)
        if backend.padding is not None:
            backend.no_padding()
        split = bool(getattr(self.tokenizer, "split_special_tokens", False))
        if backend.encode_special_tokens != split:
            backend.encode_special_tokens = split

    def __getstate__(self) -> dict[str, Any]:
        """Pickled (to a DataLoader's worker, say) without the check's outcome: the copy checks again."""
        return {**self.__dict__, "_rust": None, "_rust_checked": False}

    @property
    def digest(self) -> int:
        """A digest of what makes a text's ids, by which checkpoints and tokenised batches are checked."""
        tokenizer, size = self.tokenizer, self.vocab_size
        return settings_digest(
            {
                "tokenizer": type(tokenizer).__name__,
                "vocab_size": size,
                "sample": tokenizer.convert_ids_to_tokens(list(range(0, size, max(1, size // 64)))),
                "special": (tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.pad_token_id),
                "truncate_at": self.max_length if self.truncate else None,
            }
        )

    def encode(self, texts: Sequence[str], notes: list[str] | None = None) -> tuple[Tensor, Tensor]:
        """Flat int32 ids and lengths of `texts`, warning once about truncated or blank ones (or adding to `notes`)."""
        ids, lens, cut = self._tokenize_each(texts)
        self._warn({"text": int(cut.sum())}, {"text": int(self.is_blank(lens).sum())}, notes)
        return ids, lens

    def encode_pairs(
        self, cands: Sequence[str], refs: Sequence[str], notes: list[str] | None = None
    ) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """Candidates' then references' ids and lengths, tokenised in one call, with one warning per kind counting
        both sides: Python's default filter would show two warnings of the same text as one."""
        n = len(cands)
        ids, lens, cut = self._tokenize_each([*cands, *refs])
        split = int(lens[:n].sum())
        c_lens, r_lens = lens[:n], lens[n:]
        self._warn(
            {"candidate": int(cut[:n].sum()), "reference": int(cut[n:].sum())},
            {"candidate": int(self.is_blank(c_lens).sum()), "reference": int(self.is_blank(r_lens).sum())},
            notes,
        )
        return ids[:split], c_lens, ids[split:], r_lens

    def _tokenize_each(self, texts: Sequence[str]) -> tuple[Tensor, Tensor, Tensor]:
        """Ids, lengths and truncation flags; each distinct text is tokenised once."""
        stripped, distinct = self._distinct(texts)
        return self._assembled(stripped, distinct, *self._compact(*(self._ids(distinct) if distinct else ([], []))))

    def _distinct(self, texts: Sequence[str]) -> tuple[list[str], list[str]]:
        """The texts as tokenised (stripped, with the family's prefix space), and the distinct ones in order."""
        stripped = [t.strip() for t in texts]
        if self.prefix_space:
            stripped = [" " + t if t else t for t in stripped]
        return stripped, list(dict.fromkeys(stripped))

    @staticmethod
    def _compact(ids: list[list[int]], cut: list[bool]) -> tuple[Tensor, Tensor, Tensor]:
        """Lists of ids as flat int32 tensors: the state's own bytes, far fewer than Python's lists take."""
        lens = np.fromiter(map(len, ids), dtype=np.int32, count=len(ids))
        flat = np.fromiter(chain.from_iterable(ids), dtype=np.int32, count=int(lens.sum()))
        return torch.from_numpy(flat), torch.from_numpy(lens), torch.tensor(cut, dtype=torch.bool)

    @staticmethod
    def _assembled(
        stripped: list[str], distinct: list[str], flat: Tensor, lens: Tensor, cut: Tensor
    ) -> tuple[Tensor, Tensor, Tensor]:
        if len(distinct) == len(stripped):
            return flat, lens, cut
        position = {text: i for i, text in enumerate(distinct)}
        which = [position[text] for text in stripped]
        each = flat.split(lens.tolist())  # views, one a distinct text
        return torch.cat([each[i] for i in which]), lens[which], cut[which]

    def _rust_ids(self, texts: list[str], rust: Any) -> tuple[list[list[int]], list[bool]]:
        """Ids and truncation from the Rust tokenizer, without character offsets where it can (`encode_batch_fast`)."""
        self._configure(rust)
        encode = getattr(rust, "encode_batch_fast", rust.encode_batch)
        encodings = encode(texts, add_special_tokens=True)
        return [e.ids for e in encodings], [bool(e.overflowing) for e in encodings]

    def _ids(self, texts: list[str]) -> tuple[list[list[int]], list[bool]]:
        rust = self.rust_tokenizer()
        return self._wrapper_ids(texts) if rust is None else self._rust_ids(texts, rust)

    def _wrapper_ids(self, texts: list[str]) -> tuple[list[list[int]], list[bool]]:
        kwargs: dict[str, object] = {"add_special_tokens": True}
        if not self.truncate:  # long texts: keep every token, and no "longer than the model" log line
            kwargs["verbose"] = False
        elif self.max_length is not None:
            kwargs.update(truncation=True, max_length=self.max_length, return_overflowing_tokens=True, stride=0)
        if not self.is_fast:  # Python tokenizers report overflow per text, not as extra rows
            ids, cut = [], []
            for text in texts:
                one = self.tokenizer(text, **kwargs)
                ids.append(one["input_ids"])
                cut.append(bool(one.get("num_truncated_tokens", 0) > 0))
            return ids, cut
        enc = self.tokenizer(texts, **kwargs)
        ids, cut = enc["input_ids"], [False] * len(texts)
        if self.truncate and self.max_length is not None and len(ids) != len(texts):
            mapping = enc["overflow_to_sample_mapping"]
            first = [i for i, sample in enumerate(mapping) if i == 0 or mapping[i - 1] != sample]
            ids = [ids[i] for i in first]
            for sample, count in Counter(mapping).items():
                cut[sample] = count > 1
        return ids, cut

    def _warn(self, truncated: Mapping[str, int], blank: Mapping[str, int], notes: list[str] | None = None) -> None:
        """One warning per kind, totalled over the sides (named where there are several), or added to `notes`."""
        if sum(truncated.values()):
            say(
                f"{_counted(truncated)} are longer than the model's window of {self.max_length} tokens and were "
                "truncated to it (as the reference does).",
                notes,
            )
        if sum(blank.values()):
            say(
                f"{_counted(blank, ' blank')}, empty after stripping white space or holding nothing the tokenizer "
                "keeps: every pair with a blank candidate or reference scores P = R = F = 0.",
                notes,
            )

    def is_blank(self, lens: Tensor) -> Tensor:
        """Which sequences hold nothing but the special tokens (blank text, or text the tokenizer drops)."""
        return lens <= self.num_special


def _counted(by_side: Mapping[str, int], kind: str = "") -> str:
    """ "3 text(s)", and with several sides the sides that have any: "3 text(s) (1 candidate, 2 references)".

    >>> _counted({"candidate": 1, "reference": 2}, " blank")
    '3 blank text(s) (1 candidate, 2 references)'
    >>> _counted({"text": 2})
    '2 text(s)'
    """
    total = sum(by_side.values())
    head = f"{total}{kind} text(s)"
    if len(by_side) < 2:
        return head
    sides = ", ".join(f"{n} {side}{'' if n == 1 else 's'}" for side, n in by_side.items() if n)
    return f"{head} ({sides})"


@dataclasses.dataclass(frozen=True)
class TokenizedPairs:
    """Pairs made by a metric's `tokenize` for its `update()`, small and picklable so a DataLoader's worker can
    make them; `digest` lets update() refuse another setting's ids, `notes` are warned when update() takes them.
    ``*_marked`` flag the prompts' and contexts' tokens (`MarkedIds`)."""

    cand_ids: Tensor
    cand_lens: Tensor
    cand_marked: Tensor
    ref_ids: Tensor
    ref_lens: Tensor
    ref_marked: Tensor
    ref_counts: Tensor
    has_context: Tensor
    digest: int
    notes: tuple[str, ...] = ()

    def __len__(self) -> int:
        return len(self.cand_lens)


class PairTokenizer:
    """Pairs of texts to `TokenizedPairs` (`BERTScore.tokenize`); it holds no model, so a DataLoader can call it."""

    def __init__(self, encoder: TextEncoder, prompts: tuple[str | None, str | None]) -> None:
        self.encoder = encoder
        self.prompts = prompts
        #: What made the ids: the tokenisation (`TextEncoder.digest`) and the prompts.
        self.digest = settings_digest({"ids": encoder.digest, "prompts": prompts})

    def __call__(
        self,
        preds: str | Sequence[str],
        target: str | Sequence[str | Sequence[str]],
        context: str | Sequence[str] | None = None,
    ) -> TokenizedPairs:
        cands, groups = check_pairs(preds, target)
        return self.pairs(cands, groups, check_context(context, len(cands)))

    def pairs(self, cands: list[str], groups: list[list[str]], contexts: list[str] | None = None) -> TokenizedPairs:
        """`TokenizedPairs` of checked texts, their warnings kept in it, not said."""
        counts = [len(group) for group in groups]
        notes: list[str] = []
        refs = [r for group in groups for r in group]
        cand, ref = self.encode(cands, refs, contexts, counts, notes)
        flags = [bool(c.strip()) for c in contexts] if contexts is not None else [False] * len(cands)
        return TokenizedPairs(
            *cand,
            *ref,
            torch.tensor(counts, dtype=torch.int32),
            torch.tensor(flags, dtype=torch.bool),
            self.digest,
            tuple(notes),
        )

    def encode(
        self,
        cands: Sequence[str],
        refs: Sequence[str],
        contexts: Sequence[str] | None = None,
        counts: Sequence[int] | None = None,
        notes: list[str] | None = None,
    ) -> tuple[MarkedIds, MarkedIds]:
        """Both sides' ids, prompts and contexts marked; `counts`: references per candidate."""
        if self.prompts == (None, None) and contexts is None:
            c_ids, c_lens, r_ids, r_lens = self.encoder.encode_pairs(cands, refs, notes)
            return MarkedIds.plain(c_ids, c_lens), MarkedIds.plain(r_ids, r_lens)
        sides = None
        if contexts is not None:
            assert counts is not None
            sides = (contexts, [c for c, n in zip(contexts, counts, strict=True) for _ in range(int(n))])
        return encode_prompted_pairs(self.encoder, cands, refs, self.prompts, sides, notes)
