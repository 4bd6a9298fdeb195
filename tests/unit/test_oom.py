"""Out-of-memory back-off (issue 26): a forward pass that runs out of accelerator memory is retried with half the
token budget, down to one text, with one warning and the very same scores; a text that does not fit alone is a
clear error naming its length. The error is injected on the CPU (CI has no accelerator)."""

from __future__ import annotations

import warnings

import pytest
import torch

from bertscore_tm import BERTScore
from bertscore_tm.errors import DeviceMemoryError
from tests.conftest import MINILM

pytestmark = pytest.mark.usefixtures("one_thread")


def _failing_above(metric: BERTScore, limit: int, error: Exception | None = None) -> list[int]:
    """Make the metric's forward passes of more than `limit` padded tokens raise an out-of-memory error (or
    `error`); returns the padded sizes of the passes that ran."""
    embedder = metric.embedder
    real = embedder.embed_rows
    ran: list[int] = []

    def embed_rows(seqs):
        padded = len(seqs) * max(len(s) for s in seqs)
        if padded > limit:
            raise error or torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        ran.append(padded)
        return real(seqs)

    embedder.embed_rows = embed_rows  # type: ignore[method-assign]
    return ran


def test_a_pass_out_of_memory_is_retried_with_half_the_budget_and_the_same_scores(wmt):
    # texts of one length run in one forward batch: 48 of them make batches larger than the injected limit
    cands = [f"Sentence number {i} is here." for i in range(48)] + wmt["hyps"]
    refs = [f"This is line {i} of the file." for i in range(48)] + wmt["refs"]
    plain = BERTScore(MINILM, idf=True)
    plain.update(cands, refs)
    want = plain.compute()
    metric = BERTScore(MINILM, idf=True)
    ran = _failing_above(metric, limit=150)
    metric.update(cands, refs)
    with pytest.warns(UserWarning, match=r"ran out of memory .* budget of 2048 padded tokens; it went on with \d+"):
        got = metric.compute()
    for key in ("precision", "recall", "f1"):
        assert torch.equal(got[key], want[key]), key
    assert metric.embedder.max_tokens < 2048 and ran and max(ran) <= 150
    with warnings.catch_warnings():  # the budget that worked is kept: no second warning
        warnings.simplefilter("error")
        assert torch.equal(metric.pairwise(cands[:30], refs[:20])["f1"], plain.pairwise(cands[:30], refs[:20])["f1"])


def test_one_text_that_does_not_fit_alone_is_a_clear_error_naming_its_length(wmt):
    metric = BERTScore(MINILM)
    _failing_above(metric, limit=8)
    metric.update(["A short one.", wmt["hyps_long"][0]], ["Short.", wmt["refs_long"][0]])
    with pytest.raises(DeviceMemoryError, match=r"One text of \d+ tokens does not fit in the memory of cpu") as err:
        metric.compute()
    assert err.value.tokens > 8 and err.value.argument == "max_length"


def test_other_errors_of_a_forward_pass_are_not_taken_for_memory(wmt):
    metric = BERTScore(MINILM)
    _failing_above(metric, limit=0, error=RuntimeError("shape mismatch"))
    metric.update(["A cat."], ["A dog."])
    with pytest.raises(RuntimeError, match="shape mismatch"):
        metric.compute()
