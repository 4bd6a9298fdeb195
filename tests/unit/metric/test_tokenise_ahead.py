"""Tokenising ahead (bertscore_tm.models.ahead): update() hands its texts to a background thread and returns;
its pairs must join the state, in order and bit for bit as a synchronous update() adds them, before anything
reads it (torchmetrics' forward, merge_state, copies, pickles, reset, a user), and its errors and warnings
must still reach the user. A compute() while the thread still tokenises scores the joined pairs in chunks
(`QueuedUpdates._score_queued`): the very scores, each pair scored once."""

from __future__ import annotations

import copy
import os
import pickle
import threading
import time
import warnings

import pytest
import torch

from bertscore_tm import BERTScore
from bertscore_tm.errors import ArgumentValueError
from bertscore_tm.metric import pending, queued
from bertscore_tm.models import ahead
from bertscore_tm.models.tokenizing import TextEncoder
from tests.conftest import MINILM

pytestmark = pytest.mark.usefixtures("one_thread")

TOKEN_STATES = ("cand_ids", "cand_lens", "ref_ids", "ref_lens", "ref_counts")


@pytest.fixture(scope="module")
def pairs(wmt) -> tuple[list[str], list]:
    """WMT pairs, with a repeated text, a blank one, several references for some, and a long one cut."""
    cands = [*wmt["hyps_long"][:150], "   ", wmt["hyps_long"][0], "word " * 700]
    refs: list = [*wmt["refs_long"][:150], "a reference", [wmt["refs_long"][1], wmt["refs"][2]], "x"]
    return cands, refs


@pytest.fixture
def held(monkeypatch):
    """The tokenising thread held until `.set()`: update()s stay queued while a test reads the metric."""
    gate = threading.Event()
    real = TextEncoder._rust_ids

    def slow(self, texts):
        gate.wait(timeout=60)
        return real(self, texts)

    monkeypatch.setattr(TextEncoder, "_rust_ids", slow)
    yield gate
    gate.set()


@pytest.fixture
def chunked(monkeypatch):
    """compute() chunks of 40 texts, the thread's calls one update() each, and every call after the second held
    until the first chunk is matched: a compute() right after the update()s finds pairs joined and pairs still
    queued. Yields the pairs each matching saw, and the gate."""
    gate, calls, seen = threading.Event(), [], []
    real_ids, real_match = TextEncoder._rust_ids, pending.match_pairs

    def gated(self, texts):
        if threading.current_thread().name == "bertscore-tm-tokenise":  # not a synchronous update()
            calls.append(len(texts))
            if len(calls) > 2:
                gate.wait(timeout=60)  # a compute() that never scores a chunk early fails, not hangs
        return real_ids(self, texts)

    def matched(scorer, pairs, is_new, *args, **kwargs):
        seen.append(int(is_new.sum()))
        gate.set()
        return real_match(scorer, pairs, is_new, *args, **kwargs)

    monkeypatch.setattr(TextEncoder, "_rust_ids", gated)
    monkeypatch.setattr(pending, "match_pairs", matched)
    monkeypatch.setattr(ahead, "MOST_TEXTS", 16)
    monkeypatch.setattr(queued, "CHUNK_TEXTS", 40)
    yield seen, gate
    gate.set()


def _fed(pairs, ahead_on: bool, **kwargs) -> BERTScore:
    metric = BERTScore(MINILM, **kwargs)
    metric.tokenise_ahead = ahead_on
    cands, refs = pairs
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i in range(0, len(cands), 16):
            metric.update(cands[i : i + 16], refs[i : i + 16], indexes=list(range(i, min(i + 16, len(cands)))))
    return metric


def test_pairs_tokenised_ahead_make_the_very_state_and_scores_of_synchronous_updates(pairs) -> None:
    ahead_metric, plain = _fed(pairs, True, idf=True), _fed(pairs, False, idf=True)
    with warnings.catch_warnings():  # a queued batch's warnings (a long text, a blank one) come as it joins
        warnings.simplefilter("ignore")
        for name in (*TOKEN_STATES, "indexes"):
            assert torch.equal(torch.cat(getattr(ahead_metric, name)), torch.cat(getattr(plain, name))), name
        assert torch.equal(ahead_metric.doc_freq, plain.doc_freq)
        assert int(ahead_metric.num_refs) == int(plain.num_refs)
        got, want = ahead_metric.compute(), plain.compute()
    assert all(torch.equal(got[key], want[key]) for key in want)


