"""The Metric inside torchmetrics' protocol, through its public options only: torchmetrics never syncs the states
(compute() is collective by itself, as ``sync_on_compute`` and ``distributed_available_fn`` say); options the
metric cannot honour are refused, never ignored; `set_dtype` leaves the states; the setting's digests ride in the
extra state, beside the states with `persistent(True)`, and a checkpoint of an earlier layout (one key per state,
or none) still loads under the same rules."""

from __future__ import annotations

import pytest
import torch

from bertscore_tm import BERTScore
from bertscore_tm.errors import ArgumentTypeError, ArgumentValueError, SettingsMismatchError
from bertscore_tm.metric.bertscore import EXTRA_STATE_KEY
from bertscore_tm.metric.checkpoint import setting_digests
from bertscore_tm.metric.states import STATES
from tests.conftest import MINILM

pytestmark = pytest.mark.usefixtures("one_thread")

CANDS = ["The cat sat on the mat.", "It rained all day.", "Prices rose."]
REFS = ["A cat was sitting on the mat.", ["It was raining.", "Rain fell all day long."], "Prices went up."]


def _alone(layer: int = 3) -> dict:
    metric = BERTScore(MINILM, num_layers=layer)
    metric.update(CANDS, REFS)
    return metric.compute()


@pytest.mark.parametrize(
    ("option", "error", "match"),
    [
        ({"compute_with_cache": True}, ArgumentValueError, "never caches a result"),
        ({"dist_sync_on_step": True}, ArgumentValueError, "gather every rank's token ids"),
        ({"sync_on_compute": "yes"}, ArgumentTypeError, "sync_on_compute must be True or False"),
    ],
)
def test_a_torchmetrics_option_the_metric_cannot_honour_is_refused(option, error, match):
    with pytest.raises(error, match=match):
        BERTScore(MINILM, num_layers=3, **option)


def test_torchmetrics_never_syncs_and_sync_on_compute_false_scores_this_process_alone():
    """`distributed_available_fn` says a job is running: a compute() with ``sync_on_compute=False`` and every
    forward() still score this process's pairs (no process group is there to exchange with), and a direct
    sync(), which would gather every rank's token ids, is refused."""
    everywhere = lambda: True  # noqa: E731
    local = BERTScore(MINILM, num_layers=3, sync_on_compute=False, distributed_available_fn=everywhere)
    assert local.sync_on_compute is False and local.collective_compute is False
    local.update(CANDS, REFS)
    want = _alone()
    assert torch.equal(local.compute()["f1"], want["f1"])
    collective = BERTScore(MINILM, num_layers=3, distributed_available_fn=everywhere)
    assert collective.collective_compute is True
    batch = collective(CANDS, REFS)  # forward(): the batch's value is this process's
    assert torch.equal(batch["f1"], want["f1"])
    with pytest.raises(ArgumentValueError, match="compute\\(\\) on every rank"):
        collective.sync()
    collective.sync(should_sync=False)  # what torchmetrics itself asks: nothing


def test_set_dtype_leaves_the_states_and_says_so():
    metric = BERTScore(MINILM, num_layers=3)
    metric.update(CANDS, REFS)
    metric.compute()
    with pytest.warns(UserWarning, match=r"set_dtype\(torch.float16\) leaves the metric's states as they are"):
        assert metric.set_dtype(torch.float16) is metric
    assert metric.cand_ids[0].dtype == torch.int32 and metric.cand_best[0].dtype == torch.int32  # float32's bits
    assert torch.equal(metric.compute()["f1"], _alone()["f1"])


def test_the_state_dict_holds_the_digests_alone_and_the_pairs_with_persistent():
    metric = BERTScore(MINILM, num_layers=3)
    metric.update(CANDS, REFS)
    saved = metric.state_dict()
    assert set(saved) == {EXTRA_STATE_KEY} and saved[EXTRA_STATE_KEY]["states"] is None
    assert (saved[EXTRA_STATE_KEY]["tokens"], saved[EXTRA_STATE_KEY]["embedding"]) == setting_digests(metric.scorer)
    metric.persistent(True)
    states = metric.state_dict()[EXTRA_STATE_KEY]["states"]
    assert set(states) == {*STATES, "doc_freq", "num_refs"}
    fresh = BERTScore(MINILM, num_layers=3)
    fresh.load_state_dict(metric.state_dict())
    assert torch.equal(fresh.compute()["f1"], _alone()["f1"])


def _legacy(metric: BERTScore, **change: object) -> dict:
    """`metric`'s state as a checkpoint of the earlier layout held it: one key per state (float32 similarities,
    no per-pair context flags), the digests as a state of two int64, and whether a context was seen as one."""
    metric.persistent(True)
    states = dict(metric.state_dict()[EXTRA_STATE_KEY]["states"])
    del states["has_context"]
    for name in ("cand_best", "ref_best"):
        states[name] = [x.view(torch.float32) for x in states[name]]
    digests = torch.tensor(list(setting_digests(metric.scorer)), dtype=torch.long)
    return {**states, "state_setting": digests, "context_seen": torch.tensor(0), **change}


@pytest.mark.slow
def test_a_checkpoint_of_the_earlier_layout_loads_under_the_same_rules():
    computed = BERTScore(MINILM, num_layers=3)
    computed.update(CANDS, REFS)
    computed.compute()
    fresh = BERTScore(MINILM, num_layers=3)
    fresh.load_state_dict(_legacy(computed))  # strict: no key missing, none left over
    assert bool(torch.cat(fresh.scored).all()) and torch.equal(fresh.compute()["f1"], _alone()["f1"])
    other_layer = BERTScore(MINILM, num_layers=4)
    other_layer.load_state_dict(_legacy(computed))  # another embedding: similarities dropped, embedded again
    assert torch.equal(other_layer.compute()["f1"], _alone(4)["f1"])
    cut = BERTScore(MINILM, num_layers=3, max_length=8)
    cut.update(CANDS, REFS)
    plain = BERTScore(MINILM, num_layers=3)
    with pytest.raises(SettingsMismatchError, match="tokenised differently"):
        plain.load_state_dict(_legacy(cut))
    assert not plain.cand_ids  # refused: the metric holds none of its pairs


def test_a_checkpoint_saved_before_the_extra_state_without_states_loads_strictly():
    metric = BERTScore(MINILM, num_layers=3)
    metric.update(CANDS, REFS)
    assert metric.load_state_dict({}) is not None  # a module's checkpoint holding none of the metric's keys
    assert torch.equal(metric.compute()["f1"], _alone()["f1"])  # its own pairs kept
