"""Explanations as one self-contained HTML page (inline CSS, SVG and a few lines of script, nothing
fetched), so it works offline and can be mailed as one file. Every text is escaped, so nothing in a candidate or
reference can become markup or script. What the page shows: docs/explain.md."""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from itertools import groupby

from bertscore_tm.explanations.types import PairExplanation, TokenExplanation, WordExplanation

STYLE = """
body{font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 auto;max-width:1100px;padding:1em 2em;
color:#1d2228;background:#fff}
h1{font-size:1.5em;margin:.2em 0}h2{font-size:1.15em;margin:0 0 .4em}h3{font-size:1em;margin:.8em 0 .2em}
.hash{font:12px ui-monospace,monospace;color:#555;word-break:break-all}
.pair{border:1px solid #d5dae0;border-radius:8px;padding:1em 1.2em;margin:1.2em 0;box-shadow:0 1px 2px #0001}
.scores{display:flex;gap:2em;align-items:center;flex-wrap:wrap}
.text{font-size:1.08em;line-height:2.1;background:#fafbfc;border-radius:6px;padding:.3em .6em;margin:0}
.w{position:relative;border-radius:3px;padding:1px 2px;cursor:default;outline:none}
.w.weak{background:#f9c9c5;border-bottom:2px solid #c62828}
.w.hl,.w:hover,.w:focus{outline:2px solid #1565c0}
.w.out{color:#8a949c;background:#eef0f2;border-bottom:1px dashed #b0bac3;font-style:italic}
.w .tip{display:none;position:absolute;left:0;top:1.9em;z-index:5;background:#263238;color:#fff;font-size:12px;
line-height:1.4;padding:.35em .6em;border-radius:4px;white-space:nowrap}
.w:hover .tip,.w:focus .tip{display:block}
.cut{color:#9aa3ab}
table{border-collapse:collapse;font-size:13px;margin:.3em 0}
td,th{padding:2px 8px;text-align:left;border-bottom:1px solid #eceff1}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
tr.special td{color:#78909c}tr.best td{font-weight:600}
.notes{color:#455a64;font-size:13px;margin:.5em 0 0;padding-left:1.2em}
.legend{font-size:13px;color:#455a64}.legend .w{cursor:auto}
details summary{cursor:pointer;color:#1565c0;margin-top:.6em}
"""

#: Hovering a word outlines its counterpart on the other side (ids are the page's own; texts never reach here).
SCRIPT = """
document.querySelectorAll('.w[data-c]').forEach(function(w){
 var c=document.getElementById(w.getAttribute('data-c'));if(!c)return;
 w.addEventListener('mouseenter',function(){c.classList.add('hl')});
 w.addEventListener('mouseleave',function(){c.classList.remove('hl')});});
"""


def render_html(
    explanations: Sequence[PairExplanation],
    lines: Sequence[int | None] | None = None,
    title: str = "BERTScore: why this score?",
) -> str:
    """The whole page for `explanations` (headed by their line numbers where `lines` gives them)."""
    numbers = list(lines) if lines is not None else [None] * len(explanations)
    sections = [pair_section(e, n, f"p{k}") for k, (e, n) in enumerate(zip(explanations, numbers, strict=True))]
    return page(title, [legend(), *sections])


def page(title: str, body: Sequence[str]) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>{escape(title)}</title><style>{STYLE}</style></head>\n<body>\n<h1>{escape(title)}</h1>\n"
        + "\n".join(body)
        + f"\n<script>{SCRIPT}</script>\n</body></html>\n"
    )


def legend() -> str:
    return (
        '<p class="legend"><span class="w weak">weak</span> a word whose support (the weight-averaged similarity '
        "of its tokens to their best matches) is below the threshold: on the candidate's side a possible "
        "addition, on the reference's a possible omission. Hover a word for its counterpart. "
        '<span class="w out">greyed</span> words are encoded with the text but out of the matching: tokens '
        "ignored by the mask (ignore=), and a prompt's or the pair's context's tokens.</p>"
    )