@pytest.mark.parametrize("batching", [None, "accelerator"], ids=["cpu", "accelerator-batching"])
def test_a_compute_while_pairs_are_still_tokenised_scores_them_in_chunks_to_the_same_scores(
    pairs, chunked, batching
) -> None:
    """The very bits in a CPU's batches of one length; within 1e-6 in float32 in a GPU's packs (run on the CPU),
    where a chunk's packs hold other texts than one compute()'s."""
    seen, gate = chunked
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = _fed(pairs, False, idf=True).compute()
        seen.clear(), gate.clear()  # the gate opens at the next matching: the chunked compute()'s first
        metric = _fed(pairs, True, idf=True)  # indexes, several references, a blank and a long text
        metric.embedder._batching = batching
        got = metric.compute()
    assert len(seen) >= 2 and seen[0] == 32  # the first two update()s, while the others still waited
    assert sum(seen) == len(pairs[0])  # each pair matched once
    if batching is None:
        assert all(torch.equal(got[key], want[key]) for key in want)
    else:
        assert all(torch.allclose(got[key], want[key], rtol=0, atol=1e-6) for key in want)


@pytest.mark.parametrize("joined", [1, 2], ids=["first-joined", "first-two-joined"])
def test_pairs_that_joined_at_an_update_count_toward_compute_s_first_chunk(pairs, chunked, joined) -> None:
    """The first (two) update()s' pairs are tokenised, and join, before the next update() returns: compute()
    must count them, and score them before it waits for the thread again (its later calls are held here until a
    matching, so a compute() that waited first would see the gate's timeout and match 48 pairs first). CI's
    load made the second case happen by chance."""
    seen, _ = chunked
    cands, refs = pairs
    metric = BERTScore(MINILM)
    metric.tokenise_ahead = True
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i in range(0, len(cands), 16):
            metric.update(cands[i : i + 16], refs[i : i + 16])  # a batch the thread has done joins at the next
            while i < 16 * joined and not metric._queued[-1][0].ready():
                time.sleep(0.01)
        started = time.perf_counter()
        metric.compute()
    assert seen[0] == 32 and time.perf_counter() - started < 50


def test_score_systems_waits_for_every_pair_so_each_shared_reference_embeds_once(pairs, chunked) -> None:
    from bertscore_tm.comparison.systems import score_systems

    cands, refs = pairs[0][:20], pairs[1][:20]
    metric = BERTScore(MINILM)
    metric.tokenise_ahead = True
    before = metric.embedder.rows_embedded
    seen, gate = chunked
    threading.Timer(0.3, gate.set).start()  # the third system's tokens come late
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        score_systems(metric, [cands, [c.upper() for c in cands], list(reversed(cands))], refs)
    assert seen == [60]  # one matching of every pair, not a chunk of the first system's
    texts = {t.strip() for t in [*cands, *(c.upper() for c in cands)]} | {str(r) for r in refs}
    assert metric.embedder.rows_embedded - before <= len(texts)


def test_update_waits_for_the_oldest_batch_only_past_the_most_queued_texts(pairs, held, monkeypatch) -> None:
    monkeypatch.setattr(queued, "MOST_QUEUED_TEXTS", 40)
    metric = BERTScore(MINILM)
    metric.tokenise_ahead = True
    metric.update(pairs[0][:10], pairs[1][:10])  # 20 texts: queued, the thread held
    metric.update(pairs[0][10:20], pairs[1][10:20])  # 40: still within
    assert len(metric.__dict__["_queued"]) == 2
    started = time.perf_counter()
    threading.Timer(0.3, held.set).start()  # timed from before its start: a paused test cannot shorten it
    metric.update(pairs[0][20:30], pairs[1][20:30])  # 60 > 40: waits for the oldest
    assert time.perf_counter() - started >= 0.3
    assert metric.__dict__["_queued_texts"] <= 40  # the oldest joined (and any the thread did meanwhile)
    metric.join_queued()
    assert not metric.__dict__["_queued"] and metric.__dict__["_queued_texts"] == 0
    assert sum(len(x) for x in metric.cand_lens) == 30


def test_every_reader_of_the_state_takes_the_queued_pairs_in_first(pairs, held) -> None:
    cands, refs = pairs[0][:40], pairs[1][:40]
    metric = BERTScore(MINILM)
    metric.tokenise_ahead = True
    metric.update(cands[:20], refs[:20])
    metric.update(cands[20:], refs[20:])
    assert len(metric._queued) == 2  # the thread is held: nothing joined yet
    held.set()
    assert sum(len(x) for x in metric.cand_lens) == 40 and not metric._queued  # a plain read, in order
    plain = BERTScore(MINILM)
    plain.update(cands, refs)
    assert torch.equal(torch.cat(metric.cand_ids), torch.cat(plain.cand_ids))


