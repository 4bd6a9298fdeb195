"""One matching kernel and one weighing (`scoring/kernel.py`) under every engine: on a CPU, entry (i, j) of
`pairwise`, the paired score of (i, j) and the explanation of (i, j) are the same float32 bits, in every setting
(IDF over the same references, a mask, prompts, all layers, F-beta, rescaling, long texts in windows, tiled and
streamed), for the packaged MiniLM and tiny random models (whose tokens often have only negative
similarities: padding taken for a match would show); an MBR utility is the exact mean of those paired F1s, and
`pairwise_resumable` in shards is `pairwise` whole, bit for bit."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import bertscore_tm.engines.pairwise as pw
from bertscore_tm import BERTScore
from bertscore_tm.corpus.resumable import pairwise_resumable
from bertscore_tm.scoring import matching
from tests.conftest import MINILM

NAMES = ("precision", "recall", "f1")


@pytest.fixture(scope="module")
def texts(wmt):
    """3 candidates and 3 references of uneven lengths (one short, one with punctuation to mask)."""
    return [*wmt["hyps"][4:6], "Yes, it is."], [wmt["refs"][4], "No.", wmt["refs"][6]]


@pytest.fixture(scope="module")
def long_texts(wmt):
    """Texts of a few hundred tokens (any two more than 512 together): many windows of 64 tokens each."""
    cands = [" ".join(wmt["hyps_long"][k : k + 12]) for k in (300, 320)]
    refs = [" ".join(wmt["refs_long"][k : k + 12]) for k in (300, 340)]
    return cands, refs


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from tiny_models import build_tiny_model

    root = tmp_path_factory.mktemp("tiny-same-bits")
    return {family: str(build_tiny_model(family, root)) for family in ("bert", "roberta")}


def expanded(cands: list[str], refs: list[str]) -> tuple[list[str], list[list[str]]]:
    return [c for c in cands for _ in refs], [[r] for _ in cands for r in refs]


def assert_same_bits(metric: BERTScore, cands, refs, paired: BERTScore | None = None, **explain) -> None:
    """`metric.pairwise` against the paired scores of the expanded pairs (by `paired`, default `metric`) and
    against `metric.explain` of each pair, whose token contributions add up to its raw P and R (in float64,
    rounding to the same float32)."""
    matrix = metric.pairwise(cands, refs)
    paired = metric if paired is None else paired
    paired.reset()
    paired.update(*expanded(cands, refs))
    scores = paired.compute()
    names = NAMES + (("f_beta",) if "f_beta" in matrix else ())
    for name in names:
        got = matrix[name].reshape(*matrix[name].shape[:-2], -1)
        assert torch.equal(got, scores[name]), (name, (got - scores[name]).abs().max())
    layers = [None] if not metric.all_layers else [None, 2]
    for layer in layers:
        row = 5 if layer is None else layer  # MiniLM's and the tiny models' layers used here
        for i, c in enumerate(cands):
            for j, r in enumerate(refs):
                why = metric.explain(c, r, layer=layer, **explain)
                for name in names:
                    value = matrix[name][row, i, j] if metric.all_layers else matrix[name][i, j]
                    assert getattr(why, name) == float(value), (name, i, j, layer)
                for tokens, raw in ((why.candidate_tokens, why.raw.precision), (why.reference_tokens, why.raw.recall)):
                    assert np.float32(math.fsum(t.contribution for t in tokens)) == np.float32(raw), (i, j)


SETTINGS = {
    "plain": {},
    "mask": {"ignore": "punctuation"},
    "prompts": {"candidate_prompt": "query: ", "reference_prompt": "passage: "},
    "all-layers": {"all_layers": True},
    "beta": {"beta": 3.0, "ignore": "punctuation"},
    "rescaled": {"rescale_with_baseline": True, "lang": "en", "beta": 2.0},
}


@pytest.mark.slow
@pytest.mark.parametrize("settings", SETTINGS.values(), ids=SETTINGS.keys())
def test_pairwise_paired_and_explained_scores_are_the_same_bits(texts, settings) -> None:
    assert_same_bits(BERTScore(MINILM, **settings), *texts)


@pytest.mark.slow
def test_with_idf_over_the_same_references(texts) -> None:
    """`pairwise` counts the IDF over its M references; the paired scores take it from those texts
    (`idf_texts`), the explanations count it over them (`idf_references`)."""
    cands, refs = texts
    paired = BERTScore(MINILM, idf=True, idf_texts=refs)
    assert_same_bits(BERTScore(MINILM, idf=True), cands, refs, paired, idf_references=refs)


@pytest.mark.parametrize("family", ["bert", "roberta"])
def test_tiny_models_the_same_bits(tiny, texts, family) -> None:
    assert_same_bits(BERTScore(tiny[family], num_layers=2, ignore="punctuation"), *texts)


@pytest.mark.slow
def test_long_texts_in_windows_tiled_the_same_bits(long_texts, monkeypatch) -> None:
    """Windows of 64 tokens; every paired match of long texts in tiles of similarities, all pairs in tiles of
    a text or two."""
    monkeypatch.setattr(matching, "gather_elements", lambda device: 10_000)
    monkeypatch.setattr(pw, "tile_tokens_for", lambda sim_bytes, rows: 200)
    assert_same_bits(BERTScore(MINILM, long_texts="window", max_length=64, ignore="punctuation"), *long_texts)


@pytest.mark.slow
def test_long_pairs_streamed_through_a_small_table_the_same_bits(long_texts, monkeypatch) -> None:
    """A working budget so small that a long match's two texts do not fit one table together: the paired
    engine streams them through it (embedding chunks of a text at a time) and still gives pairwise's bits."""
    cands, refs = long_texts
    metric = BERTScore(MINILM, long_texts="window", max_length=64)
    matrix = metric.pairwise(cands, refs)
    monkeypatch.setattr(type(metric.embedder), "block_bytes", property(lambda self: 1 << 16))
    metric.embedder.max_tokens = 256  # the smallest table is two forward batches: 512 rows
    tables: list[int] = []
    new_table = metric.embedder.new_table
    monkeypatch.setattr(metric.embedder, "new_table", lambda rows: tables.append(rows) or new_table(rows))
    metric.update(*expanded(cands, refs))
    scores = metric.compute()
    assert tables == [513]  # no two texts fit it together: each match streamed through it
    for name in NAMES:
        assert torch.equal(matrix[name].flatten(), scores[name]), name


