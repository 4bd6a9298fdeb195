"""A compute()'s blocks in packs without a Python object per text (issue 37): the texts' ids gathered end to end
(`TokenTexts.many` -> `EndToEnd`), packs cut by bisection (`pack_end`) and run from slices of the ids straight
into slices of the table (`Embedder._embed_packs`). Each is checked against the path it stands in for, which
made a `Piece`, a view and several reads a text: the same packs, the same bits."""

from __future__ import annotations

import random

import pytest
import torch

from bertscore_tm import BERTScore
from bertscore_tm.embedding import embedder as embedder_module
from bertscore_tm.embedding.batches import pack_end, packs
from bertscore_tm.embedding.embedder import Embedder
from bertscore_tm.embedding.rows import EndToEnd, TokenTexts
from bertscore_tm.models import windows as windows_module
from bertscore_tm.models.windows import WindowRule
from tests.conftest import MINILM
from tiny_models import tiny_encoder

pytestmark = pytest.mark.usefixtures("one_thread")


def _longest_first(count: int, seed: int, empty: int = 0) -> EndToEnd:
    """`count` random texts of many lengths, longest first, then `empty` empty ones, laid end to end."""
    rng = random.Random(seed)
    lengths = sorted((rng.choice([1, 2, 3, 5, 7, 7, 9, 12, 12, 13, 25, 40, 60]) for _ in range(count)), reverse=True)
    texts = [torch.tensor([rng.randrange(3, 120) for _ in range(n)], dtype=torch.int32) for n in lengths]
    texts += [torch.zeros(0, dtype=torch.int32)] * empty
    return EndToEnd(torch.cat(texts), [len(t) for t in texts], longest_first=True)


def _accelerated(model_type: str = "roberta", **kwargs) -> Embedder:
    embedder = Embedder(tiny_encoder(model_type), 1, all_layers=False, **kwargs)
    embedder._batching = "accelerator"
    return embedder


def _both_ways(embedder: Embedder, seqs: EndToEnd) -> tuple[torch.Tensor, list[int], torch.Tensor, list[int]]:
    """(table, starts) of `seqs` through the packs of slices, then through the general path (a list of views)."""
    rows = sum(seqs.lengths)
    fast, slow = embedder.new_table(rows), embedder.new_table(rows)
    return fast, embedder.embed_into(fast, seqs), slow, embedder.embed_into(slow, list(seqs))


@pytest.mark.parametrize("seed", range(6))
def test_pack_end_cuts_the_very_packs_of_packs(seed: int) -> None:
    rng = random.Random(seed)
    lengths = sorted((rng.randrange(1, 90) for _ in range(rng.randrange(1, 400))), reverse=True)
    edges = [0, *torch.tensor(lengths).cumsum(0).tolist()]
    for budget in (1, 50, 89, 256, 10_000):
        for batch_size in (None, 1, 7):
            cut, i = [], 0
            while i < len(lengths):
                j = pack_end(edges, i, len(lengths), budget, batch_size)
                cut.append(list(range(i, j)))
                i = j
            assert cut == list(packs(lengths, budget, batch_size)), (budget, batch_size)


def test_many_gathers_each_texts_ids_from_its_source_end_to_end() -> None:
    cands, refs = torch.arange(100, 130, dtype=torch.int32), torch.arange(200, 240, dtype=torch.int32)
    texts = TokenTexts(
        (cands, refs),
        torch.tensor([0, 1, 0, 1, 1], dtype=torch.uint8),
        torch.tensor([0, 0, 5, 12, 30]),
        torch.tensor([5, 12, 3, 0, 10], dtype=torch.int32),
    )
    chosen = [1, 4, 0, 2, 3]
    got = texts.many(chosen)
    assert got.lengths == [12, 10, 5, 3, 0] and got.longest_first
    assert [t.tolist() for t in got] == [texts[t].tolist() for t in chosen]
    assert got[-2].tolist() == [105, 106, 107] and got.ids.dtype == torch.int32
    part = got[1:4]
    assert part.longest_first and part.lengths == [10, 5, 3] and torch.equal(part.ids, torch.cat(list(part)))
    assert len(got[3:1]) == 0 and got[::2].lengths == [12, 5, 0] and not texts.many([2, 0]).longest_first
    assert len(texts.many([])) == 0


@pytest.mark.parametrize(("model_type", "dtype"), [("roberta", torch.float32), ("bert", torch.bfloat16)])
def test_packs_of_slices_fill_the_table_bit_for_bit_as_the_general_path(model_type: str, dtype: torch.dtype) -> None:
    """Accelerator batching (float32) and the CPU's bfloat16 packing: the same packs of the same ids, so the
    same bits, and empty texts (last) take no rows."""
    embedder = Embedder(tiny_encoder(model_type), 1, all_layers=False, model_dtype=dtype, max_tokens=200)
    if dtype == torch.float32:
        embedder._batching = "accelerator"
    assert embedder.packing
    seqs = _longest_first(150, seed=1, empty=3)
    fast, starts, slow, want = _both_ways(embedder, seqs)
    assert starts == want and torch.equal(fast, slow)


