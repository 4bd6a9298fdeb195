"""`bertscore_tm.BERTScorer` is bert-score's `BERTScorer` with the import changed: the same constructor, methods and
properties, the scores of bert-score's own class run unpadded (`batch_size=1`), the same hash code."""

from __future__ import annotations

import contextlib
import io
import warnings

import pytest
import torch

from bertscore_tm import BERTScorer
from bertscore_tm.errors import ArgumentTypeError, ArgumentValueError
from tests.conftest import REPO

BASELINE = str(REPO / "baselines" / "en" / "sentence-transformers" / "all-MiniLM-L6-v2.tsv")
TOL = 1e-5


def _theirs(**kwargs):
    import bert_score

    with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        return bert_score.BERTScorer(**kwargs)


def _close(ours, theirs):
    for a, b in zip(ours, theirs, strict=True):
        assert a.shape == b.shape
        torch.testing.assert_close(a.double(), b.double(), atol=TOL, rtol=0)


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"idf": True},
        {"rescale_with_baseline": True, "lang": "en", "baseline_path": BASELINE},
        {"use_fast_tokenizer": True, "num_layers": 3},
        {"all_layers": True},
    ],
    ids=["plain", "idf", "rescaled", "fast-layer-3", "all-layers"],
)
def test_scores_and_hash_equal_bert_scores_class(wmt, minilm_path, kwargs) -> None:
    cands, refs = wmt["hyps"][:20], [[a, b] for a, b in zip(wmt["refs"][:20], wmt["refs2"][:20], strict=True)]
    settings = {"model_type": minilm_path, "num_layers": 5, **kwargs}
    if kwargs.get("idf"):
        settings["idf_sents"] = wmt["refs"]
    ours, theirs = BERTScorer(**settings), _theirs(**settings)
    if kwargs.get("all_layers"):  # bert-score's best of several references is wrong with all_layers: one each
        refs = [group[0] for group in refs]
    (p, r, f), code = ours.score(cands, refs, return_hash=True)
    (tp, tr, tf), their_code = theirs.score(cands, refs, batch_size=1, return_hash=True)
    _close((p, r, f), (tp, tr, tf))
    assert code == their_code == ours.hash == theirs.hash
    assert (ours.model_type, ours.num_layers, ours.idf) == (theirs.model_type, theirs.num_layers, theirs.idf)
    if kwargs.get("rescale_with_baseline"):
        torch.testing.assert_close(ours.baseline_vals.double(), theirs.baseline_vals.double(), atol=1e-7, rtol=0)


def test_compute_idf_later_and_again(wmt, minilm_path) -> None:
    scorer = BERTScorer(model_type=minilm_path, num_layers=5, idf=True)
    with pytest.raises(ArgumentValueError, match="IDF weights are not computed"):
        scorer.score(wmt["hyps"][:2], wmt["refs"][:2])
    scorer.compute_idf(wmt["refs"])
    theirs = _theirs(model_type=minilm_path, num_layers=5, idf=True, idf_sents=wmt["refs"])
    _close(scorer.score(wmt["hyps"][:5], wmt["refs"][:5]), theirs.score(wmt["hyps"][:5], wmt["refs"][:5], batch_size=1))
    with pytest.warns(UserWarning, match="Overwriting the previous importance weights"):
        scorer.compute_idf(wmt["refs2"])


def test_plot_example_writes_the_heatmap(tmp_path, minilm_path) -> None:
    pytest.importorskip("matplotlib")
    scorer = BERTScorer(model_type=minilm_path, num_layers=5)
    path = tmp_path / "out.png"
    scorer.plot_example("The cat sat on the mat.", "A cat was sitting on the mat.", fname=str(path))
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(ArgumentValueError, match="give the file to save the plot to"):
        scorer.plot_example("a", "b")


@pytest.mark.parametrize(
    ("kwargs", "error", "argument"),
    [
        ({}, ArgumentValueError, "model_type"),
        ({"model_type": "{model}", "num_layers": 5, "idf": "yes"}, ArgumentTypeError, "idf"),
        ({"model_type": "{model}", "num_layers": 5, "nthreads": -1}, ArgumentValueError, "nthreads"),
        ({"model_type": "{model}", "num_layers": 5, "idf_sents": []}, ArgumentValueError, "idf_sents"),
    ],
    ids=["no-model", "idf-not-bool", "threads", "empty-idf-sents"],
)
def test_mistakes_are_clear_errors(minilm_path, kwargs, error, argument) -> None:
    filled = {k: (v.format(model=minilm_path) if isinstance(v, str) else v) for k, v in kwargs.items()}
    with pytest.raises(error) as err:
        BERTScorer(**filled)
    assert err.value.argument == argument
