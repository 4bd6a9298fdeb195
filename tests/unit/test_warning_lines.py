"""The package's warnings name the user's own line, not a frame inside torchmetrics or torch: a warning is
only useful where it says which call of yours it is about."""

from __future__ import annotations

import warnings

import pytest
import torch

from bertscore_tm import BERTScore
from bertscore_tm.comparison.significance import paired_test
from conftest import MINILM


@pytest.fixture(scope="module")
def metric() -> BERTScore:
    return BERTScore(MINILM, max_length=8)


def _lines(call) -> list[tuple[str, int]]:
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        call()
    return [(w.filename, w.lineno) for w in seen if w.category is UserWarning]


def _here(offset: int = 0) -> tuple[str, int]:
    import inspect

    caller = inspect.stack()[1]
    return caller.filename, caller.lineno + offset


def test_update_warns_at_the_line_that_called_it(metric) -> None:
    long = "a sentence far longer than eight tokens, so that the window truncates it"
    metric.reset()
    where = _here(1)
    got = _lines(lambda: metric.update([long], [""]))
    assert got == [where, where]  # truncated, blank: both at the line above, through torchmetrics' wrapper


def test_forward_warns_at_the_line_that_called_the_metric(metric) -> None:
    metric.reset()
    where = _here(1)
    got = _lines(lambda: metric([""], ["a reference"]))
    assert got and all(line == where for line in got)


def test_compute_warns_at_the_line_that_called_it(metric) -> None:
    metric.reset()
    metric.update(["one", "two"], ["one", "three"], indexes=[0, 0])  # index 0 given to two different pairs
    where = _here(1)
    assert _lines(lambda: metric.compute()) == [where]


def test_pairwise_and_paired_test_warn_at_their_callers(metric) -> None:
    where = _here(1)
    assert _lines(lambda: metric.pairwise([""], ["a reference"])) == [where]
    where = _here(1)
    assert _lines(lambda: paired_test(torch.rand(5), torch.rand(5), num_samples=10)) == [where]