def test_the_packs_run_are_those_of_packs_and_progress_counts_each_text(monkeypatch: pytest.MonkeyPatch) -> None:
    embedder = _accelerated(max_tokens=128)
    seqs = _longest_first(90, seed=2, empty=2)
    ran: list[list[int]] = []
    real = embedder.embed_rows

    def embed_rows(seqs, out=None, lengths=None):
        assert isinstance(seqs, EndToEnd)  # a slice, never a list of views
        ran.append(list(lengths))
        return real(seqs, out, lengths)

    monkeypatch.setattr(embedder, "embed_rows", embed_rows)
    counted: list[int] = []
    progress = type("Bar", (), {"update": lambda self, n: counted.append(n)})()
    embedder.embed_into(embedder.new_table(sum(seqs.lengths)), seqs, progress)
    nonempty = seqs.lengths[:-2]
    assert ran == [[nonempty[i] for i in pack] for pack in packs(nonempty, 128)] and sum(counted) == 90


def test_out_of_memory_in_a_pack_of_slices_halves_the_budget_once_with_the_same_bits(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    embedder = _accelerated(max_tokens=400)
    seqs = _longest_first(120, seed=3)
    want = embedder.new_table(sum(seqs.lengths))
    embedder.embed_into(want, list(seqs))
    real = embedder.embed_rows

    def embed_rows(seqs, out=None, lengths=None):
        if sum(lengths) > 100:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return real(seqs, out, lengths)

    monkeypatch.setattr(embedder, "embed_rows", embed_rows)
    got = embedder.new_table(sum(seqs.lengths))
    with pytest.warns(UserWarning, match="budget of 400 padded tokens; it went on with 100") as said:
        embedder.embed_into(got, seqs)
    assert len(said) == 1 and embedder.max_tokens == 100
    torch.testing.assert_close(got, want, atol=1e-6, rtol=0)  # other packs: rounding only


def test_a_window_rule_takes_the_packs_of_slices_only_where_every_text_fits_one_window() -> None:
    embedder = _accelerated()
    seqs = _longest_first(60, seed=5)  # up to 60 tokens
    embedder.windows = WindowRule(size=58, stride=29, lead=1, trail=1)
    assert embedder._packs_whole(seqs)
    embedder.windows = WindowRule(size=40, stride=20, lead=1, trail=1)
    assert not embedder._packs_whole(seqs)
    fast, starts, slow, want = _both_ways(embedder, seqs)  # windows: the general path both ways
    assert starts == want and torch.equal(fast, slow)
    unsorted = EndToEnd(seqs[::-1].ids, seqs.lengths[::-1])
    assert not embedder._packs_whole(unsorted) and not unsorted.longest_first


def test_a_compute_in_accelerator_batching_makes_no_piece_a_text(wmt, monkeypatch: pytest.MonkeyPatch) -> None:
    """A compute()'s blocks take the packs of slices: planning pieces text by text (a `Piece` each) is never
    asked for, and the scores are those of batches of one length."""
    cands, refs = wmt["hyps"][:150], wmt["refs"][:150]
    want, fast = BERTScore(MINILM), BERTScore(MINILM)
    fast.embedder._batching = "accelerator"
    for metric in (want, fast):
        metric.update(cands, refs)
    expected = want.compute()

    def no_pieces(*args, **kwargs):
        raise AssertionError("a piece was planned per text")

    monkeypatch.setattr(embedder_module, "plan_pieces", no_pieces)
    monkeypatch.setattr(windows_module, "plan_pieces", no_pieces)
    got = fast.compute()
    for key in ("precision", "recall", "f1"):
        torch.testing.assert_close(got[key], expected[key], atol=1e-6, rtol=0)


def test_packed_pass_refuses_texts_that_are_not_longest_first() -> None:
    model = tiny_encoder("bert")
    with pytest.raises(ValueError, match="longest first"):
        embedder_module.packed_pass(model, torch.arange(3, 10), [3, 4], score_budget=1 << 16)


def test_the_texts_a_cache_lacks_still_run_in_packs_of_slices(monkeypatch: pytest.MonkeyPatch) -> None:
    """An embedding cache hands the embedder only the texts it lacks: taken out of the `EndToEnd` as one
    (`take`), still longest first, so they run in packs of slices too; the table is the uncached one."""
    from bertscore_tm.embedding.cache import CachingEmbedder, EmbeddingCache

    embedder = _accelerated(max_tokens=128)
    seqs = _longest_first(70, seed=6, empty=1)
    want = embedder.new_table(sum(seqs.lengths))
    embedder.embed_into(want, list(seqs))
    cached = CachingEmbedder(embedder, EmbeddingCache(1 << 24))
    cached.embed_into(embedder.new_table(sum(seqs.lengths)), seqs[10:40])  # these are found next time
    taken: list[EndToEnd] = []
    real = embedder._embed_packs
    monkeypatch.setattr(
        embedder, "_embed_packs", lambda table, part, progress: taken.append(part) or real(table, part, progress)
    )
    got = embedder.new_table(sum(seqs.lengths))
    assert cached.embed_into(got, seqs) == embedder.embed_into(embedder.new_table(len(want)), list(seqs))
    assert len(taken) == 1 and taken[0].longest_first and len(taken[0]) == 40  # not the 30 found, nor the empty one
    assert taken[0].lengths == seqs.lengths[:10] + seqs.lengths[40:70]
    torch.testing.assert_close(got, want, atol=1e-6, rtol=0)  # the 30 found ran in other packs: rounding only
    some = seqs.take([3, 0, 5])
    assert [t.tolist() for t in some] == [seqs[i].tolist() for i in (3, 0, 5)] and not some.longest_first
