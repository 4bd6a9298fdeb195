"""Where the model runs (`bertscore_tm.embedding.handle`): every copy of a metric shares one handle; the model moves
to the device asked for only where no other live user last embedded with it where it is, else a copy is made
there once; a model object of the user's is never moved or copied. ("meta" stands in for a second device.)"""

from __future__ import annotations

import copy
import gc
import pickle

import pytest
import torch

from bertscore_tm import BERTScore
from bertscore_tm.embedding.embedder import Embedder
from bertscore_tm.embedding.handle import ModelHandle
from bertscore_tm.models.user_model import UserModel
from tests.conftest import MINILM
from tests.tiny_models import tiny_encoder

CPU, META = torch.device("cpu"), torch.device("meta")


class User:  # a stand-in for a scorer: anything that can be held weakly
    pass


@pytest.fixture
def handle() -> ModelHandle:
    return ModelHandle(Embedder(tiny_encoder("bert"), 1, all_layers=False))


def _devices(handle: ModelHandle) -> list[torch.device]:
    return [e.device for e in handle.embedders]


def test_a_model_no_one_else_uses_moves_to_the_device_asked_for(handle):
    first, user = handle.embedders[0], User()
    assert handle.on(CPU, user) is first
    assert handle.on(META, user) is first and first.device == META  # its only user moved: no copy
    assert _devices(handle) == [META]


def test_a_model_another_user_holds_where_it_is_is_copied_there_once(handle):
    first, a, b = handle.embedders[0], User(), User()
    handle.on(CPU, a)
    copied = handle.on(META, b)
    assert copied is not first and copied.model is not first.model
    assert first.device == CPU and copied.device == META  # a's model never moved behind its back
    assert handle.on(META, User()) is copied and handle.on(CPU, a) is first  # each device's, once
    assert handle.current(a) is first and handle.current(b) is copied
    names = lambda e: [(n, p.shape) for n, p in e.model.named_parameters()]  # noqa: E731
    assert names(copied) == names(first)


def test_a_user_gone_leaves_the_model_free_to_move(handle):
    a, b = User(), User()
    handle.on(CPU, a)
    del a
    gc.collect()
    handle.on(META, b)
    assert _devices(handle) == [META]  # nobody holds it on the CPU any more: moved, not copied


def test_a_copy_holds_the_same_weights_in_storage_of_its_own_and_embeds_the_same_vectors():
    embedder = Embedder(tiny_encoder("bert"), 1, all_layers=False)
    twin = embedder.copied_to(CPU)
    for (name, mine), (_, theirs) in zip(embedder.model.named_parameters(), twin.model.named_parameters(), strict=True):
        assert torch.equal(mine, theirs) and mine.data_ptr() != theirs.data_ptr(), name
        assert not theirs.requires_grad
    seqs = [torch.tensor([2, 5, 7, 3]), torch.tensor([2, 9, 3])]
    assert torch.equal(embedder.embed(seqs)[0], twin.embed(seqs)[0])


def test_a_users_model_object_is_never_moved_or_copied():
    model = tiny_encoder("bert")
    handle = ModelHandle(Embedder(UserModel(model, model, None, 32), 1, all_layers=False, hidden_size=32, depth=3))
    assert handle.on(META, User()).device == CPU
    assert len(handle.embedders) == 1 and {p.device for p in model.parameters()} == {CPU}


def test_copies_share_the_handle_and_pickles_carry_the_model_without_its_users(handle):
    user = User()
    handle.on(CPU, user)
    assert copy.deepcopy(handle) is handle
    again = pickle.loads(pickle.dumps(handle))
    assert len(again.embedders) == 1 and again.embedders[0].model is not handle.embedders[0].model
    assert again.current(user) is again.embedders[0]  # no users came along


# -- a metric and its clones --------------------------------------------------------------------------------------


def test_moving_a_metric_moves_no_model_until_it_embeds_there_and_then_no_copy_is_made():
    metric = BERTScore(MINILM, num_layers=2)
    metric.to("meta")
    assert metric.device == META and metric.embedder.device == CPU  # the states moved, the model waits
    metric.scorer.follow(metric.device)  # what its compute() asks first
    assert metric.embedder.device == META and len(metric.scorer.handle.embedders) == 1


def test_a_clone_computing_elsewhere_gets_a_copy_and_the_original_keeps_scoring_where_it_is():
    cands, refs = ["The cat sat on the mat."], ["A cat was sitting on the mat."]
    metric = BERTScore(MINILM, num_layers=2)
    metric.update(cands, refs)
    before = metric.compute()["f1"]
    clone = metric.clone()
    assert clone.embedder.model is metric.embedder.model  # one model for both
    clone.to("meta")
    clone.scorer.follow(clone.device)
    assert clone.embedder.device == META and metric.embedder.device == CPU
    assert len(metric.scorer.handle.embedders) == 2
    metric.update(cands, refs)
    assert torch.equal(metric.compute()["f1"], before.repeat(2))  # on its own device, as before