@pytest.mark.parametrize("reader", ["deepcopy", "pickle", "merge_state", "metric_state", "to", "compute"])
def test_copies_merges_moves_and_compute_hold_every_queued_pair(pairs, held, reader: str) -> None:
    cands, refs = pairs[0][:24], pairs[1][:24]
    metric = BERTScore(MINILM)
    metric.tokenise_ahead = True
    metric.update(cands, refs)
    threading.Timer(0.2, held.set).start()  # released while the reader waits for the tokens
    if reader == "deepcopy":
        metric = copy.deepcopy(metric)
    elif reader == "pickle":
        metric = pickle.loads(pickle.dumps(metric))
    elif reader == "merge_state":
        other = BERTScore(MINILM)
        other.merge_state(metric)
        metric = other
    elif reader == "metric_state":
        assert len(metric.metric_state["cand_lens"]) == 1
    elif reader == "to":
        metric = metric.to("cpu")
    assert metric.compute()["f1"].shape == (24,)


def test_a_state_written_after_queued_updates_is_written_after_their_pairs_join(pairs, held) -> None:
    metric = BERTScore(MINILM, idf=True)
    metric.tokenise_ahead = True
    metric.update(pairs[0][:6], pairs[1][:6])
    threading.Timer(0.2, held.set).start()
    metric.num_refs = torch.zeros((), dtype=torch.long)  # as after a synchronous update(): the write is last
    assert int(metric.num_refs) == 0 and len(metric.cand_lens) == 1


def test_score_systems_with_idf_scores_the_same_tokenising_ahead(pairs) -> None:
    """`score_systems` restores the IDF counts after each system's update(): a queued system's references must
    join before the counts are restored, not after (they would count twice)."""
    from bertscore_tm.comparison.systems import score_systems

    cands, refs = pairs[0][:30], pairs[1][:30]
    systems = [cands, [c.upper() for c in cands], list(reversed(cands))]
    results = []
    for ahead_on in (False, True):
        metric = BERTScore(MINILM, idf=True)
        metric.tokenise_ahead = ahead_on
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            results.append(score_systems(metric, systems, refs))
    assert all(torch.equal(results[0][key], results[1][key]) for key in results[0])


def test_forward_scores_its_batch_and_keeps_the_queued_pairs_before_it(pairs) -> None:
    cands, refs = pairs[0][:30], pairs[1][:30]
    metric, plain = BERTScore(MINILM), BERTScore(MINILM)
    metric.tokenise_ahead = True
    metric.update(cands[:10], refs[:10])
    batch = metric(cands[10:30], refs[10:30])  # torchmetrics' forward: this batch alone, then merged
    plain.update(cands[:10], refs[:10])
    want_batch = plain(cands[10:30], refs[10:30])
    assert torch.equal(batch["f1"], want_batch["f1"])
    assert torch.equal(metric.compute()["f1"], plain.compute()["f1"])


def test_reset_drops_what_was_queued_without_waiting_for_it(pairs, held) -> None:
    metric = BERTScore(MINILM)
    metric.tokenise_ahead = True
    metric.update(pairs[0][:8], pairs[1][:8])
    started = time.perf_counter()
    metric.reset()  # the thread is still held: taking the batch in would wait for it
    assert time.perf_counter() - started < 30 and not metric.__dict__["_queued"]
    held.set()
    metric.update(pairs[0][8:10], pairs[1][8:10])
    assert metric.compute()["f1"].shape == (2,)


def test_a_batch_whose_tokens_fail_raises_when_taken_and_the_others_stay(held) -> None:
    """idf_weights without a weight for a token of one batch: its error, naming the problem, is raised where
    the batch joins (compute()); it adds nothing, and the batch queued after it joins at the next read."""
    plain = BERTScore(MINILM)
    bad = plain.scorer.encoder.tokenizer.convert_tokens_to_ids("perfectly")  # not through the held thread
    weights = {i: 1.0 for i in range(plain.scorer.vocab_size) if i != bad}
    metric = BERTScore(MINILM, idf=True, idf_weights=weights)
    metric.tokenise_ahead = True
    metric.update(["a perfectly ordinary sentence"], ["another ordinary sentence"])
    metric.update(["an ordinary sentence"], ["another ordinary sentence"])
    held.set()
    with pytest.raises(ArgumentValueError, match="idf_weights has no weight for 1 token id"):
        metric.compute()
    assert len(metric.__dict__["_queued"]) == 1
    assert metric.compute()["f1"].shape == (1,)


