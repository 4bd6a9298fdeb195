"""The attention of a model we loaded (`bertscore_tm.embedding.attention`): one function, selected once, that
runs the eager products on short float32 CPU batches and scaled-dot-product attention on longer ones, each giving
exactly the vectors of a plain forward pass with that attention of transformers'; `install`, which selects it
once and decides whether a model packs; a user's model is never switched."""

from __future__ import annotations

import pytest
import torch

from bertscore_tm.embedding.attention import ATTENTION_NAME, EAGER_CPU_TOKENS, install
from bertscore_tm.embedding.embedder import Embedder
from bertscore_tm.models.compat_transformers import attention_implementation
from bertscore_tm.models.loading import load_encoder, resolve_model_path
from bertscore_tm.models.registry import PACKAGED_MINILM
from tiny_models import tiny_encoder

pytestmark = pytest.mark.usefixtures("one_thread")


def _plain(model: torch.nn.Module, seqs: list[torch.Tensor], attention: str) -> tuple[torch.Tensor, ...]:
    """Every layer's normalised vectors of a plain forward pass with transformers' `attention`."""
    model.set_attn_implementation(attention)
    ids = torch.stack(seqs)
    with torch.inference_mode():
        states = model(input_ids=ids, attention_mask=torch.ones_like(ids), output_hidden_states=True).hidden_states
    return tuple(h / h.norm(dim=-1, keepdim=True) for h in states)


@pytest.mark.parametrize(("length", "attention"), [(EAGER_CPU_TOKENS, "eager"), (EAGER_CPU_TOKENS + 1, "sdpa")])
def test_a_float32_cpu_batch_runs_the_eager_products_only_on_short_sequences(length: int, attention: str) -> None:
    path = resolve_model_path(PACKAGED_MINILM)
    model, _ = load_encoder(path, 0, all_layers=True)
    plain, _ = load_encoder(path, 0, all_layers=True)  # a second copy, switched by hand below
    embedder = Embedder(model, 0, all_layers=True)
    assert attention_implementation(model) == ATTENTION_NAME  # chosen once, and kept whatever the length
    generator = torch.Generator().manual_seed(length)
    seqs = [torch.randint(1000, 9000, (length,), generator=generator) for _ in range(3)]  # past MIN_BATCH_TOKENS
    got = embedder.embed_batch(seqs)  # [3, length, layers, D]
    assert attention_implementation(model) == ATTENTION_NAME
    want, other = _plain(plain, seqs, attention), _plain(plain, seqs, "sdpa" if attention == "eager" else "eager")
    for layer in range(len(want)):
        assert torch.equal(got[:, :, layer], want[layer]), layer
    assert not all(torch.equal(got[:, :, k], other[k]) for k in range(1, len(other)))  # the choice shows


def test_install_selects_the_function_where_the_family_can_switch_and_packs_where_it_packs_alike() -> None:
    bert, electra = tiny_encoder("bert"), tiny_encoder("electra")
    assert install(bert, packing_family=True) and attention_implementation(bert) == ATTENTION_NAME
    assert not install(electra, packing_family=False) and attention_implementation(electra) == ATTENTION_NAME
    deberta = tiny_encoder("deberta-v2")  # its blocks never reach the interface: it keeps its own attention
    assert not install(deberta, packing_family=True)
    assert attention_implementation(deberta) != ATTENTION_NAME
    assert install(bert, packing_family=True)  # installed twice: the same


def test_a_model_whose_positions_do_not_follow_position_ids_does_not_pack() -> None:
    """Embeddings that drop `position_ids` (positions running on through the stream): the probe's packed pass
    does not give each text its vectors alone, so the model never packs."""
    model = tiny_encoder("bert")
    own = model.embeddings.forward
    model.embeddings.forward = lambda *args, position_ids=None, **kwargs: own(*args, **kwargs)
    assert not install(model, packing_family=True)
    assert attention_implementation(model) == ATTENTION_NAME


def test_a_users_model_keeps_its_own_attention() -> None:
    from transformers import AutoModel, AutoTokenizer

    from bertscore_tm import BERTScore

    path = resolve_model_path(PACKAGED_MINILM)
    model, tokenizer = AutoModel.from_pretrained(path), AutoTokenizer.from_pretrained(path)
    assert attention_implementation(model) == "sdpa"
    metric = BERTScore(model=model, tokenizer=tokenizer, num_layers=2)
    metric.update(["a short candidate"], ["a short reference"])
    metric.compute()
    assert attention_implementation(model) == "sdpa"
