"""Tokenising: checks what the user passed and turns texts into compact token-id sequences.

Texts are stripped, tokenised with the model's tokenizer (the fast one where the model has one) and its
special tokens, and truncated to the model's window, as the reference does (unless `truncate` is off: the
window mode of `bertscore_tm.models.windows` keeps every token). Byte-level BPE tokenizers (RoBERTa, GPT-2, BART)
get a prefix space.
The ids are returned ragged (one flat int32 tensor and the lengths) so that no padding is ever stored.
"""

from __future__ import annotations

import copy
import os
from collections import Counter
from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor

from bertscore_tm.errors import ArgumentValueError, ModelSetupError, warn_user
from bertscore_tm.models.ahead import tokenise_ahead
from bertscore_tm.models.model_family import uses_prefix_space
from bertscore_tm.settings.texts import check_pairs

#: Tokenizers report this (or more) when they know no maximum length.
_NO_LIMIT = 10**8


def normalize_inputs(
    preds: str | Sequence[str], target: str | Sequence[str | Sequence[str]]
) -> tuple[list[str], list[list[str]]]:
    """Candidates as a list of strings and references as one list of strings per candidate: the one rule for
    pairs of texts (`bertscore_tm.settings.texts.check_pairs`), shared by every door."""
    return check_pairs(preds, target)