def test_warnings_of_a_queued_batch_are_said_when_it_joins(pairs, held) -> None:
    metric = BERTScore(MINILM)
    metric.tokenise_ahead = True
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        metric.update(["   ", "fine"], ["a reference", "another"])
    assert not [w for w in seen if "blank" in str(w.message)]
    held.set()
    with pytest.warns(UserWarning, match="1 blank text"):
        metric.compute()


def test_prompts_contexts_and_the_cpu_default_tokenise_in_the_callers_thread(pairs) -> None:
    cands, refs = pairs[0][:4], pairs[1][:4]
    assert BERTScore.tokenise_ahead is None and not BERTScore(MINILM)._tokenises_ahead()  # a CPU metric
    prompted = BERTScore(MINILM, candidate_prompt="query: ")
    prompted.tokenise_ahead = True
    prompted.update(cands, refs)
    contexted = BERTScore(MINILM)
    contexted.tokenise_ahead = True
    contexted.update(cands, refs, context=["some context"] * 4)
    assert not prompted.__dict__["_queued"] and not contexted.__dict__["_queued"]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="a platform without fork")
def test_a_process_forked_with_pairs_queued_tokenises_them_itself_and_never_hangs(pairs, held) -> None:
    cands, refs = pairs[0][:12], pairs[1][:12]
    metric = BERTScore(MINILM)
    metric.tokenise_ahead = True
    metric.update(cands, refs)  # held: still queued when the process forks
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its copy of the thread never runs
        code = 1
        try:
            os.close(reader)
            held.set()  # the child's own gate: only the parent's thread waits at the parent's
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                f1 = metric.compute()["f1"]
            os.write(writer, pickle.dumps(f1.tolist()))
            code = 0
        finally:
            os._exit(code)
    os.close(writer)
    deadline = time.monotonic() + 60
    while os.waitpid(pid, os.WNOHANG) == (0, 0):
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            pytest.fail("the forked process hung on its queued pairs")
        time.sleep(0.1)
    got = pickle.loads(os.read(reader, 1 << 20))
    held.set()
    plain = BERTScore(MINILM)
    plain.update(cands, refs)
    assert got == plain.compute()["f1"].tolist()


def test_the_thread_encodes_waiting_jobs_together_and_hands_each_its_share() -> None:
    calls: list[int] = []
    gate, entered = threading.Event(), threading.Event()

    def encode(texts):
        entered.set()
        gate.wait(timeout=60)
        calls.append(len(texts))
        if "boom" in texts:
            raise ValueError("boom")
        return [[len(t)] for t in texts], [False] * len(texts)

    first = ahead.tokenise_ahead(encode, ["a"])
    assert entered.wait(timeout=60)  # the thread took the first job alone and waits at the gate
    later = [ahead.tokenise_ahead(encode, ["bb", "ccc"]), ahead.tokenise_ahead(encode, ["dddd"])]
    gate.set()
    assert first.result(timeout=60) == ([[1]], [False])
    assert [f.result(timeout=60)[0] for f in later] == [[[2], [3]], [[4]]]
    assert calls[-1] == 3  # the two waiting jobs in one call
    failed = ahead.tokenise_ahead(encode, ["boom"])
    with pytest.raises(ValueError, match="boom"):
        failed.result(timeout=60)


@pytest.mark.parametrize("value", ["false", 1, 0.0])
def test_a_setting_that_is_not_a_bool_or_none_is_refused_naming_it(value) -> None:
    metric = BERTScore(MINILM)
    metric.tokenise_ahead = value
    with pytest.raises(ArgumentValueError, match="tokenise_ahead must be True, False or None"):
        metric.update(["a candidate"], ["a reference"])
    assert not metric.__dict__["_queued"] and not metric.cand_ids  # nothing added


def test_each_job_is_finished_on_the_thread_and_a_failing_finish_fails_that_job_alone() -> None:
    def encode(texts):
        return [[len(t)] for t in texts], [False] * len(texts)

    def finish(ids, cut):
        if ids == [[4]]:
            raise ValueError("bad job")
        return threading.current_thread().name, ids

    good, bad = ahead.tokenise_ahead(encode, ["bb"], finish), ahead.tokenise_ahead(encode, ["dddd"], finish)
    assert good.result(timeout=60) == ("bertscore-tm-tokenise", [[2]])
    with pytest.raises(ValueError, match="bad job"):
        bad.result(timeout=60)
