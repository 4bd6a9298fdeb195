"""dtype conversions of the metric (`.half()`, `.double()`, `.to(dtype)`, `set_dtype()`, mid-stream) never cast
its states: token ids, lengths and counts stay integers, the best similarities stay float32 (kept as their
int32 bits, which no conversion casts), so the next compute() gives exactly the float32 result.
(`set_dtype(torch.half)` used to turn token ids into float16 and `.to(torch.float16)` rounded the kept
similarities.)"""

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
    "cand_marked": torch.bool,  # a prompt's and a context's tokens
    "ref_marked": torch.bool,
    "scored": torch.bool,
    "cand_best": torch.int32,  # float32 similarities kept as their bits: no dtype conversion casts integers
    "ref_best": torch.int32,
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


@pytest.mark.filterwarnings("ignore:BERTScore.set_dtype")
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


# -- a caller's autocast (Lightning's "16-mixed" / "bf16-mixed" steps, a `torch.autocast` block) -------------------
# The metric computes in the precision its setting names whatever autocast surrounds it: compute() under a caller's
# bfloat16 autocast used to raise (half-precision similarities written into float32 results) and pairwise() to
# round its scores to bfloat16.
AUTOCASTS = [torch.bfloat16, torch.float16]
PAIRS = (FIRST[0] + SECOND[0], [FIRST[1][0], "Prices went up a lot.", SECOND[1][0]])


@pytest.fixture(scope="module")
def plain() -> BERTScore:
    return BERTScore(MINILM)


@pytest.mark.parametrize("dtype", AUTOCASTS, ids=str)
def test_compute_and_forward_under_a_callers_autocast_give_the_float32_scores(plain, dtype):
    plain.reset()
    plain.update(*PAIRS)
    want = plain.compute()
    plain.reset()
    plain.update(*PAIRS)
    with torch.autocast("cpu", dtype=dtype):
        got = plain.compute()
        stepped = plain(*PAIRS)  # forward(): update and compute of the step's pairs, as in a validation step
    for key in ("precision", "recall", "f1"):
        assert got[key].dtype == torch.float32
        assert torch.equal(got[key], want[key]), key
        assert torch.equal(stepped[key], want[key]), key
    assert torch.is_autocast_enabled("cpu") is False  # the caller's context was left as it was outside


@pytest.mark.parametrize("dtype", AUTOCASTS, ids=str)
def test_pairwise_and_mbr_under_a_callers_autocast_are_unchanged(plain, dtype):
    cands, refs = PAIRS
    groups = [cands, refs]
    want = plain.pairwise(cands, refs)
    want_mbr = plain.mbr_select(groups, return_utilities=True)
    with torch.autocast("cpu", dtype=dtype):
        got = plain.pairwise(cands, refs)
        got_mbr = plain.mbr_select(groups, return_utilities=True)
        assert torch.is_autocast_enabled("cpu")  # switched off inside the metric only
    for key in ("precision", "recall", "f1"):
        assert torch.equal(got[key], want[key]), key
    assert got_mbr[0] == want_mbr[0]
    assert all(torch.equal(a, b) for a, b in zip(got_mbr[1], want_mbr[1], strict=True))


def test_a_bfloat16_metric_under_a_callers_float16_autocast_keeps_its_own_precision():
    metric = BERTScore(MINILM, model_dtype=torch.bfloat16)
    metric.update(*PAIRS)
    want = metric.compute()
    metric.reset()
    metric.update(*PAIRS)
    with torch.autocast("cpu", dtype=torch.float16):
        got = metric.compute()
    assert torch.equal(got["f1"], want["f1"])


def test_reduced_precision_float32_products_are_left_alone_but_warned_once(plain):
    from bertscore_tm.embedding.precision import _warn_reduced_products

    plain.reset()
    plain.update(*PAIRS)
    want = plain.compute()
    _warn_reduced_products.cache_clear()
    torch.set_float32_matmul_precision("medium")  # float32 products in bfloat16 where the CPU can
    try:
        with pytest.warns(UserWarning, match=r"float32 matrix products on cpu are set to run in bf16") as said:
            plain.reset()
            plain.update(*PAIRS)
            got = plain.compute()
            plain.pairwise(*PAIRS)
        warned = [w for w in said if "float32 matrix products" in str(w.message)]
        assert len(warned) == 1  # once, not once per compute() or pairwise()
        assert warned[0].filename == __file__  # names the caller's line
        assert torch.backends.mkldnn.matmul.fp32_precision == "bf16"  # the process's setting, left as it was
    finally:
        torch.set_float32_matmul_precision("highest")
    # close, not equal: where the CPU has AMX the products really run in bfloat16 (F1 moved by 4e-4, seen)
    torch.testing.assert_close(got["f1"], want["f1"], atol=5e-3, rtol=0)


def test_a_callers_autocast_is_switched_off_with_the_queries_of_torch_before_2_4(plain, monkeypatch):
    # torch 2.1-2.3 (within the supported range) has no torch.amp.is_autocast_available and no device argument
    # to torch.is_autocast_enabled: the older queries are used instead
    plain.reset()
    plain.update(*PAIRS)
    want = plain.compute()
    monkeypatch.delattr(torch.amp, "is_autocast_available")
    plain.reset()
    plain.update(*PAIRS)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        got = plain.compute()
    assert torch.equal(got["f1"], want["f1"])
