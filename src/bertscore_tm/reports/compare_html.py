"""``compare --html``: one self-contained HTML page (inline CSS and SVG) of a comparison of systems, with the
segments where they differ most explained on both sides. Every text is escaped."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bertscore_tm.explanations.types import PairExplanation
from bertscore_tm.reports.explanation_html import escape, number, page, pair_section

_W, _H, _PAD = 900, 220, 48


@dataclass(frozen=True)
class Segment:
    """A segment (line, 1-based) where system `system` differs much from the baseline, both sides explained."""

    system: int
    line: int
    baseline: PairExplanation
    other: PairExplanation


def compare_page(
    hash_code: str, how: str, rows: Sequence[dict[str, Any]], f1: Sequence[Sequence[float]], segments: Sequence[Segment]
) -> str:
    """The page: `rows` as `compare` reports them, `how` the test's description, `f1` each system's
    per-segment F1, `segments` the explained differences."""
    names = [str(row["name"]) for row in rows]
    body = [f'<p class="hash">{escape(hash_code)}</p>', f"<p>{escape(how)}</p>", _systems_table(rows)]
    for s in range(1, len(rows)):
        deltas = [b - a for a, b in zip(f1[0], f1[s], strict=True)]
        body.append(f"<h2>{escape(names[s])} minus {escape(names[0])}: F1 per segment</h2>")
        body.append(difference_plot(deltas))
        mine = [seg for seg in segments if seg.system == s]
        if mine:
            body.append(f"<h2>Where {escape(names[s])} and {escape(names[0])} differ most</h2>")
        for k, seg in enumerate(mine):
            body.append(f"<h3>Line {seg.line}: F1 {_signed(seg.other.f1 - seg.baseline.f1)}</h3>")
            body.append('<div class="sides">')
            body.append(_side(names[0], pair_section(seg.baseline, seg.line, f"s{s}k{k}a")))
            body.append(_side(names[s], pair_section(seg.other, seg.line, f"s{s}k{k}b")))
            body.append("</div>")
    style = "<style>.sides{display:grid;grid-template-columns:1fr 1fr;gap:1em}.sides .pair{margin:.2em 0}</style>"
    return page("Is B better than A? BERTScore comparison", [style, *body]).replace(
        "max-width:1100px", "max-width:1500px"
    )


def _side(name: str, section: str) -> str:
    return f"<div><p><b>{escape(name)}</b></p>{section}</div>"


def _systems_table(rows: Sequence[dict[str, Any]]) -> str:
    head = (
        '<table><tr><th>system</th><th class="n">P</th><th class="n">R</th><th class="n">F1</th>'
        '<th class="n">F1 interval</th><th class="n">&Delta; F1</th><th class="n">p-value</th></tr>'
    )
    out = [head]
    for row in rows:
        low, high = row["f1_ci"]
        cells = [number(row[k]) for k in ("precision", "recall", "f1")] + [f"[{number(low)}, {number(high)}]"]
        if row.get("p_value") is None:
            cells += ["baseline", ""]
        else:
            star = " *" if row["p_value"] < 0.05 else ""
            cells += [_signed(row["delta_f1"]), f"{row['p_value']:.4g}{star}"]
        out.append(f"<tr><td>{escape(str(row['name']))}</td>" + "".join(f'<td class="n">{c}</td>' for c in cells))
    return "".join(out) + "</table><p class='legend'>* p &lt; 0.05 (two-sided, difference to the baseline)</p>"


def difference_plot(deltas: Sequence[float]) -> str:
    """Per-segment F1 differences as an inline SVG bar chart, with the zero line and the mean (dashed)."""
    finite = [d for d in deltas if math.isfinite(d)]
    top = max([abs(d) for d in finite] + [1e-6])
    n = max(1, len(deltas))
    width = (_W - 2 * _PAD) / n
    mid = _H / 2

    def y(value: float) -> float:
        return mid - value / top * (mid - 16)

    bars = []
    for i, d in enumerate(deltas):
        if not math.isfinite(d) or d == 0:
            continue
        x = _PAD + i * width
        colour = "#1e88e5" if d > 0 else "#e53935"
        top_y, bottom_y = sorted((y(d), mid))
        bars.append(
            f'<rect x="{x:.2f}" y="{top_y:.2f}" width="{max(width * 0.85, 0.6):.2f}" '
            f'height="{bottom_y - top_y:.2f}" fill="{colour}"/>'
        )
    mean = math.fsum(finite) / len(finite) if finite else 0.0
    axis = (
        f'<line x1="{_PAD}" y1="{mid}" x2="{_W - _PAD}" y2="{mid}" stroke="#546e7a"/>'
        f'<line x1="{_PAD}" y1="{y(mean):.2f}" x2="{_W - _PAD}" y2="{y(mean):.2f}" stroke="#263238" '
        'stroke-dasharray="5 4"/>'
        f'<text x="4" y="20" font-size="12">{_signed(top)}</text>'
        f'<text x="4" y="{mid + 4}" font-size="12">0</text>'
        f'<text x="4" y="{_H - 8}" font-size="12">{_signed(-top)}</text>'
        f'<text x="{_W - _PAD}" y="{_H - 4}" font-size="12" text-anchor="end">segments 1 to {len(deltas)}; '
        f"dashed: mean {_signed(mean)}</text>"
    )
    return (
        f'<svg width="{_W}" height="{_H}" viewBox="0 0 {_W} {_H}" role="img" '
        f'aria-label="F1 difference per segment">{axis}{"".join(bars)}</svg>'
    )


def _signed(x: float | None) -> str:
    return number(x, "+")
