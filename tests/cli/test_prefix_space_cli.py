"""`--no-prefix-space` on the command line is the library's `prefix_space=False` (code-bert-score's tokenisation):
the same scores, and the hash code saying so, on a byte-level BPE model; nothing changes on a WordPiece one."""

from __future__ import annotations

import pytest

from bertscore_tm import bert_score
from bertscore_tm.cli import main
from tests.code_models import build_code_roberta, stdlib_functions


@pytest.fixture(scope="module")
def pairs(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str, list[str], list[str]]:
    functions = [" ".join(code.split()) for _, code in stdlib_functions()[:6]]  # one line each
    cands, refs = functions[0::2], functions[1::2]
    folder = tmp_path_factory.mktemp("lines")
    (folder / "c.txt").write_text("\n".join(cands) + "\n", encoding="utf-8")
    (folder / "r.txt").write_text("\n".join(refs) + "\n", encoding="utf-8")
    return str(folder / "c.txt"), str(folder / "r.txt"), cands, refs


def test_no_prefix_space_scores_as_the_library(capsys, tmp_path_factory, pairs) -> None:
    model = str(build_code_roberta(tmp_path_factory.mktemp("neulab"), prefix_space=False))
    c, r, cands, refs = pairs
    assert main(["score", "-c", c, "-r", r, "-m", model, "-l", "3", "-s", "--no-prefix-space"]) == 0
    lines = capsys.readouterr().out.splitlines()
    expected = bert_score(cands, refs, model, num_layers=3, prefix_space=False, return_hash=True)
    assert lines[0].split(" P: ")[0] == expected["hash"] and expected["hash"].endswith("_no-prefix-space")
    f1 = [float(line.split("\t")[2]) for line in lines[1:]]
    assert f1 == pytest.approx(expected["f1"].tolist(), abs=1e-6)
    spaced = bert_score(cands, refs, model, num_layers=3)["f1"]
    assert max(abs(a - b) for a, b in zip(f1, spaced.tolist(), strict=True)) > 1e-4


def test_a_wordpiece_model_is_unchanged(capsys, pairs, minilm_path) -> None:
    c, r, _, _ = pairs
    assert main(["score", "-c", c, "-r", r, "-m", minilm_path, "-l", "5", "-s"]) == 0
    plain = capsys.readouterr().out
    assert main(["score", "-c", c, "-r", r, "-m", minilm_path, "-l", "5", "-s", "--no-prefix-space"]) == 0
    assert capsys.readouterr().out == plain
