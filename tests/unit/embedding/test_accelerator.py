"""Accelerator batching (issue 37), run on the CPU through the embedder's private switch: texts sorted by
length run packed end to end with attention kept within each text (families that pack) or in padded length
buckets (the others), and give the vectors of batches of one length to 1e-6 in float32. The CPU's own
batching stays as it was (tests/parity/test_pinned.py pins its scores); every family: test_architectures.py."""

from __future__ import annotations

import random

import pytest
import torch

from bertscore_tm import BERTScore
from bertscore_tm.embedding import attention as attention_module
from bertscore_tm.embedding import embedder as embedder_module
from bertscore_tm.embedding.batches import SCORES_LENGTH, padded_buckets
from bertscore_tm.embedding.embedder import Embedder
from tests.conftest import MINILM
from tiny_models import tiny_encoder

pytestmark = pytest.mark.usefixtures("one_thread")
KEYS = ("precision", "recall", "f1")


def _texts(count: int, seed: int = 0) -> list[torch.Tensor]:
    rng = random.Random(seed)
    lengths = [rng.choice([1, 2, 3, 5, 7, 7, 9, 10, 11, 12, 12, 13, 25, 40, 60]) for _ in range(count)]
    return [torch.tensor([rng.randrange(3, 120) for _ in range(n)], dtype=torch.int32) for n in lengths]


def _both(model: torch.nn.Module, texts: list[torch.Tensor], **kwargs) -> tuple[Embedder, torch.Tensor, torch.Tensor]:
    """(the accelerated embedder, its table, the table of batches of one length) of the same model."""
    one = Embedder(model, 1, all_layers=False, **kwargs)
    fast = Embedder(model, 1, all_layers=False, **kwargs)
    fast._batching = "accelerator"
    return fast, fast.embed(texts)[0], one.embed(texts)[0]


