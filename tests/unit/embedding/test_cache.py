"""The embedding cache (`embedding_cache_mb`): a text scored again is never embedded again, and the scores are
bit for bit those of an uncached metric.

That equality rests on embedding being batch-invariant (a text's vectors do not depend on the texts it runs
with), checked first. Then the cache over epochs of a validation loop (references repeated, candidates new):
equal scores, only new texts embedded; a tiny budget evicts the least recently used; the cache is not state;
clones share it; it follows the metric's device.
"""

from __future__ import annotations

import pickle

import pytest
import torch

from bertscore_tm import BERTScore
from bertscore_tm.embedding.cache import EmbeddingCache, text_key
from tests.conftest import MINILM, assert_bfloat16_equal

PAIRS = 12  # per epoch


def _epoch(wmt: dict[str, list[str]], epoch: int) -> tuple[list[str], list[str]]:
    """A validation epoch: the same references every epoch, new candidates (another system's output)."""
    refs = wmt["refs_long"][:PAIRS]
    cands = wmt["hyps_long"][PAIRS * (epoch + 1) : PAIRS * (epoch + 2)]
    return cands, refs


def _distinct(metric: BERTScore, texts: list[str]) -> int:
    return len({tuple(metric.token_ids(t).tolist()) for t in texts})


@pytest.fixture(scope="module")
def plain() -> BERTScore:
    return BERTScore(MINILM, idf=True)


@pytest.fixture(scope="module")
def cached() -> BERTScore:
    return BERTScore(MINILM, idf=True, embedding_cache_mb=64)


@pytest.mark.slow
def test_a_texts_vectors_do_not_depend_on_the_batch_it_runs_in(plain, wmt):
    """What makes a cached vector exactly a fresh one: batches of one length, never padded, never tiny."""
    seqs = [plain.token_ids(t) for t in wmt["hyps_long"][:80]]
    together, starts = plain.embedder.embed(seqs)
    for subset in (range(0, 80, 5), range(3, 9), [11], [79, 40, 41]):
        vectors, sub_starts = plain.embedder.embed([seqs[i] for i in subset])
        for i, at in zip(subset, sub_starts.tolist(), strict=True):
            first, n = int(starts[i]), len(seqs[i])
            assert torch.equal(vectors[at : at + n], together[first : first + n]), i


@pytest.mark.slow
def test_cached_scores_equal_uncached_bit_for_bit_over_epochs(plain, cached, wmt):
    for epoch in range(3):
        cands, refs = _epoch(wmt, epoch)
        for metric in (plain, cached):
            metric.reset()
            metric.update(cands[:10], refs[:10])
            metric.update(cands[10:], refs[10:])
        expected, actual = plain.compute(), cached.compute()
        for key in ("precision", "recall", "f1"):
            assert torch.equal(actual[key], expected[key]), (epoch, key)


@pytest.mark.slow
def test_a_later_epoch_embeds_only_its_new_texts(cached, wmt):
    cached.clear_cache()
    cands, refs = _epoch(wmt, 0)
    cached.reset()
    cached.update(cands, refs)
    before = cached.embedder.rows_embedded
    cached.compute()
    assert cached.embedder.rows_embedded - before == _distinct(cached, cands + refs)
    for epoch in (1, 2):
        cands, refs = _epoch(wmt, epoch)
        cached.reset()
        cached.update(cands, refs)
        before = cached.embedder.rows_embedded
        cached.compute()
        # the references come from the cache; only this epoch's candidates run through the model
        assert cached.embedder.rows_embedded - before == _distinct(cached, cands)
    cached.reset()
    cached.update(cands, refs)  # the last epoch again: nothing at all to embed
    before = cached.embedder.rows_embedded
    cached.compute()
    assert cached.embedder.rows_embedded == before


@pytest.mark.slow
def test_a_tiny_budget_keeps_the_most_recent_texts_within_it(wmt):
    metric = BERTScore(MINILM, embedding_cache_mb=1)
    cache = metric.embedding_cache
    cands, refs = wmt["hyps_long"][:60], wmt["refs_long"][:60]
    metric.update(cands, refs)
    first = metric.compute()
    assert 0 < len(cache) < _distinct(metric, cands + refs)  # 1 MiB holds a few dozen texts, not 120
    assert cache.nbytes <= 1 << 20
    # scored again: the evicted texts are embedded again, the kept ones are not, and the scores are the same
    metric.reset()
    metric.update(cands, refs)
    before = metric.embedder.rows_embedded
    again = metric.compute()
    assert 0 < metric.embedder.rows_embedded - before < _distinct(metric, cands + refs)
    assert torch.equal(again["f1"], first["f1"])


def test_least_recently_used_texts_leave_first():
    row = 384 * 4  # bytes of one MiniLM token vector
    cache = EmbeddingCache(budget_bytes=3 * (2 * row + 300))
    for key in (b"a", b"b", b"c"):
        cache.put(key, torch.rand(2, 384))
    assert len(cache) == 3
    cache.get(b"a")  # "a" is now the most recently used, "b" the least
    cache.put(b"d", torch.rand(2, 384))
    assert [cache.get(k) is not None for k in (b"a", b"b", b"c", b"d")] == [True, False, True, True]
    cache.put(b"huge", torch.rand(100, 384))  # larger than the whole budget: not kept, nothing evicted
    assert cache.get(b"huge") is None and len(cache) == 3


