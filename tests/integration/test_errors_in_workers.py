"""An error of the package raised inside a data engine's worker reaches the caller with its own message: a
`BatchScorer` built with ``idf_weights`` and no ``idf=True`` (refused before any model loads) inside a Ray Data
`map_batches` task and inside a `datasets.map(num_proc=2)` process, on the real engines. Each error crosses the
process boundary pickled (`BERTScoreError.__reduce__`; every class: tests/unit/test_errors_travel.py)."""

from __future__ import annotations

import re
import signal

import pytest

from bertscore_tm import PACKAGED_MINILM, BatchScorer
from bertscore_tm.errors import ArgumentValueError

MESSAGE = r"idf_weights.*idf=True"


def build_in_worker(batch):
    BatchScorer(PACKAGED_MINILM, idf_weights={101: 1.0})
    return batch


def in_chain(err: BaseException | None) -> list[BaseException]:
    """`err` and the errors it wraps (Ray's `cause`, Python's ``__cause__``)."""
    seen: list[BaseException] = []
    while err is not None and err not in seen:
        seen.append(err)
        err = getattr(err, "cause", None) or err.__cause__
    return seen


def test_the_error_to_expect_is_raised_here() -> None:
    with pytest.raises(ArgumentValueError, match=MESSAGE):
        build_in_worker({})


def test_from_a_ray_data_task() -> None:
    ray = pytest.importorskip("ray")
    pytest.importorskip("ray.data")
    sigterm = signal.getsignal(signal.SIGTERM)  # ray.init leaves its own handler: put the process's back
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
    try:
        rows = ray.data.from_items([{"candidate": "A cat.", "reference": "A cat sat."}])

        def build(batch):  # pickled by value: the workers do not import the test module
            BatchScorer(PACKAGED_MINILM, idf_weights={101: 1.0})
            return batch

        with pytest.raises(Exception) as caught:
            rows.map_batches(build, batch_format="pandas").take_all()
    finally:
        ray.shutdown()
        signal.signal(signal.SIGTERM, sigterm)
    chain = in_chain(caught.value)
    assert "Failed to deserialize" not in str(caught.value)
    assert "UnserializableException" not in "".join(type(e).__name__ for e in chain)
    # Ray Data wraps a task's error in its UserCodeException; what the caller gets shows the error's own line
    assert re.search(rf"ArgumentValueError: {MESSAGE}", str(caught.value)), str(caught.value)


def test_from_a_datasets_process() -> None:
    datasets = pytest.importorskip("datasets")
    rows = datasets.Dataset.from_dict({"candidate": ["A cat.", "A dog."], "reference": ["A cat sat.", "A dog ran."]})
    with pytest.raises(ArgumentValueError, match=MESSAGE) as caught:
        rows.map(build_in_worker, batched=True, batch_size=1, num_proc=2)
    assert caught.value.argument is not None
