"""MBR's `utility` (issue 39): the score averaged over the others is F1 by default (the results unchanged),
F-beta with the setting's beta, precision or recall (the hypothesis as the candidate), each checked against an
independent float64 computation from the all-pairs P and R matrices (`pairwise`); rescaled, against the paired
scores' means. All pairs with a beta give the F-beta matrix (`pairwise`, `pairwise_resumable`), and a resumed
all-pairs run with another mask, prompt or beta is refused, not mixed. The command line's ``mbr --utility``."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from bertscore_tm import BERTScore, bert_score
from bertscore_tm.corpus.resumable import CheckpointMismatchError, pairwise_resumable
from bertscore_tm.engines import mbr_select
from bertscore_tm.errors import ArgumentValueError
from tests.cli.test_cli import one_line_error, run_main
from tests.conftest import MINILM

GROUPS = [
    ["The cat sat on the mat.", "A cat sat on the mat.", "A small cat was sitting on a mat today.", "Dogs bark."],
    ["Heavy rain is expected tomorrow.", "Tomorrow it rains.", "Heavy rain is expected tomorrow."],
    ["Hello."],
]
PSEUDO = [["A cat was sitting on the mat."], ["It will rain a lot tomorrow.", "Rain."], ["Hi there."]]
BETA = 3.0


def _f_beta(p: np.ndarray, r: np.ndarray, beta: float) -> np.ndarray:
    """F-beta in float64 from P and R: (1 + b^2) P R / (b^2 P + R), 0 where it is not a number."""
    b2 = beta * beta
    with np.errstate(invalid="ignore", divide="ignore"):
        f = (1 + b2) * p * r / (b2 * p + r)
    return np.nan_to_num(f, nan=0.0)


def _independent(hyps: list[str], refs: list[str] | None, utility: str) -> list[float]:
    """Each hypothesis's mean utility, from the P and R matrices of all pairs, in float64 with numpy: over
    every other position of its group, or over all of `refs`."""
    matrices = BERTScore(MINILM).pairwise(hyps, hyps if refs is None else refs)
    p, r = (matrices[k].double().numpy() for k in ("precision", "recall"))
    score = {"precision": p, "recall": r, "f1": _f_beta(p, r, 1.0), "f_beta": _f_beta(p, r, BETA)}[utility]
    out = []
    for i in range(len(hyps)):
        row = score[i] if refs is not None else np.delete(score[i], i)
        out.append(float(row.mean()) if len(row) else math.nan)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("utility", ["f1", "f_beta", "precision", "recall"])
@pytest.mark.parametrize("pseudo", [None, PSEUDO], ids=["own", "pseudo"])
def test_each_utility_is_the_mean_of_its_score_in_float64(utility: str, pseudo) -> None:
    metric = BERTScore(MINILM, beta=BETA)
    chosen, utilities = metric.mbr_select(GROUPS, references=pseudo, return_utilities=True, utility=utility)
    for g, group in enumerate(GROUPS):
        expected = _independent(group, None if pseudo is None else pseudo[g], utility)
        assert utilities[g].tolist() == pytest.approx(expected, abs=1e-6, nan_ok=True)
        assert chosen[g] == (max(range(len(expected)), key=lambda i: (expected[i], -i)) if len(group) > 1 else 0)
    assert utilities[1][0] == utilities[1][2]  # equal texts tie exactly, so the first is chosen


@pytest.mark.slow
def test_f1_stays_the_default_and_beta_changes_nothing_of_it() -> None:
    plain = BERTScore(MINILM).mbr_select(GROUPS, return_utilities=True)
    with_beta = BERTScore(MINILM, beta=BETA).mbr_select(GROUPS, return_utilities=True)
    named = mbr_select(GROUPS, MINILM, return_utilities=True, utility="f1")
    for other in (with_beta, named):
        assert other[0] == plain[0]
        for a, b in zip(other[1], plain[1], strict=True):  # bit for bit (a lone hypothesis's NaN too)
            torch.testing.assert_close(a, b, rtol=0, atol=0, equal_nan=True)
    f_beta = BERTScore(MINILM, beta=BETA).mbr_select(GROUPS, return_utilities=True, utility="f_beta")[1]
    assert not torch.allclose(f_beta[0], plain[1][0])  # the utility is applied, not ignored


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("utility", ["f_beta", "recall"])
def test_rescaled_utilities_are_the_paired_scores_means(utility: str) -> None:
    settings = {"beta": BETA, "rescale_with_baseline": True, "lang": "en"}
    _, utilities = mbr_select(GROUPS[:2], MINILM, return_utilities=True, utility=utility, **settings)
    for group, ours in zip(GROUPS[:2], utilities, strict=True):
        n = len(group)
        paired = bert_score([h for h in group for _ in group], group * n, MINILM, **settings)[utility].double()
        table = paired.reshape(n, n).numpy()
        expected = [math.fsum(np.delete(table[i], i)) / (n - 1) for i in range(n)]
        assert ours.tolist() == pytest.approx(expected, abs=1e-6)


def test_a_utility_mbr_cannot_average_is_refused_naming_it() -> None:
    with pytest.raises(ArgumentValueError, match=r'utility="f_beta" needs beta=') as err:
        mbr_select(GROUPS, MINILM, utility="f_beta")  # before the model loads
    assert err.value.argument == "utility" and err.value.others == ("beta",)
    with pytest.raises(ArgumentValueError, match="utility must be one of") as err:
        BERTScore(MINILM).mbr_select(GROUPS, utility="F1")
    assert err.value.argument == "utility"
    with pytest.raises(ArgumentValueError, match="needs beta="):
        BERTScore(MINILM).mbr_select(GROUPS, utility="f_beta")


def test_pairwise_with_beta_gives_the_f_beta_matrix_resumable_too(tmp_path) -> None:
    cands, refs = GROUPS[0], [*PSEUDO[0], *PSEUDO[1]]
    metric = BERTScore(MINILM, beta=BETA)
    got = metric.pairwise(cands, refs)
    assert set(got) == {"precision", "recall", "f1", "f_beta"} and got["f_beta"].shape == (4, 3)
    p, r = got["precision"].double().numpy(), got["recall"].double().numpy()
    np.testing.assert_allclose(got["f_beta"].double().numpy(), _f_beta(p, r, BETA), rtol=0, atol=1e-6)
    whole = pairwise_resumable(metric, cands, refs, tmp_path / "one", shard_size=4)  # one shard: the same call
    sharded = pairwise_resumable(metric, cands, refs, tmp_path / "two", shard_size=3)
    assert whole.shape == sharded.shape == (4, 4, 3)
    for k, name in enumerate(("precision", "recall", "f1", "f_beta")):
        assert torch.equal(whole[k], got[name]) and torch.equal(sharded[k], got[name])  # other tiles, same bits


@pytest.mark.slow
@pytest.mark.parametrize(
    "other",
    [{"beta": 2.0}, {}, {"ignore": "punctuation", "beta": BETA}, {"candidate_prompt": "query: ", "beta": BETA}],
    ids=["another-beta", "no-beta", "a-mask", "a-prompt"],
)
def test_a_resumed_pairwise_run_with_another_mask_prompt_or_beta_is_refused(tmp_path, other) -> None:
    cands, refs = GROUPS[0], PSEUDO[1]
    pairwise_resumable(BERTScore(MINILM, beta=BETA), cands, refs, tmp_path, shard_size=2)
    manifest = json.loads((tmp_path / "manifest-rank0.json").read_text())
    assert manifest["hash_code"].endswith("_beta=3")
    with pytest.raises(CheckpointMismatchError) as err:
        pairwise_resumable(BERTScore(MINILM, **other), cands, refs, tmp_path, shard_size=2)
    assert err.value.what in ("hash_code", "row_shape")
    again = pairwise_resumable(BERTScore(MINILM, beta=BETA), cands, refs, tmp_path, shard_size=2)
    assert torch.equal(again, pairwise_resumable(BERTScore(MINILM, beta=BETA), cands, refs, tmp_path / "new", 2))


@pytest.mark.slow
def test_the_command_line_takes_the_utility(capsys, tmp_path) -> None:
    hyps = tmp_path / "hyps.txt"
    hyps.write_text("\n".join(GROUPS[0]) + "\n")
    base = ["mbr", "-m", MINILM, "-i", str(hyps), "--group-size", "4", "--format", "json"]
    rc, out, err = run_main(capsys, *base, "--utility", "f_beta", "--beta", "3")
    assert rc == 0, err
    doc = json.loads(out)
    _, expected = BERTScore(MINILM, beta=BETA).mbr_select(GROUPS[:1], return_utilities=True, utility="f_beta")
    assert doc["utility"] == "f_beta" and doc["groups"][0]["utilities"] == expected[0].tolist()
    rc, out, _ = run_main(capsys, *base)
    assert rc == 0 and json.loads(out)["utility"] == "f1"
    line = one_line_error(capsys, *base, "--utility", "f_beta")
    assert "--utility f_beta needs --beta" in line