def test_keys_are_the_token_ids_whatever_their_integer_type():
    assert text_key(torch.tensor([101, 2023, 102])) == text_key(torch.tensor([101, 2023, 102], dtype=torch.int32))
    assert text_key(torch.tensor([101, 2023, 102])) != text_key(torch.tensor([101, 2024, 102]))


def test_the_cache_is_not_state(cached, wmt):
    cands, refs = _epoch(wmt, 0)
    cached.reset()
    cached.update(cands, refs)
    cached.compute()
    assert len(cached.embedding_cache) > 0
    cached.persistent(True)
    try:
        saved = cached.state_dict()
    finally:
        cached.persistent(False)
    assert set(saved) == {"_extra_state"}  # the setting's digests and the states, nothing else
    assert set(saved["_extra_state"]["states"]) == set(cached.metric_state)
    restored = pickle.loads(pickle.dumps(cached.embedding_cache))  # what a spawned process would get: empty
    assert len(restored) == 0 and restored.budget_bytes == 64 << 20
    cached.reset()
    assert len(cached.embedding_cache) > 0  # reset() clears the state, not the cache
    cached.clear_cache()
    assert len(cached.embedding_cache) == 0


def test_clones_share_the_cache(cached, wmt):
    cands, refs = _epoch(wmt, 0)
    cached.reset()
    cached.update(cands, refs)
    cached.compute()
    clone = cached.clone()
    assert clone.embedding_cache is cached.embedding_cache
    clone.reset()
    clone.update(cands, refs)
    before = clone.embedder.rows_embedded
    clone.compute()
    assert clone.embedder.rows_embedded == before  # everything came from the shared cache


def test_the_cache_serves_the_device_and_the_model_object_the_metric_embeds_with(wmt):
    """Moving the metric moves neither the model nor the cache; the model's device and object are part of the
    cache's key, so once the model embeds on another device (asked for there by the metric's next compute()), or
    a copy of it does, the cache empties before serving it: vectors made elsewhere might differ in the last bits."""
    from bertscore_tm.embedding.cache import embedding_setting

    metric = BERTScore(MINILM, embedding_cache_mb=8)
    metric.update(wmt["hyps"][:3], wmt["refs"][:3])
    metric.compute()
    cache = metric.embedding_cache
    held = len(cache)
    assert held > 0 and cache.device == torch.device("cpu")
    on_cpu = embedding_setting(metric.embedder)
    assert embedding_setting(metric.embedder.copied_to("cpu")) != on_cpu  # another model object, another key
    metric.to("meta")
    assert len(cache) == held and metric.embedder.device == torch.device("cpu")  # nothing moved yet
    metric.scorer.follow(metric.device)  # what its next compute() asks first
    assert metric.embedder.device == torch.device("meta")
    assert embedding_setting(metric.embedder) != on_cpu  # the device is part of the key
    cache.use_with(embedding_setting(metric.embedder))
    assert len(cache) == 0


def test_off_by_default(plain):
    assert plain.embedding_cache is None
    plain.clear_cache()  # a no-op, not an error


@pytest.mark.slow
def test_bfloat16_cached_scores_equal_uncached_too(wmt):
    """The lower-precision mode is batch-invariant as well (one length per batch, eager attention on a CPU)."""
    plain16 = BERTScore(MINILM, model_dtype=torch.bfloat16)
    cached16 = BERTScore(MINILM, model_dtype=torch.bfloat16, embedding_cache_mb=16)
    for epoch in range(2):
        cands, refs = _epoch(wmt, epoch)
        results = []
        for metric in (plain16, cached16):
            metric.reset()
            metric.update(cands, refs)
            results.append(metric.compute())
        for key in ("precision", "recall", "f1"):
            assert_bfloat16_equal(results[1][key], results[0][key], atol=5e-3)


@pytest.mark.slow
@pytest.mark.parametrize("setting", ["window", "user model"])
def test_cached_scores_equal_uncached_in_window_mode_and_with_a_model_object(setting, wmt, minilm_path):
    """Long texts in windows (each window a forward sequence like any other) and a model object of the user's
    (never cast, run through its view) are batch-invariant too: the cache changes no bit."""
    if setting == "window":  # a 32-token window: every WMT sentence runs as several windows
        kwargs: dict = {"model_name_or_path": MINILM, "max_length": 32, "long_texts": "window", "window_stride": 12}
    else:
        from transformers import AutoModel, AutoTokenizer

        model = AutoModel.from_pretrained(minilm_path).train()  # dropout on in the user's model: not in the view
        kwargs = {"model": model, "tokenizer": AutoTokenizer.from_pretrained(minilm_path), "num_layers": 4}
    plain_metric, cached_metric = BERTScore(**kwargs), BERTScore(**kwargs, embedding_cache_mb=8)
    refs = wmt["refs_long"][:12]
    for epoch in range(2):
        cands = wmt["hyps_long"][12 * epoch : 12 * epoch + 12]
        results = []
        for metric in (plain_metric, cached_metric):
            metric.reset()
            metric.update(cands, refs)
            before = metric.embedder.rows_embedded
            results.append(metric.compute())
        if epoch == 1:  # the references came from the cache
            assert cached_metric.embedder.rows_embedded - before < plain_metric.embedder.rows_embedded / 2
        for key in ("precision", "recall", "f1"):
            assert torch.equal(results[1][key], results[0][key]), (setting, epoch, key)
