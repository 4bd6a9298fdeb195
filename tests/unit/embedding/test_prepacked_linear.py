"""Prepacked linear layers (bertscore_tm.embedding.prepacked_linear): in bfloat16 on a CPU the model's linear layers
multiply with weights reordered once, and must give the very bits of torch's own `F.linear`."""

from __future__ import annotations

import pickle
import random

import pytest
import torch
from torch import nn

from bertscore_tm import BERTScore
from bertscore_tm.embedding import prepacked_linear as prepacked_module
from bertscore_tm.embedding.embedder import Embedder
from bertscore_tm.embedding.prepacked_linear import PrepackedLinears, prepackable
from conftest import MINILM
from tiny_models import tiny_encoder

pytestmark = [
    pytest.mark.usefixtures("one_thread"),
    pytest.mark.skipif(
        not prepackable(torch.device("cpu"), torch.bfloat16), reason="this CPU's oneDNN has no bfloat16 kernels"
    ),
]

FAMILIES = ("bert", "electra", "deberta-v2", "modernbert")


def _tiny(model_type: str) -> nn.Module:
    """A tiny random bfloat16 encoder of `model_type`."""
    return tiny_encoder(model_type).to(torch.bfloat16)


def _texts(count: int, seed: int = 0) -> list[torch.Tensor]:
    rng = random.Random(seed)
    return [
        torch.tensor([rng.randrange(3, 120) for _ in range(rng.choice([1, 2, 5, 9, 30, 61]))]) for _ in range(count)
    ]


def _plain(embedder: Embedder) -> Embedder:
    """The embedder with prepacking off (its layers as torch has them)."""
    embedder._prepacked, embedder._prepack_tried = None, True
    return embedder


@pytest.mark.parametrize("model_type", FAMILIES)
def test_a_prepacked_model_gives_the_bits_of_its_own_forward_pass(model_type: str) -> None:
    model = _tiny(model_type)
    layers = PrepackedLinears.of(model)
    assert layers is not None and len(layers.layers) >= 3 * 4  # every block's linear layers at least
    for rows, length in ((1, 1), (3, 17), (40, 9), (2, 61)):
        ids = torch.randint(3, 120, (rows, length), generator=torch.Generator().manual_seed(rows))
        with torch.inference_mode():
            want = model(input_ids=ids)[0]
            with layers.active():
                got = model(input_ids=ids)[0]
        assert torch.equal(got, want), (model_type, rows, length)


def test_layers_are_put_back_after_the_block_even_when_nested() -> None:
    model = _tiny("bert")
    layers = PrepackedLinears.of(model)
    assert layers is not None
    linear = layers.layers[0][0]
    with torch.inference_mode(), layers.active():
        with layers.active():  # the packed pass's fallback runs batches inside the packed pass's block
            assert "forward" in linear.__dict__
        assert "forward" in linear.__dict__
    assert all("forward" not in m.__dict__ for m, _ in layers.layers)


def test_a_bfloat16_embedder_prepacks_and_embeds_the_same_vectors() -> None:
    texts = _texts(150)
    for model_type in ("bert", "electra"):  # one family that packs, one that runs in batches of one length
        model = _tiny(model_type)
        prepacked = Embedder(model, pad_id=1, all_layers=False, model_dtype=torch.bfloat16)
        table = prepacked.embed(texts)[0]
        assert prepacked._prepacked is not None
        plain = _plain(Embedder(model, 1, all_layers=False, model_dtype=torch.bfloat16))
        assert torch.equal(table, plain.embed(texts)[0])
    all_layers = Embedder(model, 1, all_layers=True, model_dtype=torch.bfloat16)
    want = _plain(Embedder(model, 1, all_layers=True, model_dtype=torch.bfloat16)).embed(texts)[0]
    assert torch.equal(all_layers.embed(texts)[0], want) and all_layers._prepacked is not None


def test_a_bfloat16_metric_scores_the_same_prepacked(wmt) -> None:
    cands, refs = wmt["hyps_long"][:60], wmt["refs_long"][:60]
    prepacked = BERTScore(MINILM, model_dtype=torch.bfloat16, idf=True)
    plain = BERTScore(MINILM, model_dtype=torch.bfloat16, idf=True)
    _plain(plain.embedder)
    for metric in (prepacked, plain):
        metric.update(cands, refs)
    got, want = prepacked.compute(), plain.compute()
    assert prepacked.embedder._prepacked is not None
    assert all(torch.equal(got[key], want[key]) for key in ("precision", "recall", "f1"))


def test_only_bfloat16_models_we_loaded_on_a_cpu_uncompiled_prepack() -> None:
    texts = _texts(20)
    float32 = Embedder(_tiny("bert").float(), 1, all_layers=False)
    float32.embed(texts)
    assert float32._prepacked is None  # float32 products are not oneDNN's: never prepacked
    compiled = Embedder(_tiny("bert"), 1, all_layers=False, model_dtype=torch.bfloat16, compile_model=True)
    with compiled._linears():  # the compiler prepacks for itself
        assert compiled._prepacked is None
    assert not prepackable(torch.device("cpu"), torch.float16)
    assert not prepackable(torch.device("meta"), torch.bfloat16)


def test_a_layer_whose_probe_differs_leaves_the_model_as_it_is(monkeypatch) -> None:
    model = _tiny("bert")
    texts = _texts(30, seed=1)
    plain = _plain(Embedder(model, 1, all_layers=False, model_dtype=torch.bfloat16)).embed(texts)[0]
    real = prepacked_module._product
    monkeypatch.setattr(prepacked_module, "_product", lambda w, b, x: real(w, b, x) * 1.01)
    assert PrepackedLinears.of(model) is None
    embedder = Embedder(model, 1, all_layers=False, model_dtype=torch.bfloat16)
    assert torch.equal(embedder.embed(texts)[0], plain) and embedder._prepacked is None


def test_missing_operators_mean_no_prepacking(monkeypatch) -> None:
    monkeypatch.setattr(torch.backends.mkldnn, "is_available", lambda: False)
    assert not prepackable(torch.device("cpu"), torch.bfloat16)
    assert PrepackedLinears.of(_tiny("bert")) is None


def test_a_pickled_or_moved_embedder_prepacks_again() -> None:
    embedder = Embedder(_tiny("bert"), 1, all_layers=False, model_dtype=torch.bfloat16)
    texts = _texts(25, seed=2)
    table = embedder.embed(texts)[0]
    copy = pickle.loads(pickle.dumps(embedder))
    assert copy._prepacked is None and not copy._prepack_tried
    assert torch.equal(copy.embed(texts)[0], table) and copy._prepacked is not None
    embedder.to("meta")
    assert embedder._prepacked is None and not embedder._prepack_tried


def test_weights_moved_or_cast_behind_the_embedders_back_are_prepacked_again() -> None:
    model = _tiny("bert")
    embedder = Embedder(model, 1, all_layers=False, model_dtype=torch.bfloat16)
    texts = _texts(25, seed=3)
    table = embedder.embed(texts)[0]
    first = embedder._prepacked
    assert first is not None and first.current()
    model.float()  # new weight tensors, not through Embedder.to
    assert not first.current()
    model.to(torch.bfloat16)
    assert torch.equal(embedder.embed(texts)[0], table)
    assert embedder._prepacked is not first and embedder._prepacked is not None and embedder._prepacked.current()
    model.float()
    float32 = embedder.embed(texts)[0]  # float32 weights now: nothing prepacks, and the vectors come out
    assert embedder._prepacked is None and float32.dtype == torch.float32
