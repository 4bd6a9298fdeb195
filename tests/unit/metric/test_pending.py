"""Pairs scored by an earlier compute() or forward() keep their best similarities (`BERTScore._score_pending`): a
later compute() embeds and matches only the others, reading only the new list entries where they come last, and
interleaving old and new in pair order where they alternate (forward()'s and merge_state()'s merges); the
scores are those of one compute() over every pair. The host plans a scoring from its own copies of the entries
not scored yet (`metric/states.py`'s `HostCopies`), never from the entries an accelerator holds."""

from __future__ import annotations

import copy

import pytest
import torch

from bertscore_tm import BERTScore
from bertscore_tm.metric import bertscore as metric_module
from bertscore_tm.metric import states
from bertscore_tm.metric.states import HostCopies, new_entries
from tests.conftest import MINILM

pytestmark = [pytest.mark.usefixtures("one_thread"), pytest.mark.filterwarnings("ignore:1 blank text")]


@pytest.fixture(scope="module")
def pairs(wmt) -> tuple[list[str], list]:
    cands = [*wmt["hyps_long"][:40], wmt["hyps_long"][0], "   "]
    refs: list = [*wmt["refs_long"][:40], [wmt["refs_long"][1], wmt["refs_long"][2]], "a reference"]
    return cands, refs


@pytest.fixture
def paths(monkeypatch) -> list[str]:
    """Which path each scoring took: "new" (the new entries alone) or "interleaved"."""
    taken: list[str] = []
    real = metric_module.new_entries

    def first_new_entry(*args):
        first = real(*args)
        taken.append("mixed" if first is None else "new")
        return first

    monkeypatch.setattr(metric_module, "new_entries", first_new_entry)
    return taken


def _whole(pairs, **kwargs) -> dict:
    metric = BERTScore(MINILM, **kwargs)
    metric.update(*pairs)
    return metric.compute()


@pytest.mark.slow
@pytest.mark.parametrize("kwargs", [{}, {"idf": True, "all_layers": True}], ids=["plain", "idf-all-layers"])
def test_a_compute_after_a_compute_matches_only_the_new_pairs_reading_only_their_entries(pairs, paths, kwargs):
    cands, refs = pairs
    metric = BERTScore(MINILM, **kwargs)
    metric.update(cands[:15], refs[:15])
    metric.compute()
    for lo, hi in ((15, 25), (25, 42)):  # two update()s, one compute()
        metric.update(cands[lo:hi], refs[lo:hi])
    seen: list[int] = []
    real = metric_module.match_pairs
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(
            metric_module, "match_pairs", lambda sc, p, new, *a: (seen.append(len(new)), real(sc, p, new, *a))[1]
        )
        got = metric.compute()
    assert paths == ["new", "new"] and seen == [27]  # the second compute() read the 27 new pairs alone
    assert len(metric.cand_ids) == 2 and len(metric.cand_best) == 2  # the old tensors kept, the new in one
    want = _whole(pairs, **kwargs)
    assert all(torch.equal(got[key], want[key]) for key in want)


@pytest.mark.slow
def test_scored_and_new_pairs_that_alternate_are_interleaved_in_pair_order(pairs, paths):
    cands, refs = pairs
    metric = BERTScore(MINILM)
    metric.update(cands[:10], refs[:10])
    batch = metric(cands[10:30], refs[10:30])  # forward(): its pairs scored, merged after the unscored ten
    metric.update(cands[30:], refs[30:])
    got = metric.compute()
    assert paths == ["new", "mixed"]  # forward()'s own compute(), then the merged state
    want = _whole(pairs)
    assert all(torch.equal(got[key], want[key]) for key in want)
    assert torch.equal(batch["f1"], want["f1"][10:30])


@pytest.mark.parametrize(
    ("sizes", "scored", "first"),
    [
        ([2, 3], [True] * 2 + [False] * 3, 1),
        ([2, 3], [False] * 5, 0),
        ([5], [False] * 5, 0),
        ([2, 3, 1], [True] * 5 + [False], 2),
        ([2, 3], [False] * 2 + [True] * 3, None),  # new before scored (a merge)
        ([2, 3], [True] * 3 + [False] * 2, None),  # an entry holding both
        ([2, 3], [True, False, True, False, False], None),
    ],
)
def test_the_new_entries_are_found_only_where_every_new_pair_comes_after_every_scored_one(sizes, scored, first):
    entries = [torch.ones(n, dtype=torch.int32) for n in sizes]
    assert new_entries(entries, torch.tensor(scored)) == first


def _as_on_an_accelerator(monkeypatch, copies: bool = True) -> None:
    """Entries sent to the device are other tensors than the host's (as an accelerator's are; on a CPU `send`
    returns the host tensor itself), and host copies are kept of them where `copies`."""
    monkeypatch.setattr(states, "needs_copy", lambda device: copies)
    monkeypatch.setattr(metric_module, "send", lambda host, device: host.clone())


@pytest.fixture
def copied(monkeypatch) -> None:
    _as_on_an_accelerator(monkeypatch)


