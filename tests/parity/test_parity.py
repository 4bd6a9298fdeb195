"""Scores equal the reference (bert-score 0.3.13) to 1e-5 on real text, in every setting."""

from __future__ import annotations

import pytest
import torch

from bertscore_tm import BERTScore, score
from tests.conftest import MINILM

TOL = 1e-5


def assert_close(ours, theirs):
    for name, a, b in zip("PRF", ours, theirs, strict=True):
        assert a.shape == b.shape, f"{name}: shape {tuple(a.shape)} vs reference {tuple(b.shape)}"
        err = (a - b).abs().max().item()
        assert err <= TOL, f"{name} differs from the reference by {err:.2e}"


def test_plain_scores_equal_the_reference(wmt, reference_score):
    ours = score(wmt["hyps"], wmt["refs"], model_type=MINILM, num_layers=5)
    assert_close(ours, reference_score(wmt["hyps"], wmt["refs"]))


def test_idf_scores_equal_the_reference(wmt, reference_score):
    ours = score(wmt["hyps"], wmt["refs"], model_type=MINILM, num_layers=5, idf=True)
    assert_close(ours, reference_score(wmt["hyps"], wmt["refs"], idf=True))


def test_several_references_take_the_best_of_each_score(wmt, reference_score):
    refs = [[a, b] for a, b in zip(wmt["refs"], wmt["refs2"], strict=True)]
    for idf in (False, True):
        ours = score(wmt["hyps"], refs, model_type=MINILM, num_layers=5, idf=idf)
        assert_close(ours, reference_score(wmt["hyps"], refs, idf=idf))


def test_uneven_reference_counts(wmt, reference_score):
    refs = [
        [r] if i % 3 else [r, r2, wmt["refs"][(i + 1) % 10]]
        for i, (r, r2) in enumerate(zip(wmt["refs"], wmt["refs2"], strict=True))
    ]
    ours = score(wmt["hyps"], refs, model_type=MINILM, num_layers=5, idf=True)
    assert_close(ours, reference_score(wmt["hyps"], refs, idf=True))


def test_all_layers_equal_the_reference(wmt, reference_score):
    ours = score(wmt["hyps"], wmt["refs"], model_type=MINILM, num_layers=5, all_layers=True)
    assert ours[0].shape == (7, 10)
    assert_close(ours, reference_score(wmt["hyps"], wmt["refs"], all_layers=True))


def test_all_layers_with_several_references_is_the_per_layer_best(wmt, reference_score):
    # The reference slices the layer axis instead of the pair axis here (a bug), so compare with the
    # per-layer maximum of its single-reference runs.
    refs = [[a, b] for a, b in zip(wmt["refs"], wmt["refs2"], strict=True)]
    first = reference_score(wmt["hyps"], wmt["refs"], all_layers=True)
    second = reference_score(wmt["hyps"], wmt["refs2"], all_layers=True)
    expected = [torch.maximum(a, b) for a, b in zip(first, second, strict=True)]
    assert_close(score(wmt["hyps"], refs, model_type=MINILM, num_layers=5, all_layers=True), expected)


def test_rescaled_with_a_custom_baseline_file(wmt, reference_score, tmp_path):
    baseline = tmp_path / "baseline.tsv"
    rows = ["LAYER,P,R,F"] + [
        f"{layer},{0.3 + 0.05 * layer},{0.31 + 0.05 * layer},{0.305 + 0.05 * layer}" for layer in range(7)
    ]
    baseline.write_text("\n".join(rows) + "\n")
    refs = [[a, b] for a, b in zip(wmt["refs"], wmt["refs2"], strict=True)]
    for all_layers in (False, True):
        ours, code = score(
            wmt["hyps"],
            refs if not all_layers else wmt["refs"],
            model_type=MINILM,
            num_layers=5,
            rescale_with_baseline=True,
            baseline_path=baseline,
            all_layers=all_layers,
            return_hash=True,
        )
        theirs = reference_score(
            wmt["hyps"],
            refs if not all_layers else wmt["refs"],
            lang="en",
            rescale_with_baseline=True,
            baseline_path=str(baseline),
            all_layers=all_layers,
        )
        assert_close(ours, theirs)
        assert code.endswith("-custom-rescaled")  # bert-score's default use_fast_tokenizer=False: its code


@pytest.mark.parametrize("fast", [None, False, True])
def test_the_hash_code_of_a_score_call_is_bert_scores_for_the_same_call(wmt, reference_score, minilm_path, fast):
    """score() takes bert-score's arguments in its order and with its defaults, so the same call names the same
    setting: use_fast_tokenizer=False by default, the code's `_fast-tokenizer` only with True."""
    cands, refs = wmt["hyps"][:4], wmt["refs"][:4]
    given = {} if fast is None else {"use_fast_tokenizer": fast}
    (_, code) = score(cands, refs, minilm_path, 5, False, True, return_hash=True, **given)  # bert-score's order
    kwargs = {"use_fast_tokenizer": False, **given}
    _, theirs = reference_score(cands, refs, idf=True, return_hash=True, **kwargs)
    assert code == theirs


def test_unseen_long_pairs_equal_the_reference(wmt, reference_score):
    cands, refs = wmt["hyps_long"][1500:1700], wmt["refs_long"][1500:1700]
    for idf in (False, True):
        ours = score(cands, refs, model_type=MINILM, num_layers=5, idf=idf, batch_size=32)
        assert_close(ours, reference_score(cands, refs, idf=idf))


def test_metric_fed_in_uneven_chunks_equals_one_call(wmt, reference_score):
    cands, refs = wmt["hyps_long"][:60], wmt["refs_long"][:60]
    metric = BERTScore(MINILM, idf=True)
    for lo, hi in ((0, 1), (1, 8), (8, 8), (8, 37), (37, 60)):
        metric.update(cands[lo:hi], refs[lo:hi])
    chunked = metric.compute()
    whole = score(cands, refs, model_type=MINILM, idf=True)
    for key, ours in zip(("precision", "recall", "f1"), whole, strict=True):
        assert torch.allclose(chunked[key], ours, atol=1e-6)
    assert_close([chunked[k] for k in ("precision", "recall", "f1")], reference_score(cands, refs, idf=True))


def test_hash_code_is_the_references(reference_score, wmt):
    import bert_score.utils

    for idf, rescale, custom in ((False, False, False), (True, False, False), (False, True, True)):
        theirs = bert_score.utils.get_hash(MINILM, 5, idf, rescale, custom, True)
        from bertscore_tm.scoring.hashcode import hash_code

        assert hash_code(MINILM, 5, idf, rescale, custom) == theirs
