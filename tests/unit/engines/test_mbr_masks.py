"""MBR with a token mask (``ignore=``) and fixed prompts: every utility is the mean of the paired metric's F1 of
the hypothesis against the others (or against the pseudo-references) with the same setting, to 1e-6; with
IDF counted over each group's references, rescaled, and with prompts that differ between the two sides (so a
hypothesis is a candidate with one prompt and a reference with the other)."""

from __future__ import annotations

import json
import math

import pytest

from bertscore_tm import BERTScore, bert_score
from tests.conftest import MINILM

GROUPS = [
    ["The cat, sadly, sat on the mat!", "A cat sat on the mat.", "The cat sat; on the mat.", "A cat sat on the mat."],
    ["Rain (heavy) is expected tomorrow.", "Heavy rain tomorrow!", "!!! ..."],
    ["Hello."],
]
PSEUDO = [["A cat was sitting on the mat.", "The mat had a cat on it."], ["Tomorrow: heavy rain."], ["Hi there."]]

SETTINGS = [
    {"ignore": "punctuation"},
    {"ignore": r"the|a", "idf": True},
    {"candidate_prompt": "query: ", "reference_prompt": "passage: "},
    {"candidate_prompt": "query: ", "ignore": "punctuation", "rescale_with_baseline": True, "lang": "en"},
    {"reference_prompt": "passage: ", "idf": True},
]


def _paired_f1(settings: dict, hyps: list[str], refs: list[str]) -> list[list[float]]:
    """F1 of each of `hyps` against each of `refs` as the paired metric gives it, IDF (if on) over `refs` as
    given: one call per hypothesis then, else one for them all."""
    if settings.get("idf"):
        return [[float(x) for x in bert_score([h] * len(refs), refs, MINILM, **settings)["f1"]] for h in hyps]
    got = bert_score([h for h in hyps for _ in refs], refs * len(hyps), MINILM, **settings)["f1"].tolist()
    return [got[i * len(refs) : (i + 1) * len(refs)] for i in range(len(hyps))]


def _expected(settings: dict, groups: list[list[str]], pseudo: list[list[str]] | None) -> list[list[float]]:
    out = []
    for g, group in enumerate(groups):
        row = []
        for i, f1 in enumerate(_paired_f1(settings, group, group if pseudo is None else pseudo[g])):
            if pseudo is None:
                f1 = f1[:i] + f1[i + 1 :]  # every position of the group but its own
            row.append(math.fsum(f1) / len(f1) if f1 else math.nan)
        out.append(row)
    return out


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize(
    "settings", SETTINGS, ids=["punctuation", "regex-idf", "two-prompts", "prompt-mask-rescaled", "prompt-idf"]
)
@pytest.mark.parametrize("pseudo", [None, PSEUDO], ids=["own", "pseudo"])
def test_mbr_utilities_are_the_paired_f1_means(settings, pseudo) -> None:
    chosen, utilities = BERTScore(MINILM, **settings).mbr_select(GROUPS, references=pseudo, return_utilities=True)
    expected = _expected(settings, GROUPS, pseudo)
    for ours, theirs in zip(utilities, expected, strict=True):
        assert ours.tolist() == pytest.approx(theirs, abs=1e-6, nan_ok=True)
    assert chosen[:2] == [max(range(len(u)), key=lambda i: (u[i], -i)) for u in expected[:2]]


def test_the_mask_changes_the_utilities() -> None:
    """The mask is applied, not silently dropped: punctuation alone tells hypotheses 1 and 3 apart."""
    plain = BERTScore(MINILM).mbr_select(GROUPS[:1], return_utilities=True)[1][0]
    masked = BERTScore(MINILM, ignore="punctuation").mbr_select(GROUPS[:1], return_utilities=True)[1][0]
    assert plain[1] != pytest.approx(float(masked[1]), abs=1e-6)


def test_the_command_line_takes_the_mask_and_the_prompts(capsys, tmp_path) -> None:
    from tests.cli.test_cli import run_main

    hyps = tmp_path / "hyps.txt"
    hyps.write_text("\n".join(GROUPS[0]) + "\n")
    options = ["--ignore", "punctuation", "--candidate-prompt", "query: ", "--reference-prompt", "passage: "]
    rc, out, _ = run_main(
        capsys, "mbr", "-m", MINILM, "-i", str(hyps), "--group-size", "4", "--format", "json", *options
    )
    assert rc == 0
    settings = {"ignore": "punctuation", "candidate_prompt": "query: ", "reference_prompt": "passage: "}
    _, expected = BERTScore(MINILM, **settings).mbr_select(GROUPS[:1], return_utilities=True)
    assert json.loads(out)["groups"][0]["utilities"] == pytest.approx(expected[0].tolist(), abs=1e-12)


def test_what_mbr_does_not_take_is_still_refused() -> None:
    with pytest.raises(ValueError, match="one layer"):
        BERTScore(MINILM, ignore="punctuation", all_layers=True).mbr_select(GROUPS[:1])
    with pytest.raises(ValueError, match="references has 1 groups but groups has 3"):
        BERTScore(MINILM, candidate_prompt="query: ").mbr_select(GROUPS, references=PSEUDO[:1])
