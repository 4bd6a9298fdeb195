"""dtype conversions of the metric (`.half()`, `.double()`, `.to(dtype)`, `set_dtype()`, mid-stream) never cast
its states: token ids, lengths and counts stay integers, the best similarities stay float32, so the next
compute() gives exactly the float32 result. (`set_dtype(torch.half)` used to turn token ids into float16 and
`.to(torch.float16)` rounded the kept similarities.)"""

from __future__ import annotations

import pytest
import torch

from bertscore_tm import BERTScore
from tests.conftest import MINILM

FIRST = (
    ["The quick brown fox jumps over the lazy dog.", "Prices rose sharply."],
    ["A fast brown fox leaps over a lazy dog.", [" Prices went up a lot.", "Prices climbed."]],
)
SECOND = (["It rained all day in the city."], ["The whole day it was raining in town."])

CASTS = {
    ".half()": lambda m: m.half(),
    ".double()": lambda m: m.double(),
    ".bfloat16()": lambda m: m.bfloat16(),
    ".to(float16)": lambda m: m.to(torch.float16),
    ".to(float64)": lambda m: m.to(torch.float64),
    ".to(cpu, float16)": lambda m: m.to("cpu", torch.float16),
    "set_dtype(half)": lambda m: m.set_dtype(torch.half),
    "set_dtype(float64)": lambda m: m.set_dtype(torch.float64),
}

STATE_DTYPES = {
    "cand_ids": torch.int32,
    "cand_lens": torch.int32,
    "ref_ids": torch.int32,
    "ref_lens": torch.int32,
    "ref_counts": torch.int32,
    "scored": torch.bool,
    "cand_best": torch.float32,
    "ref_best": torch.float32,
}


@pytest.fixture(scope="module")
def expected() -> dict:
    """The float32 results, with and without a compute() between the updates (which embeds in other batches,
    so the two differ by float noise)."""
    results = {}
    for computed_before in (False, True):
        metric = BERTScore(MINILM, idf=True)
        metric.update(*FIRST)
        if computed_before:
            metric.compute()
        metric.update(*SECOND)
        results[computed_before] = metric.compute()
    return results


@pytest.fixture(scope="module")
def metric() -> BERTScore:
    return BERTScore(MINILM, idf=True)


def _check_states(metric: BERTScore) -> None:
    for name, dtype in STATE_DTYPES.items():
        for chunk in getattr(metric, name):
            assert chunk.dtype == dtype, (name, chunk.dtype)
    assert metric.doc_freq.dtype == torch.int64 and metric.num_refs.dtype == torch.int64


@pytest.mark.parametrize("cast", list(CASTS))
@pytest.mark.parametrize("computed_before", [False, True], ids=["between updates", "after a compute"])
def test_a_dtype_cast_mid_stream_keeps_states_and_scores_exact(metric, expected, cast, computed_before):
    metric.reset()
    metric.update(*FIRST)
    if computed_before:
        metric.compute()  # so that best similarities are kept in the states
    CASTS[cast](metric)
    _check_states(metric)
    metric.update(*SECOND)
    result = metric.compute()
    _check_states(metric)
    for key in ("precision", "recall", "f1"):
        assert result[key].dtype == torch.float32
        assert torch.equal(result[key], expected[computed_before][key]), key
    metric.reset()  # the defaults were not cast either
    _check_states(metric)
