"""`compile_model=True`: the forward pass of a loaded model runs through `torch.compile` (opt-in). Its fused
kernels round differently from the eager ones, so scores equal the eager metric's to float32 rounding, not bit
for bit; it keeps a text's vectors independent of the batch it runs in; a user's model object is refused."""

from __future__ import annotations

import shutil

import pytest
import torch
from torch import nn

from bertscore_tm import BERTScore, score
from tests.conftest import MINILM

needs_compiler = pytest.mark.skipif(
    shutil.which("c++") is None and shutil.which("g++") is None,
    reason="torch.compile on a CPU builds C++ kernels: no C++ compiler here",
)

CANDS = ["The quick brown fox jumps over the lazy dog.", "Prices rose sharply.", "It rained.", "Prices fell."]
REFS = ["A fast brown fox leaps over a lazy dog.", "Prices went up a lot.", "The whole day it was raining.", "Hi."]


@needs_compiler
def test_a_compiled_model_scores_as_the_eager_one_to_float32_rounding_whatever_it_runs_with() -> None:
    eager = BERTScore(MINILM, num_layers=1)
    compiled = BERTScore(MINILM, num_layers=1, compile_model=True)
    eager.update(CANDS, REFS)
    compiled.update(CANDS, REFS)
    want, got = eager.compute(), compiled.compute()
    assert compiled.embedder._compiled is not None  # the compiled forward ran
    for name in ("precision", "recall", "f1"):
        assert torch.allclose(got[name], want[name], rtol=0, atol=1e-5), name
    # one pair alone gives the bits it gave among the others (batches of one length, at least 64 tokens)
    alone = BERTScore(MINILM, num_layers=1, compile_model=True)
    alone.update(CANDS[1:2], REFS[1:2])
    assert torch.equal(alone.compute()["f1"], got["f1"][1:2])


@needs_compiler
def test_the_functional_twin_takes_the_setting() -> None:
    got = score(CANDS[:2], REFS[:2], model_type=MINILM, num_layers=1, compile_model=True, device="cpu")
    want = score(CANDS[:2], REFS[:2], model_type=MINILM, num_layers=1, device="cpu")
    for name, a, b in zip(("precision", "recall", "f1"), got, want, strict=True):
        assert torch.allclose(a, b, rtol=0, atol=1e-5), name


def test_a_model_object_of_the_users_is_not_compiled_here() -> None:
    from transformers import AutoModel, AutoTokenizer

    from bertscore_tm.models.loading import resolve_model_path

    path = resolve_model_path(MINILM)
    model: nn.Module = AutoModel.from_pretrained(path)
    with pytest.raises(ValueError, match=r"compile it yourself \(torch.compile\(model\)\)"):
        BERTScore(model=model, tokenizer=AutoTokenizer.from_pretrained(path), num_layers=1, compile_model=True)


def test_the_setting_must_be_a_bool() -> None:
    with pytest.raises(TypeError, match="compile_model must be True or False"):
        BERTScore(MINILM, compile_model="yes")  # type: ignore[arg-type]


def test_compiled_vectors_are_cached_apart_from_eager_ones() -> None:
    from bertscore_tm.embedding.cache import embedding_setting

    eager = BERTScore(MINILM, num_layers=1)
    compiled = BERTScore(MINILM, num_layers=1, compile_model=True)
    assert embedding_setting(eager.embedder) != embedding_setting(compiled.embedder)
    assert eager.settings()["compile_model"] is False and compiled.settings()["compile_model"] is True
