"""Prompts (``candidate_prompt=``, ``reference_prompt=``) and contexts: tokenised with the text as one string,
as instruction-tuned embedding models expect, their tokens marked so that scoring leaves them out of matching,
weights and IDF. The prompt always stays whole. Semantics: docs/semantics.md, "Prompts"."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import torch
from torch import Tensor

from bertscore_tm.errors import ArgumentValueError, warn_user
from bertscore_tm.settings.texts import check_contexts


class MarkedIds(NamedTuple):
    """Texts' flat int32 token ids end to end, their lengths, and which tokens are marked (a prompt's or a
    context's): the model reads every id, and the scoring rules leave the marked tokens out."""

    ids: Tensor
    lens: Tensor
    marked: Tensor  # bool, one per id

    @classmethod
    def plain(cls, ids: Tensor, lens: Tensor) -> MarkedIds:
        """Texts of which no token is marked (no prompt, no context)."""
        return cls(ids, lens, torch.zeros(len(ids), dtype=torch.bool))

    @classmethod
    def joined(cls, *sides: MarkedIds) -> MarkedIds:
        """The sides' texts one after another."""
        return cls(*(torch.cat(parts) for parts in zip(*sides, strict=True)))


def prompted_ids(
    encoder: Any, texts: Sequence[str], prompt: str | None, contexts: Sequence[str] | None, argument: str
) -> tuple[MarkedIds, Tensor]:
    """The ids of prompt + context + " \n" + text (CodeBERTScore's join), the prompt's and the context's tokens
    marked, and cut flags. The context is cut first, from its start, so the tokens nearest the text stay."""
    tokenizer = encoder.tokenizer
    if not encoder.is_fast:
        raise ArgumentValueError(
            f"{argument} needs a fast tokenizer (its offsets tell the prompt's tokens from the text's); "
            f"{type(tokenizer).__name__} is not one",
            argument=argument,
            allowed="None with a tokenizer that is not fast",
            value=prompt,
        )
    lead = (" " if encoder.prefix_space else "") + (prompt or "")
    heads = [lead + (f"{c.strip()} \n" if contexts is not None and c.strip() else "") for c in (contexts or texts)]
    joined = [head + t.strip() for head, t in zip(heads, texts, strict=True)]
    enc = tokenizer(joined, add_special_tokens=True, return_offsets_mapping=True, verbose=False)
    specials = set(tokenizer.all_special_ids)  # with a zero-width span: the tokenizer added it (CLS, SEP...)
    limit, half = None, None
    if encoder.max_length is not None:
        limit = encoder.max_length if encoder.truncate else None
        half = (encoder.max_length - encoder.num_special) // 2 if heads_per_window(encoder) else None
    ids: list[int] = []
    marked: list[bool] = []
    lens: list[int] = []
    cut: list[bool] = []
    for row, head in zip(zip(enc["input_ids"], enc["offset_mapping"], strict=True), heads, strict=True):
        # each token: 0 the prompt's, 1 the context's, 2 the text's (the special tokens the tokenizer added count
        # as the text's; one from the characters, an unknown character's [UNK], is where its characters are)
        part = [
            2 if (t in specials and start == stop) or stop > len(head) else (0 if stop <= len(lead) else 1)
            for t, (start, stop) in zip(row[0], row[1], strict=True)
        ]
        kept = _fit(list(zip(row[0], part, strict=True)), limit)
        if half is not None and len(kept) > encoder.max_length:  # each window keeps room for the text
            kept = _drop_context(kept, sum(p < 2 for _, p in kept) - half)
        ids += [t for t, _ in kept]
        marked += [p < 2 for _, p in kept]  # the prompt's and the context's
        lens.append(len(kept))
        cut.append(len(kept) < len(part))
    side = MarkedIds(
        torch.tensor(ids, dtype=torch.int32),
        torch.tensor(lens, dtype=torch.int32),
        torch.tensor(marked, dtype=torch.bool),
    )
    return side, torch.tensor(cut)