def pair_section(why: PairExplanation, line: int | None, key: str) -> str:
    """One pair: scores, references, both texts with weak words marked, notes and token tables. `key`
    makes the words' ids unique on the page."""
    head = f"Line {line}" if line is not None else "Pair"
    parts = [
        f'<section class="pair"><h2>{escape(head)}</h2><p class="hash">{escape(why.hash_code)}</p>',
        f'<div class="scores">{score_bars(why)}<div>{_references(why)}<p>{escape(_threshold(why))}</p></div></div>',
        "<h3>Candidate <small>(weak words: possible additions)</small></h3>",
        _text(why, why.candidate, why.candidate_words, why.candidate_tokens, (f"{key}c", f"{key}r")),
        f"<h3>Reference {why.best_reference} <small>(weak words: possible omissions)</small></h3>",
        _text(why, why.reference, why.reference_words, why.reference_tokens, (f"{key}r", f"{key}c")),
    ]
    if why.notes:
        parts.append('<ul class="notes">' + "".join(f"<li>{escape(n)}</li>" for n in why.notes) + "</ul>")
    parts.append("<details><summary>Every token</summary>")
    parts.append(_token_table("Candidate", "P", why.raw.precision, why.candidate_tokens, why.reference_tokens))
    parts.append(_token_table("Reference", "R", why.raw.recall, why.reference_tokens, why.candidate_tokens))
    parts.append("</details></section>")
    return "\n".join(parts)


def score_bars(why: PairExplanation) -> str:
    """P, R and F1 as horizontal bars in an inline SVG (a score below 0 shows no bar)."""
    rows = []
    scores = [("P", why.precision), ("R", why.recall), ("F1", why.f1)]
    if why.f_beta is not None:
        scores.append(("Fβ", why.f_beta))
    for n, (name, value) in enumerate(scores):
        y = 6 + 26 * n
        width = 0.0 if value != value else max(0.0, min(1.0, value)) * 200
        rows.append(
            f'<text x="0" y="{y + 14}" font-size="13">{name}</text>'
            f'<rect x="28" y="{y}" width="200" height="18" fill="#eceff1"/>'
            f'<rect x="28" y="{y}" width="{width:.1f}" height="18" fill="#1e88e5"/>'
            f'<text x="236" y="{y + 14}" font-size="13">{number(value)}</text>'
        )
    height, label = 6 + 26 * len(scores), "P, R and F1" if len(scores) == 3 else "P, R, F1 and F-beta"
    return f'<svg width="310" height="{height}" role="img" aria-label="{label}">{"".join(rows)}</svg>'


def _references(why: PairExplanation) -> str:
    beta = why.f_beta is not None
    rows = [
        '<table><tr><th>reference</th><th class="n">P</th><th class="n">R</th><th class="n">F1</th>'
        + ('<th class="n">Fβ</th>' if beta else "")
        + "</tr>"
    ]
    for j, s in enumerate(why.reference_scores):
        best = ' class="best"' if j == why.best_reference else ""
        values = (s.precision, s.recall, s.f1) + ((s.f_beta if s.f_beta is not None else math.nan,) if beta else ())
        cells = "".join(f'<td class="n">{number(x)}</td>' for x in values)
        rows.append(f"<tr{best}><td>{j}{' (best)' if best else ''}</td>{cells}</tr>")
    return "".join(rows) + "</table>"


def _threshold(why: PairExplanation) -> str:
    limit = why.threshold
    if limit.candidate is None or limit.reference is None:
        return f"Weak words: not marked ({limit.source})."
    return (
        f"Weak: support below {limit.candidate:.4f} (candidate) and {limit.reference:.4f} (reference), "
        f"from {limit.source}. Weights: {why.weighting}."
    )


