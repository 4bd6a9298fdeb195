"""Which attention a forward batch runs (`Embedder._choose_attention`): in float32 on a CPU, a batch of
sequences of at most `EAGER_CPU_TOKENS` tokens runs the model's eager attention and a longer one its own
scaled-dot-product attention, each giving exactly the vectors of a plain forward pass with that attention; a
user's model is never switched."""

from __future__ import annotations

import pytest
import torch

from bertscore_tm.embedding.embedder import EAGER_CPU_TOKENS, Embedder
from bertscore_tm.models.loading import load_encoder, resolve_model_path
from bertscore_tm.models.registry import PACKAGED_MINILM

pytestmark = pytest.mark.usefixtures("one_thread")


def _plain(model: torch.nn.Module, seqs: list[torch.Tensor], attention: str) -> tuple[torch.Tensor, ...]:
    """Every layer's normalised vectors of a plain forward pass with `attention`."""
    model.set_attn_implementation(attention)
    ids = torch.stack(seqs)
    with torch.inference_mode():
        states = model(input_ids=ids, attention_mask=torch.ones_like(ids), output_hidden_states=True).hidden_states
    return tuple(h / h.norm(dim=-1, keepdim=True) for h in states)


@pytest.mark.parametrize(("length", "attention"), [(EAGER_CPU_TOKENS, "eager"), (EAGER_CPU_TOKENS + 1, "sdpa")])
def test_a_float32_cpu_batch_runs_the_eager_attention_only_on_short_sequences(length: int, attention: str) -> None:
    path = resolve_model_path(PACKAGED_MINILM)
    model, _ = load_encoder(path, 0, all_layers=True)
    plain, _ = load_encoder(path, 0, all_layers=True)  # a second copy, switched by hand below
    assert model.config._attn_implementation == "sdpa"  # the model's own
    embedder = Embedder(model, 0, all_layers=True)
    generator = torch.Generator().manual_seed(length)
    seqs = [torch.randint(1000, 9000, (length,), generator=generator) for _ in range(3)]  # past MIN_BATCH_TOKENS
    got = embedder.embed_batch(seqs)  # [3, length, layers, D]
    assert model.config._attn_implementation == attention
    want, other = _plain(plain, seqs, attention), _plain(plain, seqs, "sdpa" if attention == "eager" else "eager")
    for layer in range(len(want)):
        assert torch.equal(got[:, :, layer], want[layer]), layer
    assert not all(torch.equal(got[:, :, k], other[k]) for k in range(1, len(other)))  # the choice shows
    embedder.to("cpu")  # a move (with no batch running) gives the model its own attention back
    assert model.config._attn_implementation == "sdpa"


def test_a_users_model_keeps_its_own_attention() -> None:
    from transformers import AutoModel, AutoTokenizer

    from bertscore_tm import BERTScore

    path = resolve_model_path(PACKAGED_MINILM)
    model, tokenizer = AutoModel.from_pretrained(path), AutoTokenizer.from_pretrained(path)
    assert model.config._attn_implementation == "sdpa"
    metric = BERTScore(model=model, tokenizer=tokenizer, num_layers=2)
    metric.update(["a short candidate"], ["a short reference"])
    metric.compute()
    assert model.config._attn_implementation == "sdpa"
