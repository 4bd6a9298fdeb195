"""Packed forward passes (bertscore_tm.embedding.attention): bfloat16 on a CPU runs texts of many lengths as one stream,
and must give the very vectors of batches of one length, whatever a text is packed with."""

from __future__ import annotations

import os
import random
import subprocess
import sys

import pytest
import torch

from bertscore_tm import BERTScore
from bertscore_tm.embedding import embedder as embedder_module
from bertscore_tm.embedding.batches import packs
from bertscore_tm.embedding.embedder import Embedder
from bertscore_tm.models.loading import load_encoder, resolve_model_path
from bertscore_tm.resources import load_config
from tests.conftest import AMX_BF16, MINILM, REPO, assert_bfloat16_equal
from tests.tiny_models import tiny_encoder

pytestmark = pytest.mark.usefixtures("one_thread")


def _texts(count: int, seed: int = 0) -> list[torch.Tensor]:
    """Token-id sequences of many lengths (1 to 60), some of a length shared by many."""
    rng = random.Random(seed)
    lengths = [rng.choice([1, 2, 3, 7, 7, 7, 12, 12, 25, 40, 60]) for _ in range(count)]
    return [torch.tensor([rng.randrange(3, 120) for _ in range(n)], dtype=torch.int32) for n in lengths]


def _batched(embedder: Embedder, texts: list[torch.Tensor]) -> torch.Tensor:
    """The same texts in batches of one length (packing switched off)."""
    embedder._batching = "one-length"
    try:
        return embedder.embed(texts)[0]
    finally:
        embedder._batching = None


def test_packs_hold_every_text_once_longest_first_within_the_budget() -> None:
    lengths = [random.Random(1).randrange(1, 90) for _ in range(500)]
    cut = list(packs(lengths, max_tokens=256))
    assert sorted(i for pack in cut for i in pack) == list(range(500))
    assert all(sum(lengths[i] for i in pack) <= 256 for pack in cut)
    flat = [lengths[i] for pack in cut for i in pack]
    assert flat == sorted(flat, reverse=True)
    assert list(packs([300, 5], max_tokens=256)) == [[0], [1]]  # a text beyond the budget runs alone


@pytest.mark.parametrize("model_type", load_config("packing.json")["model_types"])
def test_every_family_listed_packs_to_the_vectors_of_batches_of_one_length(model_type: str) -> None:
    embedder = Embedder(tiny_encoder(model_type), pad_id=1, all_layers=False, model_dtype=torch.bfloat16)
    assert embedder.packing
    texts = _texts(120)
    packed, _ = embedder.embed(texts)
    assert torch.equal(packed, _batched(embedder, texts))
    assert embedder.rows_embedded == 2 * len(texts)


def test_a_text_gets_the_same_vectors_whatever_it_is_packed_with() -> None:
    embedder = Embedder(tiny_encoder("bert"), pad_id=1, all_layers=False, model_dtype=torch.bfloat16, max_tokens=300)
    texts = _texts(40, seed=2)
    alone = [embedder.embed([t])[0] for t in texts[:10]]  # fewer tokens than a batch's least: run with copies
    rng = random.Random(3)
    for _ in range(3):
        others = _texts(rng.randrange(5, 80), seed=rng.randrange(1000))
        mixed = texts[:10] + others
        rng.shuffle(mixed)
        table, starts = embedder.embed(mixed)
        for text, vectors in zip(texts[:10], alone, strict=True):
            at = int(starts[next(i for i, t in enumerate(mixed) if t is text)])
            assert torch.equal(table[at : at + len(text)], vectors)


def test_attention_runs_in_pieces_when_a_run_would_outgrow_the_budget() -> None:
    """A tiny token budget cuts long runs of same-length texts into pieces: the vectors do not change."""
    embedder = Embedder(tiny_encoder("roberta"), pad_id=1, all_layers=False, model_dtype=torch.bfloat16, max_tokens=64)
    texts = [t for t in _texts(200, seed=4) if len(t) in (7, 12)]
    assert_bfloat16_equal(embedder.embed(texts)[0], _batched(embedder, texts), atol=2e-2)


def test_only_bfloat16_on_a_cpu_with_the_last_layer_of_a_family_listed_packs() -> None:
    model = tiny_encoder("bert")
    assert not Embedder(model, 1, all_layers=False).packing  # float32: batches of one length, exact
    assert not Embedder(model, 1, all_layers=True, model_dtype=torch.bfloat16).packing
    assert not Embedder(model, 1, all_layers=False, model_dtype=torch.bfloat16, compile_model=True).packing
    assert not Embedder(tiny_encoder("electra"), 1, all_layers=False, model_dtype=torch.bfloat16).packing  # not listed


@pytest.mark.slow
def test_a_bfloat16_metric_scores_packed_exactly_as_in_batches(wmt, monkeypatch) -> None:
    """...with every pack normalised straight into its rows of the table: no pack's rows are copied in."""
    copied = []
    real = embedder_module.copy_pieces
    monkeypatch.setattr(embedder_module, "copy_pieces", lambda *args: copied.append(1) or real(*args))
    cands, refs = wmt["hyps_long"][:80], wmt["refs_long"][:80]
    packed = BERTScore(MINILM, model_dtype=torch.bfloat16, idf=True)
    assert packed.embedder.packing
    packed.update(cands, refs)
    batched = BERTScore(MINILM, model_dtype=torch.bfloat16, idf=True)
    batched.embedder._batching = "one-length"
    batched.update(cands, refs)
    got = packed.compute()
    assert not copied
    want = batched.compute()
    for key in ("precision", "recall", "f1"):
        assert_bfloat16_equal(got[key], want[key], atol=5e-3)