def test_mbr_utilities_are_exact_means_of_the_paired_f1(texts) -> None:
    cands, refs = texts
    group = [*cands, *refs]
    metric = BERTScore(MINILM, ignore="punctuation")
    _, utilities = metric.mbr_select([group], return_utilities=True)
    metric.update(*expanded(group, group))
    f1 = metric.compute()["f1"].reshape(len(group), len(group)).double()
    for i in range(len(group)):
        others = [float(f1[i, j]) for j in range(len(group)) if j != i]
        assert float(utilities[0][i]) == math.fsum(others) / len(others), i


@pytest.mark.slow
@pytest.mark.parametrize("settings", [{}, {"all_layers": True, "beta": 3.0}], ids=["plain", "all-layers-beta"])
def test_pairwise_resumable_in_shards_is_pairwise_whole(wmt, tmp_path, settings) -> None:
    """Shards of 2 candidate rows: other tiles, and the shorter side (the one kept) changes from the
    references to the shard's candidates; the same bits."""
    cands, refs = wmt["hyps_long"][40:47], wmt["refs_long"][40:45]
    metric = BERTScore(MINILM, **settings)
    whole = metric.pairwise(cands, refs)
    sharded = pairwise_resumable(metric, cands, refs, tmp_path, shard_size=2)
    for k, name in enumerate(NAMES + (("f_beta",) if "beta" in settings else ())):
        assert torch.equal(sharded[k], whole[name]), name