def check_tokenizer_files(tokenizer: object, model_path: Path) -> None:
    """Fail unless `model_path` holds at least one of the vocabulary files the tokenizer's class reads.

    Without them transformers still builds a tokenizer, of the special tokens alone: every word becomes
    [UNK] and unrelated texts score alike, so a missing file must stop the metric here.
    """
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
    """Fail unless the tokenizer's vocabulary fits the model's embedding table: no id past the table (it would
    have no vector) and not almost empty (fewer tokens than half the table: tokenizer files of another
    model, or only the special tokens, so that every text is mostly [UNK]).

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
    """A model's tokenizer, set up as the reference uses it, producing ragged int32 ids.

    `source` is the model's directory, or a tokenizer object the user passed: that one is used as it is (never
    reloaded or reconfigured); a byte-level BPE tokenizer not made with `add_prefix_space=True` then gets the
    space put in front of each (stripped, non-blank) text instead, which gives the same ids. `trust_remote_code`
    lets a tokenizer of the model's own code (in its directory) load.
    """

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
    ) -> None:
        from transformers import AutoTokenizer

        if isinstance(source, (str, os.PathLike)):
            options = {"local_files_only": True, "trust_remote_code": trust_remote_code, "use_fast": use_fast}
            tokenizer = AutoTokenizer.from_pretrained(str(source), **options)
            check_tokenizer_files(tokenizer, Path(source))
            if uses_prefix_space(tokenizer):
                tokenizer = AutoTokenizer.from_pretrained(str(source), add_prefix_space=True, **options)
            self.prefix_space = False
        else:
            tokenizer = source
            self.prefix_space = uses_prefix_space(tokenizer) and not getattr(tokenizer, "add_prefix_space", False)
        # XLM has only a Python tokenizer, which the reference also uses (its `use_fast_tokenizer` falls back).
        self.is_fast = bool(getattr(tokenizer, "is_fast", False))
        self.tokenizer = tokenizer
        window = self.model_window(tokenizer, model_window)
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
        #: Whether this encoder loaded the tokenizer itself (a user's tokenizer object is only ever called).
        self.own_tokenizer = isinstance(source, (str, os.PathLike))
        self._rust: Any = None
        self._rust_checked = False

    def rust_tokenizer(self) -> Any | None:
        """A copy of the Rust tokenizer under a tokenizer this encoder loaded, set up as the Python wrapper sets
        it for `_ids` (truncation to the window, no padding, the same special-token splitting), or None where
        there is none or its class encodes in a way of its own (`_wrapper_encodes_plainly`). The copy's settings
        never change, whatever a caller does with `tokenizer`."""
        if not self._rust_checked:
            self._rust_checked = True
            if self.own_tokenizer and self.is_fast and _wrapper_encodes_plainly(type(self.tokenizer)):
                self._rust = _configured_copy(self.tokenizer, self.max_length if self.truncate else None)
        return self._rust

    @staticmethod
    def model_window(tokenizer: object, model_window: int | None) -> int | None:
        """The tokenizer's maximum length, or the model's position limit where the tokenizer knows none."""
        limit = getattr(tokenizer, "model_max_length", None)
        if isinstance(limit, int) and limit < _NO_LIMIT:
            return limit
        return model_window

    def encode(self, texts: Sequence[str]) -> tuple[Tensor, Tensor]:
        """Flat int32 ids and int32 lengths of `texts`, warning once about truncated or blank texts."""
        ids, lens, truncated = self._tokenize(texts)
        self._warn({"text": truncated}, {"text": int(self.is_blank(lens).sum())})
        return ids, lens

    def encode_pairs(self, cands: Sequence[str], refs: Sequence[str]) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """Flat ids and lengths of the candidates, then of the references, as `encode` gives them, with one
        warning per kind (truncated, blank) counting both sides: two warnings of the same text would show as
        one under Python's default warning filter, hiding the second side's count. The warnings name the
        user's line (`warn_user`). Both sides are tokenised in one call, so a text on both is tokenised once."""
        return self._split_pairs(len(cands), *self._tokenize_each([*cands, *refs]))

    def encode_pairs_ahead(self, cands: Sequence[str], refs: Sequence[str]) -> PendingPairs | None:
        """`encode_pairs` with the tokenizer's work on the process's tokenising thread
        (`bertscore_tm.models.ahead`): the pairs' ids once done, its warnings said when they are taken. None
        where this encoder has no Rust tokenizer of its own (`rust_tokenizer`): a tokenizer's Python wrapper
        sets its backend up before each call, so it is only ever called from the caller's thread."""
        if self.rust_tokenizer() is None:
            return None
        stripped, distinct = self._distinct([*cands, *refs])
        future = tokenise_ahead(self._rust_ids, distinct, finish=self._compact)
        return PendingPairs(self, len(cands), stripped, distinct, future)

    def _split_pairs(self, n: int, ids: Tensor, lens: Tensor, cut: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """The first `n` texts' ids and lengths (the candidates), then the others', warning once per kind."""
        split = int(lens[:n].sum())
        c_lens, r_lens = lens[:n], lens[n:]
        self._warn(
            {"candidate": int(cut[:n].sum()), "reference": int(cut[n:].sum())},
            {"candidate": int(self.is_blank(c_lens).sum()), "reference": int(self.is_blank(r_lens).sum())},
        )
        return ids[:split], c_lens, ids[split:], r_lens

    def _tokenize(self, texts: Sequence[str]) -> tuple[Tensor, Tensor, int]:
        """Flat int32 ids, int32 lengths, and how many texts were truncated; no warning."""
        ids, lens, cut = self._tokenize_each(texts)
        return ids, lens, int(cut.sum())

    def _tokenize_each(self, texts: Sequence[str]) -> tuple[Tensor, Tensor, Tensor]:
        """Flat int32 ids, int32 lengths and which texts were truncated (bool); each distinct text is
        tokenised once (a reference judged with several candidates, say)."""
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
        """Texts' ids (a list each) and truncation flags as flat int32 ids, int32 lengths and bool flags: the
        state's own bytes (Python's lists take about nine times as many)."""
        lens = np.fromiter(map(len, ids), dtype=np.int32, count=len(ids))
        flat = np.fromiter(chain.from_iterable(ids), dtype=np.int32, count=int(lens.sum()))
        return torch.from_numpy(flat), torch.from_numpy(lens), torch.tensor(cut, dtype=torch.bool)

    @staticmethod
    def _assembled(
        stripped: list[str], distinct: list[str], flat: Tensor, lens: Tensor, cut: Tensor
    ) -> tuple[Tensor, Tensor, Tensor]:
        """`_tokenize_each`'s tensors from the distinct texts' (`_compact`): each text's ids and truncation
        are its distinct text's."""
        if len(distinct) == len(stripped):
            return flat, lens, cut
        position = {text: i for i, text in enumerate(distinct)}
        which = [position[text] for text in stripped]
        each = flat.split(lens.tolist())  # views, one a distinct text
        return torch.cat([each[i] for i in which]), lens[which], cut[which]

    def _rust_ids(self, texts: list[str]) -> tuple[list[list[int]], list[bool]]:
        """Each text's ids and whether it was truncated, from `rust_tokenizer`'s copy (whose settings never
        change, so any thread may call it): without character offsets where the library can (the same ids, a
        quarter faster)."""
        rust = self._rust
        encode = getattr(rust, "encode_batch_fast", rust.encode_batch)
        encodings = encode(texts, add_special_tokens=True)
        return [e.ids for e in encodings], [bool(e.overflowing) for e in encodings]

    def _ids(self, texts: list[str]) -> tuple[list[list[int]], list[bool]]:
        """Each text's ids and whether it was truncated: from the Rust tokenizer itself where `rust_tokenizer`
        gives one (the same ids, without the Python wrapper's per-text dictionaries), else from the
        tokenizer."""
        if self.rust_tokenizer() is not None:
            return self._rust_ids(texts)
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

    def _warn(self, truncated: Mapping[str, int], blank: Mapping[str, int]) -> None:
        """One warning per kind, its count the total over `truncated` (or `blank`): counts by side, e.g.
        ``{"candidate": 1, "reference": 2}``, named in the message where there are several sides."""
        for counts, message in (
            (
                truncated,
                f"{_counted(truncated)} are longer than the model's window of {self.max_length} tokens and were "
                "truncated to it (as the reference does).",
            ),
            (
                blank,
                f"{_counted(blank, ' blank')}, empty after stripping white space or holding nothing the tokenizer "
                "keeps: every pair with a blank candidate or reference scores P = R = F = 0.",
            ),
        ):
            if sum(counts.values()):
                warn_user(message)

    def is_blank(self, lens: Tensor) -> Tensor:
        """Which sequences hold nothing but the special tokens (blank text, or text the tokenizer drops)."""
        return lens <= self.num_special


def _wrapper_encodes_plainly(cls: type) -> bool:
    """Whether tokenizer class `cls` encodes as transformers' fast base class does: its Rust tokenizer's
    ``encode_batch`` on the texts as given. A class overriding a step of that (some prepare texts or ids
    their own way) is only ever called through its wrapper."""
    try:  # transformers 5
        from transformers.tokenization_utils_tokenizers import TokenizersBackend as base
    except ImportError:  # transformers 4
        from transformers import PreTrainedTokenizerFast as base
    steps = ("__call__", "_call_one", "encode_plus", "batch_encode_plus", "_encode_plus", "_batch_encode_plus")
    return issubclass(cls, base) and all(getattr(cls, step, None) is getattr(base, step, None) for step in steps)


def _configured_copy(tokenizer: Any, max_length: int | None) -> Any | None:
    """A copy of `tokenizer`'s Rust tokenizer truncating to `max_length` (None: not at all) on the tokenizer's
    truncation side, without padding, splitting special tokens where the tokenizer does: what its wrapper sets
    before each call of `_ids`. None where the backend offers no such settings."""
    try:
        rust = copy.deepcopy(tokenizer.backend_tokenizer)
        rust.no_padding()
        if max_length is None:
            rust.no_truncation()
        else:
            rust.enable_truncation(max_length, stride=0, strategy="longest_first", direction=tokenizer.truncation_side)
        rust.encode_special_tokens = bool(getattr(tokenizer, "split_special_tokens", False))
    except Exception:  # a backend without one of these settings: the wrapper it is
        return None
    return rust


def _counted(by_side: Mapping[str, int], kind: str = "") -> str:
    """ "3 text(s)", and with several sides the sides that have any: "3 text(s) (1 candidate, 2 references)".

    >>> _counted({"candidate": 1, "reference": 2}, " blank")
    '3 blank text(s) (1 candidate, 2 references)'
    >>> _counted({"candidate": 1, "reference": 0})
    '1 text(s) (1 candidate)'
    >>> _counted({"text": 2})
    '2 text(s)'
    """
    total = sum(by_side.values())
    head = f"{total}{kind} text(s)"
    if len(by_side) < 2:
        return head
    sides = ", ".join(f"{n} {side}{'' if n == 1 else 's'}" for side, n in by_side.items() if n)
    return f"{head} ({sides})"


class PendingPairs:
    """Pairs being tokenised on the tokenising thread (`TextEncoder.encode_pairs_ahead`): `ready` says whether
    their ids are in; `result` waits for them and gives what `encode_pairs` gives, warnings included (said
    then), or raises the tokenizer's error. In a process forked after they were handed over (whose copy of the
    thread never runs) they are tokenised again in the caller's thread, never waited for."""

    def __init__(self, encoder: TextEncoder, n: int, stripped: list[str], distinct: list[str], future: Future) -> None:
        self.encoder, self.n, self.stripped, self.distinct, self.future = encoder, n, stripped, distinct, future
        self.pid = os.getpid()
        self.texts = len(stripped)

    def ready(self) -> bool:
        return self.pid == os.getpid() and self.future.done()

    def result(self) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        encoder = self.encoder
        same = self.pid == os.getpid()  # a forked child's copy of the thread never runs: tokenise here
        compact = self.future.result() if same else encoder._compact(*encoder._rust_ids(self.distinct))
        return encoder._split_pairs(self.n, *encoder._assembled(self.stripped, self.distinct, *compact))
