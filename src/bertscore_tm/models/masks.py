"""Token masks (``ignore=``): a rule on a token's piece, made once per tokenizer as one flag per token id so
it applies to ids anywhere without the tokenizer. Semantics: docs/semantics.md, "Token masks"."""

from __future__ import annotations

import re
import string
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from bertscore_tm.errors import ArgumentValueError
from bertscore_tm.settings.arguments import IgnoreRule

#: CodeBERTScore's punctuation: Python's `string.punctuation` less the operators it keeps (``+-*/&|~``).
CODE_PUNCTUATION = frozenset(string.punctuation) - frozenset("+-*/&|~")
#: The byte-level BPE markers of a space, a newline and a tab (GPT-2's byte-to-unicode map), stripped first.
BYTE_LEVEL_WHITESPACE = "\u0120\u010a\u0109"


def is_code_punctuation(piece: str) -> bool:
    """CodeBERTScore's ``no_punc`` rule: every character is punctuation once byte-level whitespace markers are
    stripped (so white space alone is too); operators such as ``+`` are kept.

    >>> [is_code_punctuation(p) for p in ["\u0120(", "\u010a", "):", "\u0120+", "<s>", "\u0120def"]]
    [True, True, True, False, False, False]
    """
    return all(c in CODE_PUNCTUATION for c in piece.strip(BYTE_LEVEL_WHITESPACE))


def describe(rule: IgnoreRule | None) -> str | None:
    """The rule as the hash code names it: ``punctuation``, ``re:<pattern>``, or ``callable:<its name>``."""
    if rule is None:
        return None
    if isinstance(rule, str):
        return "punctuation" if rule == "punctuation" else f"re:{rule}"
    if isinstance(rule, re.Pattern):
        return f"re:{rule.pattern}"
    return f"callable:{getattr(rule, '__qualname__', type(rule).__name__)}"


def piece_rule(rule: IgnoreRule) -> Callable[[str], bool]:
    """The rule as a function of a piece: True where the token is ignored."""
    if rule == "punctuation":
        return is_code_punctuation
    if isinstance(rule, (str, re.Pattern)):
        pattern = re.compile(rule) if isinstance(rule, str) else rule
        return lambda piece: pattern.fullmatch(piece) is not None
    return rule


def ignored_table(tokenizer: Any, rule: IgnoreRule, size: int) -> Tensor:
    """One flag per token id: whether `rule` ignores its piece; a failing callable is an error naming the piece."""
    test = piece_rule(rule)
    count = min(size, len(tokenizer))
    pieces = tokenizer.convert_ids_to_tokens(list(range(count)))
    flags = torch.zeros(size, dtype=torch.bool)
    for i, piece in enumerate(pieces):
        text = "" if piece is None else str(piece)
        try:
            answer = test(text)
        except Exception as err:
            raise ArgumentValueError(
                f"ignore={describe(rule)} failed on the piece {text!r} (token id {i}): {type(err).__name__}: {err}",
                argument="ignore",
                allowed="a callable taking a piece (str) and returning True or False",
                value=rule,
            ) from None
        if not isinstance(answer, bool):
            raise ArgumentValueError(
                f"ignore={describe(rule)} returned {type(answer).__name__} {answer!r:.40} for the piece {text!r}: "
                "it must return True (ignore the token) or False",
                argument="ignore",
                allowed="a callable returning True or False",
                value=rule,
            )
        flags[i] = answer
    return flags