def test_a_pack_written_into_rows_in_an_order_it_does_not_run_in_gets_each_texts_rows() -> None:
    """`embed_rows(out=)` with sequences shortest first (a pack runs longest first): each sequence's rows land
    at its place in `out`, equal to the pack's own stream."""
    embedder = Embedder(tiny_encoder("bert"), 1, all_layers=False, model_dtype=torch.bfloat16)
    texts = sorted(_texts(30, seed=8), key=len)
    stream, firsts = embedder.embed_rows(texts)
    out = torch.full((sum(len(t) for t in texts), stream.shape[1]), float("nan"))
    written, starts = embedder.embed_rows(texts, out=out)
    assert written is out and starts == [sum(len(t) for t in texts[:k]) for k in range(len(texts))]
    for text, first, start in zip(texts, firsts, starts, strict=True):
        assert torch.equal(out[start : start + len(text)], stream[first : first + len(text)])


def test_minilm_packs_to_the_vectors_of_batches() -> None:
    model, _ = load_encoder(resolve_model_path(MINILM), 6, all_layers=False)
    embedder = Embedder(model, 0, all_layers=False, model_dtype=torch.bfloat16)
    texts = [torch.cat([torch.tensor([101]), t % 2000 + 1000, torch.tensor([102])]) for t in _texts(60, seed=6)]
    assert_bfloat16_equal(embedder.embed(texts)[0], _batched(embedder, texts), atol=2e-2)


@pytest.mark.slow
def test_windows_of_long_texts_pack_like_any_other_sequence(wmt) -> None:
    """long_texts="window": a text beyond the window runs as its windows, packed with everything else."""
    cands, refs = wmt["hyps_long"][:30], wmt["refs_long"][:30]
    packed = BERTScore(MINILM, model_dtype=torch.bfloat16, long_texts="window", max_length=32, window_stride=11)
    batched = BERTScore(MINILM, model_dtype=torch.bfloat16, long_texts="window", max_length=32, window_stride=11)
    batched.embedder._batching = "one-length"
    for metric in (packed, batched):
        metric.update(cands, refs)
    assert packed.embedder.packing and max(len(packed.token_ids(t)) for t in cands) > 32
    got, want = packed.compute(), batched.compute()
    for key in ("precision", "recall", "f1"):
        assert_bfloat16_equal(got[key], want[key], atol=5e-3)


def test_packs_honour_a_count_cap() -> None:
    embedder = Embedder(tiny_encoder("bert"), 1, all_layers=False, model_dtype=torch.bfloat16, batch_size=3)
    sizes = []
    original = embedder.embed_rows
    embedder.embed_rows = lambda seqs, out=None, **kw: sizes.append(len(seqs)) or original(seqs, out, **kw)  # type: ignore[method-assign]
    texts = _texts(20, seed=7)
    table = embedder.embed(texts)[0]
    assert max(sizes) == 3 and sum(sizes) == 20
    assert torch.equal(table, _batched(embedder, texts))


@pytest.mark.parametrize("model_type", load_config("packing.json")["model_types"])
def test_one_lookup_a_pack_gives_each_text_the_positions_it_has_alone(model_type: str) -> None:
    """A pack's embeddings are looked up in one call with positions restarting at each text
    (`packed_positions`), the padding id inside a text included (RoBERTa's layout gives it the padding
    position and does not count it): the positions are those the model's embeddings make for the text alone,
    and the vectors those of batches of one length, bit for bit."""
    from bertscore_tm.models.model_family import packed_positions

    model = tiny_encoder(model_type)
    rng = random.Random(7)
    texts = [torch.tensor([rng.choice([0, 1, 1, 5, 9, 40]) for _ in range(n)]) for n in (9, 9, 6, 3, 1)]
    alone = []
    for text in texts:
        if hasattr(model.embeddings, "create_position_ids_from_input_ids"):  # RoBERTa's layout
            alone.append(model.embeddings.create_position_ids_from_input_ids(text[None], model.embeddings.padding_idx))
        else:
            alone.append(model.embeddings.position_ids[:, : len(text)])
    got = packed_positions(model, torch.cat(texts), torch.tensor([len(t) for t in texts]))
    assert got.tolist() == torch.cat(alone, dim=1)[0].tolist()
    embedder = Embedder(model, pad_id=1, all_layers=False, model_dtype=torch.bfloat16)
    texts = [*texts, *_texts(60, seed=8)]
    assert_bfloat16_equal(embedder.embed(texts)[0], _batched(embedder, texts), atol=2e-2)


@pytest.mark.skipif(not AMX_BF16, reason="the CPU has no AMX: the tests above check bit for bit already")
def test_on_amx_capping_onednn_below_it_makes_packing_exact_again() -> None:
    """The remedy docs/metric.md gives where the CPU has AMX: ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16."""
    script = (
        "import torch, tests.unit.embedding.test_packing as t\n"
        "model, _ = t.load_encoder(t.resolve_model_path(t.MINILM), 6, all_layers=False)\n"
        "e = t.Embedder(model, 0, all_layers=False, model_dtype=torch.bfloat16)\n"
        "texts = [torch.cat([torch.tensor([101]), x % 2000 + 1000, torch.tensor([102])]) for x in t._texts(60, 6)]\n"
        "print(e.packing and torch.equal(e.embed(texts)[0], t._batched(e, texts)))\n"
    )
    env = {**os.environ, "ONEDNN_MAX_CPU_ISA": "AVX512_CORE_BF16", "PYTHONPATH": f"{REPO / 'src'}{os.pathsep}{REPO}"}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert done.stdout.strip().splitlines()[-1:] == ["True"], done.stderr[-2000:]
