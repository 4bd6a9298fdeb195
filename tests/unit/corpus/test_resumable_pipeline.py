"""The corpus runs' pipeline (`resumable.prepared_ahead`): shard k + 1 is tokenised on the call's own thread
while shard k embeds, the very scores of the metric (the other tests of resumable runs compare them bit for
bit), the thread gone when the call ends, and every error and warning of a shard raised or said at that shard's
turn, after the shards before it are saved."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
import torch

from bertscore_tm import BERTScore
from bertscore_tm.corpus import resumable
from bertscore_tm.corpus.resumable import TOKENISING_THREAD, prepared_ahead, score_resumable, score_stream
from bertscore_tm.errors import ArgumentValueError
from bertscore_tm.models.tokenizing import PairTokenizer
from tests.conftest import MINILM

pytestmark = pytest.mark.usefixtures("one_thread")

PAIRS, SHARD = 16, 4


@pytest.fixture(scope="module")
def texts(wmt) -> tuple[list[str], list[str]]:
    return wmt["hyps_long"][:PAIRS], wmt["refs_long"][:PAIRS]


@pytest.fixture(scope="module")
def metric() -> BERTScore:
    return BERTScore(MINILM, num_layers=3)


def _shards(folder: Path) -> int:
    return len(list(folder.glob("rank0-shard*.npy")))


@pytest.mark.slow
def test_the_next_shard_is_tokenised_on_the_calls_own_thread_while_one_embeds(metric, texts, tmp_path, monkeypatch):
    """Shard 0's scoring waits until shard 1's tokenisation has begun, which it could not if the two ran in turn;
    every tokenisation runs on the tokenising thread, and none is left running after the call."""
    threads: list[str] = []
    ahead = threading.Event()
    real_pairs, real_score = PairTokenizer.pairs, resumable._score_tokens

    def tokenising(self, cands, *args, **kwargs):
        threads.append(threading.current_thread().name)
        if len(threads) == 2:
            ahead.set()
        return real_pairs(self, cands, *args, **kwargs)

    def scoring(*args, **kwargs):
        if not ahead.is_set():
            assert ahead.wait(timeout=120), "the next shard was not tokenised while this one was scored"
        return real_score(*args, **kwargs)

    monkeypatch.setattr(PairTokenizer, "pairs", tokenising)
    monkeypatch.setattr(resumable, "_score_tokens", scoring)
    got = score_resumable(metric, *texts, tmp_path, shard_size=SHARD)
    assert len(threads) == PAIRS // SHARD and all(name.startswith(TOKENISING_THREAD) for name in threads)
    assert not [t for t in threading.enumerate() if t.name.startswith(TOKENISING_THREAD)]
    metric.reset()
    metric.update(*texts)
    assert torch.equal(got.f1, metric.compute_scores().f1)
    metric.reset()


@pytest.mark.slow
def test_a_shards_tokenisation_error_comes_at_its_turn_after_the_shards_before_are_saved(texts, tmp_path):
    """``idf_weights`` without a weight for a token of shard 2 alone: shards 0 and 1 are scored and kept first."""
    cands, refs = texts
    known = BERTScore(MINILM, num_layers=3, idf=True)
    known.update(cands[: 2 * SHARD], refs[: 2 * SHARD])
    weights = known.idf_weights()
    first = known.tokenize(cands[: 2 * SHARD], refs[: 2 * SHARD])
    seen = set(torch.cat([first.cand_ids, first.ref_ids]).tolist())
    later = known.tokenize(cands[2 * SHARD :], refs[2 * SHARD :])
    extra = [int(i) for i in torch.cat([later.cand_ids, later.ref_ids]).tolist() if int(i) not in seen]
    assert extra  # shards 2 and 3 hold a token the first two lack
    fixed = BERTScore(MINILM, num_layers=3, idf=True, idf_weights={i: weights[i] for i in seen})
    with pytest.raises(ArgumentValueError, match="idf_weights has no weight"):
        score_resumable(fixed, cands, refs, tmp_path, shard_size=SHARD)
    assert _shards(tmp_path) == 2


def test_a_streams_errors_and_warnings_come_at_their_shards_turn(metric, texts, tmp_path, monkeypatch):
    """A long text in shard 2 is warned about once shards 0 and 1 are yielded; the iterable's own error, while
    shard 3 is read, comes after shard 2 is yielded."""
    cands, refs = texts
    said: list[tuple[str, int]] = []
    monkeypatch.setattr(resumable, "warn_user", lambda message: said.append((message, _shards(tmp_path))))

    def pairs():
        for k, (c, r) in enumerate(zip(cands, refs, strict=True)):
            if k == 3 * SHARD:
                raise OSError("the source went away")
            yield ("word " * 700 if k == 2 * SHARD else c), r

    got = []
    with pytest.raises(OSError, match="went away"):
        for scores in score_stream(metric, pairs(), tmp_path, shard_size=SHARD):
            got.append(scores)
    assert len(got) == 3 and _shards(tmp_path) == 3
    assert [count for message, count in said if "truncated" in message] == [2]
    assert not [t for t in threading.enumerate() if t.name.startswith(TOKENISING_THREAD)]


def test_prepared_ahead_raises_a_items_error_where_it_is_taken_and_shuts_its_thread_down():
    def prepare(n: int) -> int:
        if n == 3:
            raise ValueError("item 3")
        return n * n

    taken = []
    with pytest.raises(ValueError, match="item 3"):
        for n, square in prepared_ahead(range(5), prepare):
            taken.append((n, square))
    assert taken == [(0, 0), (1, 1), (2, 4)]
    assert not [t for t in threading.enumerate() if t.name.startswith(TOKENISING_THREAD)]
