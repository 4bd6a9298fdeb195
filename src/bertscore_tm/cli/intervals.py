"""Bootstrap intervals of the F1 mean (``score --confidence``, ``compare``) and how their numbers print."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bertscore_tm.cli.errors import UsageError
from bertscore_tm.cli.options import Resampling


def check_finite(f1: Any, names: Sequence[str]) -> None:
    """Intervals and tests need a finite F1 on every line (NaN is possible with --idf): `f1` is
    [systems, lines], `names` the systems' files."""
    import torch

    bad = ~torch.isfinite(f1)
    if bool(bad.any()):
        system, line = (int(x) for x in torch.nonzero(bad)[0])
        raise UsageError(
            f"{names[system]} line {line + 1} has an F1 of NaN ({int(bad.sum())} line(s) in all): with --idf, a "
            "line whose tokens all occur in every reference scores NaN, as in bert-score; intervals and tests "
            "need a score on every line: leave such lines out of every file, or drop --idf"
        )


def f1_interval(settings: Resampling, f1: list[float], cand: str) -> tuple[float, float]:
    import torch

    from bertscore_tm.comparison.significance import bootstrap_interval

    values = torch.tensor(f1, dtype=torch.float64)
    check_finite(values[None], [cand])
    interval = bootstrap_interval(values, settings.confidence, settings.num_samples, settings.seed)
    return float(interval.low), float(interval.high)


def percent(confidence: float) -> str:
    """
    >>> percent(0.95), percent(0.999)
    ('95%', '99.9%')
    """
    return f"{confidence * 100:g}%"


def p_text(p: float) -> str:
    """
    >>> p_text(0.04321), p_text(0.00001234)
    ('0.0432', '1.2e-05')
    """
    return f"{p:.4f}" if p >= 1e-4 else f"{p:.1e}"
