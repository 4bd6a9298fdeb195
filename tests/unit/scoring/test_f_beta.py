"""F-beta (`beta=`): a fourth score beside P, R and F1, each candidate's maximum over its references as F's is,
rescaled with a baseline derived from the file's P, R and F, and named in the hash code. Without `beta` nothing
changes (keys, hash code, scores)."""

from __future__ import annotations

import json

import pytest
import torch

from bertscore_tm import BERTScore, bert_score, score
from bertscore_tm.cli import main
from bertscore_tm.errors import ArgumentTypeError, ArgumentValueError
from bertscore_tm.scoring.baselines import f_beta_baseline
from tests.conftest import MINILM

CANDS = ["The cat sat on the mat.", "A dog barked at the mailman all morning.", "Rain is expected tomorrow."]
REFS = [
    ["A cat was sitting on the mat.", "The mat had a cat on it."],
    ["The mailman was barked at by a dog."],
    ["Tomorrow it will probably rain, say the forecasters.", "Rain tomorrow."],
]


def _f(p: torch.Tensor, r: torch.Tensor, beta: float) -> torch.Tensor:
    p, r = p.double(), r.double()
    return (1 + beta**2) * p * r / (beta**2 * p + r)


@pytest.mark.slow
def test_without_beta_nothing_changes():
    metric = BERTScore(MINILM)
    metric.update(CANDS, REFS)
    result = metric.compute()
    assert set(result) == {"precision", "recall", "f1"} and "beta" not in metric.hash_code
    assert metric.compute_scores().f_beta is None
    assert len(score(CANDS, REFS, model_type=MINILM)) == 3


@pytest.mark.slow
def test_f_beta_is_each_candidates_best_over_its_references():
    """Per reference F-beta of that reference's P and R; the candidate's the maximum, its best reference the
    one that gives it; beta=3 is CodeBERTScore's F3."""
    with_beta = BERTScore(MINILM, beta=3)
    with_beta.update(CANDS, REFS)
    got = with_beta.compute_scores()
    assert got.f_beta is not None and got.best_reference is not None
    plain = BERTScore(MINILM)
    for i, (cand, refs) in enumerate(zip(CANDS, REFS, strict=True)):
        one = [bert_score([cand], [ref], MINILM) for ref in refs]
        per_ref = torch.stack([_f(o["precision"], o["recall"], 3.0)[0] for o in one])
        torch.testing.assert_close(got.f_beta[i].double(), per_ref.max(), rtol=0, atol=1e-6)
        assert int(got.best_reference[i]) == int(per_ref.argmax())
    plain.update(CANDS, REFS)
    expected = plain.compute_scores()
    for name in ("precision", "recall", "f1"):
        assert torch.equal(getattr(got, name), getattr(expected, name)), name


def test_beta_1_is_f1_also_rescaled(tmp_path):
    baseline = tmp_path / "b.tsv"
    baseline.write_text("LAYER,P,R,F\n" + "".join(f"{n},0.61,0.58,0.59\n" for n in range(7)))
    for extra in ({}, {"rescale_with_baseline": True, "baseline_path": baseline}):
        out = bert_score(CANDS, REFS, MINILM, beta=1, **extra)
        torch.testing.assert_close(out["f_beta"], out["f1"], rtol=0, atol=1e-6)


@pytest.mark.slow
def test_rescaled_f_beta_uses_the_derived_baseline(tmp_path):
    baseline = tmp_path / "b.tsv"
    baseline.write_text("LAYER,P,R,F\n" + "".join(f"{n},0.61,0.58,0.59\n" for n in range(7)))
    raw = bert_score(CANDS, [r[0] for r in REFS], MINILM, beta=3)
    rescaled = bert_score(
        CANDS, [r[0] for r in REFS], MINILM, beta=3, rescale_with_baseline=True, baseline_path=baseline
    )
    b = float(f_beta_baseline(torch.tensor([[0.61, 0.58, 0.59]]), 3.0))
    p, r, f = 0.61, 0.58, 0.59
    assert b == pytest.approx(10 * p * r / (9 * p + r) * f * (p + r) / (2 * p * r), abs=1e-7)
    torch.testing.assert_close(rescaled["f_beta"], (raw["f_beta"] - b) / (1 - b), rtol=0, atol=1e-6)