@pytest.mark.slow
@pytest.mark.parametrize("copies", [True, False], ids=["host-copies", "control-without"])
def test_a_scoring_plans_from_the_host_copies_never_reading_the_entries_back(pairs, monkeypatch, copies):
    cands, refs = pairs
    _as_on_an_accelerator(monkeypatch, copies)
    metric = BERTScore(MINILM)
    metric.update(cands[:15], refs[:15])
    metric.compute()
    for lo, hi in ((15, 25), (25, 42)):
        metric.update(cands[lo:hi], refs[lo:hi])
    # the new entries overwritten where they live (an accelerator's copy, here): read back, they would say other
    # words (special tokens kept, so that the final weighing, which reads them where they live, is unchanged),
    # and that every pair is scored already
    for entry in [*metric.cand_ids[1:], *metric.ref_ids[1:]]:
        entry.masked_fill_(entry > 103, 1000)  # MiniLM's special tokens are ids 0 and 100-103
    for entry in metric.scored[1:] if copies else []:  # (read, these would leave the new pairs unscored)
        entry.fill_(True)
    got = metric.compute()
    want = _whole(pairs)
    same = all(torch.equal(got[key], want[key]) for key in want)
    assert same is copies  # the control shows that a scoring reading the entries would score otherwise


@pytest.mark.slow
def test_copies_are_dropped_once_scored_and_never_copied_or_pickled_with_the_metric(pairs, copied):
    cands, refs = pairs
    metric = BERTScore(MINILM)
    metric.update(cands[:10], refs[:10])
    assert len(metric._host_copies) == 8  # one entry of each token state and of `scored`
    clone = copy.deepcopy(metric)
    assert not len(clone._host_copies)  # known by the identity of this metric's entries, not the clone's
    assert torch.equal(clone.compute()["f1"], metric.compute()["f1"])
    assert len(metric._host_copies) == 1  # the scored flags' alone
    metric.update(cands[10:20], refs[10:20])
    metric.reset()
    assert not len(metric._host_copies)


def test_an_entry_without_a_copy_is_read_from_where_it_lives() -> None:
    copies, cpu = HostCopies(), torch.device("cpu")
    host = torch.arange(3, dtype=torch.int32)
    sent = copies.keep(host.to("meta"), host)  # a meta tensor cannot be read: its reads must use the copy
    assert torch.equal(
        copies.cat([sent, torch.tensor([7], dtype=torch.int32)], torch.int32, cpu), torch.tensor([0, 1, 2, 7])
    )
    with pytest.raises(NotImplementedError, match="meta"):  # another tensor, even an equal one, has no copy
        copies.cat([host.to("meta")], torch.int32, cpu)
    copies.clear()
    with pytest.raises(NotImplementedError, match="meta"):
        copies.cat([sent], torch.int32, cpu)


@pytest.mark.slow
def test_merge_state_puts_the_incoming_pairs_first_and_drops_a_cached_result(pairs, paths):
    cands, refs = pairs
    first, second = BERTScore(MINILM), BERTScore(MINILM)
    first.update(cands[20:], refs[20:])
    second.update(cands[:20], refs[:20])
    first.compute(), second.compute()
    first.merge_state(second)  # torchmetrics' order: the incoming metric's pairs, then this one's
    got = first.compute()
    assert paths == ["new", "new"]  # each metric's own compute(): the merged pairs were all scored
    want = _whole(pairs)
    assert all(torch.equal(got[key], want[key]) for key in want)


def _saved(metric: BERTScore) -> dict:
    metric.persistent(True)
    return metric.state_dict()


@pytest.mark.slow
@pytest.mark.parametrize("given", ["metric", "state_dict"])
@pytest.mark.parametrize(
    ("setting", "named"),
    [
        ({"num_layers": 3}, "num_layers"),  # another embedding: kept similarities of layer 3
        ({"max_length": 5}, "max_length"),  # another tokenisation: token ids cut at 5
        ({"all_layers": True}, "all_layers"),  # similarities of every layer
        ({"idf": True}, "idf"),  # IDF counts of the whole vocabulary
        ({"ignore": "punctuation"}, "ignore"),
    ],
)
def test_merge_state_refuses_a_metric_or_state_of_another_setting_and_keeps_its_own(pairs, setting, named, given):
    """Merged as they were, another setting's similarities scored as this one's (layer 3's precision under a
    layer-5 hash code), or crashed deep in torchmetrics (IDF counts of two lengths): one named error instead."""
    from bertscore_tm.errors import SettingsMismatchError

    cands, refs = pairs
    mine, other = BERTScore(MINILM), BERTScore(MINILM, **setting)
    mine.update(cands[:3], refs[:3])
    other.update(cands[3:6], refs[3:6])
    other.compute()  # its similarities kept
    with pytest.raises(SettingsMismatchError) as raised:
        mine.merge_state(other if given == "metric" else _saved(other))
    assert given == "state_dict" or raised.value.setting == named
    want = BERTScore(MINILM)
    want.update(cands[:3], refs[:3])
    assert torch.equal(mine.compute()["f1"], want.compute()["f1"])  # nothing merged
    same = BERTScore(MINILM, **setting)
    same.merge_state(other if given == "metric" else _saved(other))  # the same setting merges
    assert same.compute()["f1"].shape[-1] == 3  # [3], or [layers, 3] with all_layers


@pytest.mark.slow
def test_merge_state_takes_a_saved_state_whole_and_refuses_states_that_do_not_say_their_setting(pairs):
    """A state_dict() (with persistent(True)) holds the digests of the setting that made it, so it merges as the
    metric itself would; a bare mapping of states (`metric_state`) says nothing of its setting: refused."""
    from bertscore_tm.errors import ArgumentValueError

    cands, refs = pairs
    mine, other = BERTScore(MINILM), BERTScore(MINILM)
    mine.update(cands[20:], refs[20:])
    other.update(cands[:20], refs[:20])
    other.compute()
    with pytest.raises(ArgumentValueError, match="does not say which setting"):
        mine.merge_state(other.metric_state)
    mine.merge_state(_saved(other))
    got = mine.compute()
    want = _whole(pairs)
    assert all(torch.equal(got[key], want[key]) for key in want)
