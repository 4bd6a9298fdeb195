"""An error of the package raised in another process reaches the caller with its own message (and, where the
framework hands the error itself back, its own class and fields): inside a Ray Data `map_batches` actor and a
`datasets.map(num_proc=2)` worker, on the real engines. Without `BERTScoreError.__reduce__` Ray says only
"Failed to deserialize exception" and `datasets` fails unpickling the worker's error."""

from __future__ import annotations

import signal

import pytest

from bertscore_tm import PACKAGED_MINILM, BatchScorer, ColumnDataError

ROWS = [{"candidate": f"A cat sat {i}.", "reference": f"The cat sat {i}."} for i in range(8)]
#: `idf_weights` without ``idf=True``: refused where the scorer is built (inside the worker).
UNUSED_WEIGHTS = {"model_name_or_path": PACKAGED_MINILM, "idf_weights": {101: 0.0, 102: 0.0}}


def test_an_error_in_a_ray_actor_reaches_the_caller_with_its_message() -> None:
    ray = pytest.importorskip("ray")
    pytest.importorskip("ray.data")
    with pytest.raises(Exception) as here:  # what BatchScorer says in this process
        BatchScorer(**UNUSED_WEIGHTS)
    sigterm = signal.getsignal(signal.SIGTERM)  # ray.init leaves a SIGTERM handler of its own: put ours back
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        dataset = ray.data.from_items(ROWS, override_num_blocks=2)
        out = dataset.map_batches(
            BatchScorer, fn_constructor_kwargs=UNUSED_WEIGHTS, compute=ray.data.ActorPoolStrategy(size=1)
        )
        with pytest.raises(Exception) as there:
            out.materialize()
    finally:
        ray.shutdown()
        signal.signal(signal.SIGTERM, sigterm)
    said = str(there.value)
    assert "deserialize" not in said.lower()
    assert str(here.value).splitlines()[0] in said


def test_an_error_in_a_datasets_worker_reaches_the_caller_whole() -> None:
    datasets = pytest.importorskip("datasets")
    rows = [dict(r) for r in ROWS]
    rows[6]["reference"] = None  # in the second worker's half
    dataset = datasets.Dataset.from_list(rows)
    with pytest.raises(ColumnDataError, match=r"row \d+ of column 'reference' is empty") as err:
        dataset.map(BatchScorer(PACKAGED_MINILM), batched=True, batch_size=2, num_proc=2)
    assert err.value.column == "reference" and err.value.argument == "data"