@pytest.mark.slow
def test_every_entry_point_gives_f_beta():
    metric_out = BERTScore(MINILM, beta=0.5, return_hash=True)
    metric_out.update(CANDS, REFS)
    result = metric_out.compute()
    functional = bert_score(CANDS, REFS, MINILM, beta=0.5)
    *_, fb = score(CANDS, REFS, model_type=MINILM, beta=0.5)
    assert torch.equal(result["f_beta"], functional["f_beta"]) and torch.equal(fb, functional["f_beta"])
    assert result["hash"].endswith("_beta=0.5")
    only = bert_score(CANDS, REFS, MINILM, beta=0.5, output="f_beta", reduction="mean")
    torch.testing.assert_close(only, functional["f_beta"].mean())


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), float("inf")])
def test_a_beta_not_above_zero_is_refused(bad):
    with pytest.raises(ArgumentValueError, match="beta must be a finite number > 0"):
        BERTScore(MINILM, beta=bad)


@pytest.mark.parametrize("bad", ["3", True])
def test_a_beta_not_a_number_is_refused(bad):
    with pytest.raises(ArgumentTypeError, match="beta must be a number"):
        bert_score(CANDS, REFS, MINILM, beta=bad)


def test_output_f_beta_needs_beta():
    with pytest.raises(ArgumentValueError, match=r"output='f_beta'.*needs beta"):
        BERTScore(MINILM, output="f_beta")


@pytest.mark.slow
def test_the_command_line_reports_f_beta(tmp_path, capsys):
    cand, ref = tmp_path / "c.txt", tmp_path / "r.txt"
    cand.write_text("\n".join(CANDS) + "\n")
    ref.write_text("\n".join(r[0] for r in REFS) + "\n")
    expected = bert_score(CANDS, [r[0] for r in REFS], MINILM, beta=3)["f_beta"]
    assert main(["score", "-c", str(cand), "-r", str(ref), "-m", MINILM, "--beta", "3", "-s"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "_beta=3 P: " in lines[0] and " F3: " in lines[0]
    column = [float(line.split("\t")[3]) for line in lines[1:]]
    assert column == pytest.approx(expected.tolist(), abs=1e-6)
    assert main(["score", "-c", str(cand), "-r", str(ref), "-m", MINILM, "--beta", "3", "--format", "json", "-s"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["beta"] == 3 and doc["segments"][0]["f_beta"] == pytest.approx(float(expected[0]), abs=1e-6)
    assert main(["score", "-c", str(cand), "-r", str(ref), "-m", MINILM, "--beta", "3", "--format", "tsv", "-s"]) == 0
    assert "line\tP\tR\tF1\tF3" in capsys.readouterr().out.splitlines()
    assert main(["score", "-c", str(cand), "-r", str(ref), "-m", MINILM, "--beta", "0"]) != 0
    assert "beta" in capsys.readouterr().err


def test_a_resumable_run_keeps_f_beta_and_the_mask(tmp_path):
    """Shards hold the fifth column (F-beta) and the masked scores, equal to one compute()."""
    from bertscore_tm.corpus import score_resumable

    metric = BERTScore(MINILM, beta=3, ignore="punctuation")
    scores = score_resumable(metric, CANDS, REFS, tmp_path / "run", shard_size=2)
    again = score_resumable(metric, CANDS, REFS, tmp_path / "run", shard_size=2)  # read back from the shards
    metric.update(CANDS, REFS)
    whole = metric.compute_scores()
    for got in (scores, again):
        assert got.f_beta is not None and whole.f_beta is not None
        assert torch.equal(got.f_beta, whole.f_beta) and torch.equal(got.f1, whole.f1)
        assert torch.equal(got.best_reference, whole.best_reference)


@pytest.mark.slow
def test_all_pairs_give_f_beta_rescaled_as_the_paired_scores(tmp_path):
    from bertscore_tm.corpus import pairwise_resumable

    baseline = tmp_path / "b.tsv"
    baseline.write_text("LAYER,P,R,F\n" + "".join(f"{n},0.61,0.58,0.59\n" for n in range(7)))
    setting = {"beta": 3, "rescale_with_baseline": True, "baseline_path": baseline}
    metric = BERTScore(MINILM, **setting)
    refs = [r[0] for r in REFS]
    matrix = metric.pairwise(CANDS, refs)
    for j, ref in enumerate(refs):
        column = bert_score(CANDS, [ref] * len(CANDS), MINILM, **setting)
        assert torch.equal(matrix["f_beta"][:, j], column["f_beta"])
    resumed = pairwise_resumable(metric, CANDS, refs, tmp_path / "run", shard_size=2)
    assert resumed.shape[0] == 4 and torch.equal(resumed[3], matrix["f_beta"])
