"""Explanations as text for a terminal: the scores, the texts with their weak words marked (red where the
terminal takes colour, between asterisks otherwise) and the token accounts. What is shown: docs/explain.md."""

from __future__ import annotations

from collections.abc import Sequence

from bertscore_tm.explanations.types import PairExplanation, TokenExplanation, WordExplanation

_RED, _BOLD, _DIM, _RESET = "\x1b[31;1m", "\x1b[1m", "\x1b[2m", "\x1b[0m"


def render_text(
    explanations: Sequence[PairExplanation],
    lines: Sequence[int | None] | None = None,
    color: bool = False,
    tokens: bool = True,
) -> str:
    """Every explanation, one block each, headed by its line number where `lines` gives one."""
    numbers = list(lines) if lines is not None else [None] * len(explanations)
    blocks = [_pair_text(e, n, color, tokens) for e, n in zip(explanations, numbers, strict=True)]
    head = explanations[0].hash_code + "\n\n" if explanations else ""
    return head + "\n".join(blocks)


def _pair_text(why: PairExplanation, line: int | None, color: bool, tokens: bool) -> str:
    title = f"line {line}: " if line is not None else ""
    title += f"P {_f(why.precision)}  R {_f(why.recall)}  F1 {_f(why.f1)}" + _f_beta(why.f_beta)
    out = [_paint(title, _BOLD, color)]
    if len(why.references) > 1:
        for j, s in enumerate(why.reference_scores):
            best = "  (best: explained below)" if j == why.best_reference else ""
            scores = f"P {_f(s.precision)}  R {_f(s.recall)}  F1 {_f(s.f1)}{_f_beta(s.f_beta)}"
            out.append(f"  reference {j}: {scores}{best}")
    out.append(f"  weights: {why.weighting}")
    out.append(f"  weak words: {_threshold_text(why)}")
    out.append("  candidate: " + _marked(why.candidate, why.candidate_words, color))
    out.append("  reference: " + _marked(why.reference, why.reference_words, color))
    out += _weak_lines("possible additions (weak candidate words)", why.candidate_words)
    out += _weak_lines("possible omissions (weak reference words)", why.reference_words)
    out += [f"  note: {note}" for note in why.notes]
    if tokens:
        out += _token_table("candidate", "P", why.raw.precision, why.candidate_tokens, why.reference_tokens, color)
        out += _token_table("reference", "R", why.raw.recall, why.reference_tokens, why.candidate_tokens, color)
    return "\n".join(out) + "\n"


def _f_beta(value: float | None) -> str:
    return "" if value is None else f"  F-beta {_f(value)}"


def _threshold_text(why: PairExplanation) -> str:
    limit = why.threshold
    if limit.candidate is None or limit.reference is None:
        return f"not marked ({limit.source})"
    return f"support below {limit.candidate:.6f} (candidate) / {limit.reference:.6f} (reference), from {limit.source}"


def _marked(text: str, words: Sequence[WordExplanation], color: bool) -> str:
    pieces, at = [], 0
    for word in words:
        pieces.append(printable(text[at : word.start]))
        shown = printable(word.text)
        pieces.append(_paint(shown, _RED, color) if word.weak and color else f"*{shown}*" if word.weak else shown)
        at = word.end
    pieces.append(printable(text[at:]))
    return "".join(pieces).strip()


def _weak_lines(title: str, words: Sequence[WordExplanation]) -> list[str]:
    weak = [w for w in words if w.weak]
    if not weak:
        return []
    shown = ", ".join(f"{w.text} ({w.support:.3f}, best match: {w.counterpart_text or '-'})" for w in weak)
    return [f"  {title}: {printable(shown)}"]


def _token_table(
    side: str,
    score: str,
    total: float,
    mine: Sequence[TokenExplanation],
    other: Sequence[TokenExplanation],
    color: bool,
) -> list[str]:
    """A side's tokens, one row each; the contributions add up to the side's raw score."""
    rows = [["#", "token", "chars", "match", "similarity", "weight", "contribution"]]
    for t in mine:
        chars = "special" if t.special else "-" if t.start is None else f"{t.start}-{t.end}"
        match = "-" if t.match is None else f"{t.match} {other[t.match].token}"
        if t.role is not None:  # out of the matching: say why in place of a match
            match = f"({t.role})"
        figures = [f"{t.similarity:.6f}", f"{t.weight:.4f}", _f(t.contribution)]
        rows.append([str(t.index), printable(t.token), chars, printable(match), *figures])
    widths = [max(len(r[j]) for r in rows) for j in range(len(rows[0]))]
    right = {0, 4, 5, 6}
    lines = [f"  {side} tokens (the contributions add up to {score} = {_f(total)}, before any rescaling):"]
    for n, r in enumerate(rows):
        cells = [c.rjust(w) if j in right else c.ljust(w) for j, (c, w) in enumerate(zip(r, widths, strict=True))]
        line = "    " + "  ".join(cells).rstrip()
        dim = n and (mine[n - 1].special or mine[n - 1].role is not None)
        lines.append(_paint(line, _DIM, color) if dim else line)
    return lines


def printable(text: str) -> str:
    """`text` with its control characters escaped, so that a text cannot drive the terminal.

    >>> printable("a\\x1b[2Jb")
    'a\\\\x1b[2Jb'
    """
    return "".join(c if c.isprintable() or c == " " else c.encode("unicode_escape").decode("ascii") for c in text)


def _paint(text: str, code: str, color: bool) -> str:
    return f"{code}{text}{_RESET}" if color else text


def _f(x: float) -> str:
    return "nan" if x != x else f"{x:.6f}"
