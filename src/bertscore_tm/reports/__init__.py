"""What a person looks at: plots, the text and HTML pages of explanations and comparisons. Nothing here
computes a score; public names are imported on first use."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bertscore_tm.lazy import exports

__all__ = ["plot_layers", "plot_similarity", "render_html", "render_text"]

__getattr__ = exports(
    __name__,
    {
        "plot_similarity": "similarity_plot",
        "plot_layers": "tuning_plot",
        "render_text": "explanation_text",
        "render_html": "explanation_html",
    },
)

if TYPE_CHECKING:
    from bertscore_tm.reports.explanation_html import render_html
    from bertscore_tm.reports.explanation_text import render_text
    from bertscore_tm.reports.similarity_plot import plot_similarity
    from bertscore_tm.reports.tuning_plot import plot_layers