#: Why a token of each role (`TokenExplanation.role`) is out of the matching, as a word's title says it.
_OUT_OF_MATCHING = {
    "masked": "ignored ({}): encoded with the text, out of the matching",
    "prompt": "prompt: encoded with the text, out of the matching",
    "context": "context: the pair's, encoded with the text, out of the matching",
}


def _out_span(role: str, shown: str, why: PairExplanation) -> str:
    """A greyed span for text the matching leaves out, titled with why."""
    mask = "ignore=" if why.ignore is None else f"ignore={why.ignore}"
    title = _OUT_OF_MATCHING[role].format(mask)
    return f'<span class="w out {role}" title="{escape(title)}">{escape(shown)}</span>'


def _head(tokens: Sequence[TokenExplanation], why: PairExplanation) -> str:
    """The prompt's and the context's tokens, one greyed span per run of one role; empty where none."""
    marked = [t for t in tokens if t.role in ("prompt", "context")]
    runs = groupby(marked, key=lambda t: str(t.role))
    return "".join(_out_span(role, " ".join(t.token for t in run), why) + " " for role, run in runs)


def _text(
    why: PairExplanation,
    text: str,
    words: Sequence[WordExplanation],
    tokens: Sequence[TokenExplanation],
    ids: tuple[str, str],
) -> str:
    """The text, each word a hoverable span, after the greyed prompt and context; characters in no word
    shown as they are. `ids`: this side's and the other side's word-id prefixes."""
    mine, theirs = ids
    out, at = [_head(tokens, why)], 0
    for w in words:
        out.append(_gap(text[at : w.start]))
        at = w.end
        if w.tokens and all(tokens[t].role == "masked" for t in w.tokens):
            out.append(_out_span("masked", w.text, why))
            continue
        tip = (
            f"best match: {w.counterpart_text or '-'} · support {w.support:.3f} · weight {w.weight:.3f} · "
            f"contribution {number(w.contribution)}"
        )
        counterpart = "" if w.counterpart is None else f' data-c="{theirs}{w.counterpart}"'
        weak = " weak" if w.weak else ""
        out.append(
            f'<span class="w{weak}" id="{mine}{w.index}"{counterpart} tabindex="0">{escape(w.text)}'
            f'<span class="tip">{escape(tip)}</span></span>'
        )
    out.append(_gap(text[at:]))
    return f'<p class="text">{"".join(out)}</p>'


def _gap(text: str) -> str:
    """Characters between words: white space as it is, anything else (past the window) greyed."""
    if not text.strip():
        return escape(text)
    return f'<span class="cut">{escape(text)}</span>'


def _token_table(
    side: str, score: str, total: float, tokens: Sequence[TokenExplanation], other: Sequence[TokenExplanation]
) -> str:
    head = (
        f"<h3>{side} tokens: the contributions add up to {score} = {number(total)} (before any rescaling)</h3>"
        '<table><tr><th class="n">#</th><th>token</th><th>chars</th><th>match</th><th class="n">similarity</th>'
        '<th class="n">weight</th><th class="n">contribution</th></tr>'
    )
    rows = []
    for t in tokens:
        chars = "special" if t.special else "" if t.start is None else f"{t.start}-{t.end}"
        match = "" if t.match is None else f"{t.match} {other[t.match].token}"
        match = match if t.role is None else f"({t.role})"  # out of the matching: why, in place of a match
        special = ' class="special"' if t.special or t.role is not None else ""
        rows.append(
            f'<tr{special}><td class="n">{t.index}</td><td>{escape(t.token)}</td><td>{chars}</td>'
            f'<td>{escape(match)}</td><td class="n">{t.similarity:.4f}</td><td class="n">{t.weight:.4f}</td>'
            f'<td class="n">{number(t.contribution)}</td></tr>'
        )
    return head + "".join(rows) + "</table>"


def escape(text: str) -> str:
    return html.escape(text, quote=True)


def number(x: float | None, sign: str = "") -> str:
    return "nan" if x is None or x != x else f"{x:{sign}.4f}"