def test_padded_buckets_hold_every_text_once_longest_first_with_little_padding() -> None:
    lengths = [random.Random(1).randrange(1, 200) for _ in range(2000)]
    cut = list(padded_buckets(lengths, None, max_tokens=4096))
    assert sorted(i for batch in cut for i in batch) == list(range(2000))
    flat = [lengths[i] for batch in cut for i in batch]
    assert flat == sorted(flat, reverse=True)
    for batch in cut:
        longest = lengths[batch[0]]
        assert all(lengths[i] >= longest - max(2, longest // 8) for i in batch)
        assert len(batch) == 1 or (len(batch) * longest <= 4096 and len(batch) * longest**2 <= 4096 * SCORES_LENGTH)
    assert sum(len(b) * lengths[b[0]] for b in cut) <= 1.07 * sum(lengths)  # padding: a few percent
    assert [len(b) for b in padded_buckets([5] * 10, 4, 4096)] == [4, 4, 2]  # a count cap


def test_the_cpu_keeps_its_batching_and_accelerators_get_the_new_one() -> None:
    model = tiny_encoder("bert")
    cpu = Embedder(model, 1, all_layers=False)
    assert not cpu.accelerated and not cpu.packing  # float32 on a CPU: batches of one length, as before
    assert Embedder(model, 1, all_layers=False, model_dtype=torch.bfloat16).packing  # the CPU's bfloat16 packing
    cpu._batching = "accelerator"
    assert cpu.accelerated and cpu.packing  # every dtype packs in accelerator batching
    assert not Embedder(tiny_encoder("electra"), 1, all_layers=False).packing
    forced = Embedder(model, 1, all_layers=True)
    forced._batching = "accelerator"
    assert forced.accelerated and not forced.packing  # all layers: padded buckets


@pytest.mark.parametrize("model_type", ["bert", "roberta", "electra", "deberta-v2", "llama"])
@pytest.mark.parametrize("all_layers", [False, True])
def test_accelerator_batching_gives_the_one_length_vectors(model_type: str, all_layers: bool) -> None:
    """Packed (BERT, RoBERTa), padded buckets (ELECTRA, DeBERTa, a decoder-only Llama, every family with all
    layers), with a small budget so that packs and buckets cut and attention runs in pieces."""
    model, texts = tiny_encoder(model_type), _texts(150)
    one = Embedder(model, 1, all_layers=all_layers, max_tokens=128)
    fast = Embedder(model, 1, all_layers=all_layers, max_tokens=128)
    fast._batching = "accelerator"
    got, want = fast.embed(texts)[0], one.embed(texts)[0]
    assert fast.packing == (model_type in ("bert", "roberta") and not all_layers)
    torch.testing.assert_close(got, want, atol=1e-6, rtol=0)


def test_roberta_positions_restart_at_every_packed_text_after_the_padding_id() -> None:
    """A packed RoBERTa text's vectors are its vectors alone (positions from padding_idx + 1 at each text);
    positions running on through the stream would move them far beyond rounding."""
    model = tiny_encoder("roberta")
    texts = _texts(40, seed=3)
    fast, got, want = _both(model, texts)
    assert fast.packing
    torch.testing.assert_close(got, want, atol=1e-6, rtol=0)
    shifted = model.embeddings.position_embeddings.weight.clone()
    with torch.no_grad():  # the same model with every position moved by one: clearly other vectors
        model.embeddings.position_embeddings.weight[:-1] = shifted[1:]
    try:
        assert (fast.embed(texts)[0] - want).abs().max() > 1e-3
    finally:
        with torch.no_grad():
            model.embeddings.position_embeddings.weight.copy_(shifted)


def test_a_text_longer_than_the_pack_budget_gets_a_pack_of_its_own() -> None:
    texts = [*_texts(30, seed=5), torch.arange(3, 78, dtype=torch.int32)]  # 75 tokens, the budget 64
    fast, got, want = _both(tiny_encoder("bert"), texts, max_tokens=64)
    assert fast.packing and fast.max_tokens == 64
    torch.testing.assert_close(got, want, atol=1e-6, rtol=0)


def test_bfloat16_in_accelerator_batching_is_close_to_float32() -> None:
    model, texts = tiny_encoder("bert"), _texts(60, seed=6)
    want = Embedder(model, 1, all_layers=False).embed(texts)[0]
    fast = Embedder(tiny_encoder("bert"), 1, all_layers=False, model_dtype=torch.bfloat16)
    fast._batching = "accelerator"
    assert (fast.embed(texts)[0] - want).abs().max() < 0.05  # bfloat16's rounding, not another text's tokens


def test_variable_length_attention_gets_each_texts_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CUDA-only varlen call, faked here by per-text attention from the bounds it is given: the stream's
    layout, bounds and longest length must be what it needs, and the bounds go to the device once per pack."""
    calls: list[tuple[list[int], int]] = []

    def fake(q, k, v, cu_q, cu_k, max_q, max_k, scale=None):
        assert q.shape == k.shape == v.shape and q.dim() == 3 and cu_q is cu_k and max_q == max_k
        calls.append((cu_q.tolist(), max_q))
        out = torch.empty_like(q)
        for a, b in zip(cu_q[:-1].tolist(), cu_q[1:].tolist(), strict=True):
            x = [t[a:b].transpose(0, 1) for t in (q, k, v)]  # [heads, length, size]
            out[a:b] = torch.nn.functional.scaled_dot_product_attention(*x, scale=scale).transpose(0, 1)
        return out

    monkeypatch.setattr(attention_module, "_varlen", lambda query: fake)
    texts = _texts(50, seed=7)
    fast, got, want = _both(tiny_encoder("bert"), texts)
    assert fast.packing
    torch.testing.assert_close(got, want, atol=1e-6, rtol=0)
    calls = [call for call in calls if call[0][-1] > 7]  # not the install probe's (two texts of 4 and 3 tokens)
    bounds = calls[0][0]
    assert bounds[0] == 0 and bounds[-1] == sum(len(t) for t in texts) and calls[0][1] == max(len(t) for t in texts)
    assert len({tuple(b) for b, _ in calls}) == 1 and len(calls) == 3  # one pack, a call per block


@pytest.mark.slow
def test_a_metric_in_accelerator_batching_scores_as_in_batches_of_one_length(wmt) -> None:
    cands, refs = wmt["hyps_long"][:120], wmt["refs_long"][:120]
    want = BERTScore(MINILM, idf=True)
    fast = BERTScore(MINILM, idf=True)
    fast.embedder._batching = "accelerator"
    for metric in (want, fast):
        metric.update(cands, refs)
    assert fast.embedder.packing
    got, expected = fast.compute(), want.compute()
    for key in KEYS:
        torch.testing.assert_close(got[key], expected[key], atol=1e-6, rtol=0)


@pytest.mark.slow
def test_windows_and_out_of_memory_in_accelerator_batching(wmt) -> None:
    """Long texts' windows run like any other sequence; a pack out of memory is run again at half the budget,
    said once, with the same scores."""
    cands, refs = wmt["hyps_long"][:40], wmt["refs_long"][:40]
    settings = dict(long_texts="window", max_length=32, window_stride=11)
    want, fast = BERTScore(MINILM, **settings), BERTScore(MINILM, **settings)
    fast.embedder._batching = "accelerator"
    real, ran = fast.embedder.embed_rows, []

    def embed_rows(seqs, out=None, **kw):
        if sum(len(s) for s in seqs) > 512:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        ran.append(len(seqs))
        return real(seqs, out, **kw)

    fast.embedder.embed_rows = embed_rows  # type: ignore[method-assign]
    for metric in (want, fast):
        metric.update(cands, refs)
    with pytest.warns(UserWarning, match="ran out of memory") as said:
        got = fast.compute()
    assert len([w for w in said if "out of memory" in str(w.message)]) == 1
    assert fast.embedder.max_tokens == 512 and ran
    expected = want.compute()
    for key in KEYS:
        torch.testing.assert_close(got[key], expected[key], atol=1e-6, rtol=0)


def test_a_varlen_call_that_fails_leaves_packs_to_attend_per_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """A torch whose varlen call takes other arguments (or a kernel that refuses the shape) costs one try: the
    packs attend run by run from then on, with the same vectors, and the reason is kept for the device suite."""
    tries = []

    def refuses(*args, **kwargs):
        tries.append(1)
        raise TypeError("varlen_attn() got an unexpected keyword argument 'scale'")

    monkeypatch.setattr(attention_module, "_varlen", lambda query: None if attention_module.VARLEN_REFUSED else refuses)
    monkeypatch.setattr(attention_module, "VARLEN_REFUSED", [])
    _, got, want = _both(tiny_encoder("bert"), _texts(40, seed=8))
    torch.testing.assert_close(got, want, atol=1e-6, rtol=0)
    assert len(tries) == 1 and "unexpected keyword" in attention_module.VARLEN_REFUSED[0]


def test_accelerator_batching_reads_no_vector_back_to_the_host(monkeypatch: pytest.MonkeyPatch) -> None:
    """No per-batch host syncs: between the forward passes nothing of the model's output (floating-point
    tensors) is read back (`.item()`, `.tolist()`, `float()`, `bool()`), which on a GPU would wait for it."""
    fast = Embedder(tiny_encoder("roberta"), 1, all_layers=False, max_tokens=128)
    fast._batching = "accelerator"
    texts = _texts(120, seed=9)
    reads: list[str] = []
    for name in ("item", "tolist", "__float__", "__bool__", "__int__"):
        real = getattr(torch.Tensor, name)

        def watched(self, *args, _real=real, _name=name):
            if self.is_floating_point():
                reads.append(_name)
            return _real(self, *args)

        monkeypatch.setattr(torch.Tensor, name, watched)
    fast.embed(texts)
    fast.all_layers = True  # padded buckets
    fast.embed(texts)
    monkeypatch.undo()
    assert reads == []


def test_accelerators_get_accelerator_batching_except_for_a_users_model(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a GPU (its device faked here) a model we loaded runs in accelerator batching; a model object of the
    user's keeps batches of one length, never padded, since its forward may not honour a padding mask."""
    from bertscore_tm.models.user_model import UserModel

    monkeypatch.setattr(Embedder, "device", property(lambda self: torch.device("cuda", 0)))
    model = tiny_encoder("bert")
    assert Embedder(model, 1, all_layers=False).accelerated
    monkeypatch.setattr(embedder_module, "ACCELERATED_DTYPES", frozenset({torch.bfloat16}))  # as measured on a card
    assert not Embedder(model, 1, all_layers=False).accelerated
    assert Embedder(model, 1, all_layers=False, model_dtype=torch.bfloat16).accelerated
    users = Embedder(UserModel(model, model, None, 32), 1, all_layers=False, hidden_size=32, depth=3)
    assert users.user_supplied and not users.accelerated and not users.packing


def test_update_moves_every_state_tensor_through_the_pinned_send(monkeypatch: pytest.MonkeyPatch) -> None:
    """update() puts its host tensors on the metric's device through `send` (pinned memory, not waited for): a
    copy from pageable memory waits for the device's queued work, so a validation loop's update() would stall
    the GPU on every call. Every tensor an update() adds to the state that came from the host goes so."""
    from bertscore_tm.metric import bertscore as metric_module

    sent: list[torch.Tensor] = []
    real = metric_module.send
    monkeypatch.setattr(metric_module, "send", lambda host, device: sent.append(host) or real(host, device))
    metric = BERTScore(MINILM, idf=True)
    metric.update(["a candidate", "another one"], [["a reference", "two"], "three"], indexes=[4, 7])
    sides = ("cand_ids", "cand_lens", "cand_marked", "ref_ids", "ref_lens", "ref_marked")
    state = {name: getattr(metric, name)[0] for name in sides}
    state |= {"ref_counts": metric.ref_counts[0], "indexes": metric.indexes[0]}
    for name, value in state.items():
        assert any(value is s for s in sent), name  # on the CPU `send` hands the tensor itself back
    assert len(sent) == 10  # the scored flags (kept on the host too, `HostCopies`) and the IDF counts' increment