def _fit(tokens: list[tuple[int, int]], limit: int | None) -> list[tuple[int, int]]:
    """`tokens` ((id, part) pairs) within `limit`: context dropped from its start, then the text's end."""
    if limit is None or len(tokens) <= limit:
        return tokens
    tokens = _drop_context(tokens, len(tokens) - limit)
    over = len(tokens) - limit
    if over <= 0:
        return tokens
    tail = 1 if tokens and tokens[-1][1] == 2 else 0  # the closing special token stays
    return tokens[: len(tokens) - tail - over] + tokens[len(tokens) - tail :]


def _drop_context(tokens: list[tuple[int, int]], count: int) -> list[tuple[int, int]]:
    """`tokens` less the first `count` of the context's (none where `count` is not positive)."""
    drop = set([i for i, (_, p) in enumerate(tokens) if p == 1][: max(0, count)])
    return [x for i, x in enumerate(tokens) if i not in drop]


def check_prompt(encoder: Any, prompt: str | None, argument: str) -> None:
    """Refuse a prompt that leaves a text no room in the window (with windows that carry it: over half of it)."""
    if prompt is None or encoder.max_length is None:
        return
    count = len(encoder.tokenizer(prompt, add_special_tokens=False)["input_ids"])
    room = encoder.max_length - encoder.num_special
    if not (encoder.truncate or heads_per_window(encoder)):  # SLED: the prompt is cut into windows with the text
        return
    if heads_per_window(encoder) and count > room // 2:
        raise ArgumentValueError(
            f"{argument} takes {count} tokens; with long_texts='window' a prompt rides in every window and may take "
            f"at most half of the window's {room} tokens besides the special tokens. Use a shorter prompt, a model "
            "with a longer window, or long_texts='truncate'",
            argument=argument,
            allowed=f"a prompt of at most {room // 2} tokens with long_texts='window'",
            value=prompt,
        )
    if count >= room:
        raise ArgumentValueError(
            f"{argument} takes {count} tokens, and the window holds {room} besides the special tokens: no text would "
            "fit after it. Use a shorter prompt (or a model with a longer window)",
            argument=argument,
            allowed=f"a prompt of fewer than {room} tokens",
            value=prompt,
        )


def heads_per_window(encoder: Any) -> bool:
    """Whether texts run in windows that each carry the text's head ("window"; not truncate or "sled" mode)."""
    return not encoder.truncate and getattr(encoder, "heads_per_window", True)


def encode_prompted_pairs(
    encoder: Any,
    cands: Sequence[str],
    refs: Sequence[str],
    prompts: tuple[str | None, str | None],
    contexts: tuple[Sequence[str], Sequence[str]] | None = None,
    notes: list[str] | None = None,
) -> tuple[MarkedIds, MarkedIds]:
    """`TextEncoder.encode_pairs` with prompts and contexts, one warning for the texts cut on either side."""
    sides = []
    truncated = 0
    for side, (texts, prompt, name) in enumerate(
        ((cands, prompts[0], "candidate_prompt"), (refs, prompts[1], "reference_prompt"))
    ):
        context = None if contexts is None else contexts[side]
        if prompt is None and context is None:
            sides.append(MarkedIds.plain(*encoder.encode(texts, notes)))
        else:
            prompted, cut = prompted_ids(encoder, texts, prompt, context, name if context is None else "context")
            sides.append(prompted)
            truncated += int(cut.sum())
    if truncated and encoder.truncate:
        say(
            f"{truncated} text(s) with their prompt or context are longer than the model's window of "
            f"{encoder.max_length} tokens: the context was cut from its start first, then the text at its end (the "
            "prompt stays whole).",
            notes,
        )
    elif truncated:
        say(
            f"{truncated} text(s) run in windows with a prompt and a context of more than half the model's window "
            f"of {encoder.max_length} tokens: each context was cut from its start to leave the text half of each "
            "window (the prompt and the text stay whole).",
            notes,
        )
    return sides[0], sides[1]


def say(message: str, notes: list[str] | None) -> None:
    """Warn `message` at the user's line, or add it to `notes` for whoever takes the ids to say."""
    if notes is None:
        warn_user(message)
    else:
        notes.append(message)


def check_context(context: object, count: int) -> list[str] | None:
    """`context` as one text per pair, or None (`check_contexts`, the one text rule)."""
    return check_contexts(context, count)
