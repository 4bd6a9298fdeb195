"""Out-of-memory back-off (issue 26): a forward pass that runs out of accelerator memory is retried with half the
token budget, down to one text, with one warning and the very same scores; a text that does not fit alone is a
clear error naming its length. The error is injected on the CPU (CI has no accelerator)."""

from __future__ import annotations

import warnings

import pytest
import torch

from bertscore_tm import BERTScore
from bertscore_tm.embedding.embedder import Embedder
from bertscore_tm.errors import DeviceMemoryError
from tests.conftest import MINILM

pytestmark = pytest.mark.usefixtures("one_thread")


def _failing_above(metric: BERTScore, limit: int, error: Exception | None = None) -> list[int]:
    """Make the metric's forward passes of more than `limit` padded tokens raise an out-of-memory error (or
    `error`); returns the padded sizes of the passes that ran."""
    embedder = metric.embedder
    real = embedder.embed_rows
    ran: list[int] = []

    def embed_rows(seqs, out=None, **kw):
        padded = len(seqs) * max(len(s) for s in seqs)
        if padded > limit:
            raise error or torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        ran.append(padded)
        return real(seqs, out, **kw)

    embedder.embed_rows = embed_rows  # type: ignore[method-assign]
    return ran


@pytest.mark.slow
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


SMALLER_TABLE = r"table of token vectors of a 16 MiB working budget .*; it went on with 8 MiB"


def _tables_above(limit: int, monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, ...]]:
    """Make every float32 table of more than `limit` rows run out of memory; returns the shapes asked for."""
    empty, asked = torch.empty, []

    def fake_empty(*args, **kwargs):
        if args and isinstance(args[0], tuple) and kwargs.get("dtype") is torch.float32:
            asked.append(args[0])
            if args[0][0] > limit:
                raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 16.00 MiB")
        return empty(*args, **kwargs)

    monkeypatch.setattr(torch, "empty", fake_empty)
    return asked


@pytest.fixture
def two_blocks(wmt, monkeypatch):
    """A 16 MiB working budget, in which 400 long WMT pairs (18,000 tokens) take two blocks of about 10,900 rows:
    the scores of a run with room enough, and a metric updated with the same pairs."""
    monkeypatch.setattr(Embedder, "block_bytes", property(lambda self: 16 << 20))
    cands, refs = wmt["hyps_long"][:400], wmt["refs_long"][:400]
    plain, metric = BERTScore(MINILM), BERTScore(MINILM)
    plain.update(cands, refs)
    metric.update(cands, refs)
    return plain.compute(), metric


def _same_scores(got: dict, want: dict) -> None:
    for key in ("precision", "recall", "f1"):
        assert torch.equal(got[key], want[key]), key


@pytest.mark.slow
def test_a_table_without_room_is_planned_again_smaller_with_the_same_scores(two_blocks, monkeypatch):
    want, metric = two_blocks
    asked = _tables_above(8000, monkeypatch)
    with pytest.warns(UserWarning, match=SMALLER_TABLE):
        _same_scores(metric.compute(), want)
    assert asked[0][0] > 8000 and any(rows <= 8000 for rows, *_ in asked)


def test_a_table_that_fits_in_no_plan_is_a_clear_error_naming_its_size(monkeypatch):
    metric = BERTScore(MINILM)
    metric.update(["A cat sat on the mat."], ["The cat was on the mat."])
    _tables_above(3, monkeypatch)
    with pytest.raises(DeviceMemoryError, match=r"has no room for the token vectors of \d+ tokens \(\d+ MiB\)") as err:
        metric.compute()
    assert err.value.tokens > 3


@pytest.mark.slow
def test_a_text_that_fits_only_beside_a_smaller_table_is_planned_again(two_blocks, monkeypatch):
    # the forward passes run out of memory while the table has more than 8000 rows, whatever their size
    want, metric = two_blocks
    asked = _tables_above(10**9, monkeypatch)
    real = metric.embedder.embed_rows

    def embed_rows(seqs, out=None, **kw):
        if asked[-1][0] > 8000:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 8.00 MiB")
        return real(seqs, out, **kw)

    metric.embedder.embed_rows = embed_rows  # type: ignore[method-assign]
    with pytest.warns(UserWarning, match=SMALLER_TABLE):
        _same_scores(metric.compute(), want)
    assert metric.embedder.max_tokens == 2048  # the forward budget as before: it fit beside the smaller table
