"""``bertscore-tm explain`` (issue 24), ``score --format json``'s best reference, ``compare --html`` and
``show``'s special tokens: the K worst pairs are the K of lowest F1, the JSON round trip, IDF over all the
files' references, one pair given as texts, the HTML page, colour only when asked, and one-line errors."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from bertscore_tm import BERTScore
from bertscore_tm.cli import build_parser, outputs
from tests.cli.test_cli import api, one_line_error, run_main
from tests.conftest import MINILM, WMT

pytestmark = pytest.mark.usefixtures("one_thread")
TOL = 1e-6
HYPS, REFS, REFS2 = (str(WMT / f"{name}.txt") for name in ("hyps", "refs", "refs2"))
TOKEN_KEYS = {"token", "start", "end", "special", "match", "similarity", "weight", "contribution"}


def explain_json(capsys, *args: str) -> dict:
    rc, out, err = run_main(capsys, "explain", "-m", MINILM, "--format", "json", *args)
    assert rc == 0, err
    return json.loads(out)


@pytest.mark.slow
def test_worst_k_are_the_lowest_f1_pairs_with_their_tokens(capsys, wmt):
    """Against `score --format json -s` (which now names each pair's best reference) on the same files."""
    rc, out, _ = run_main(capsys, "score", "-c", HYPS, "-r", REFS, REFS2, "-m", MINILM, "--format", "json", "-s")
    assert rc == 0
    scored = json.loads(out)
    segments = scored["segments"]
    doc = explain_json(capsys, "-c", HYPS, "-r", REFS, REFS2, "--worst", "3")
    worst = sorted(range(len(segments)), key=lambda i: (segments[i]["f1"], i))[:3]
    assert doc["hash"] == scored["hash"] and [p["line"] for p in doc["pairs"]] == [i + 1 for i in worst]
    for pair in doc["pairs"]:
        segment = segments[pair["line"] - 1]
        assert [pair[k] for k in ("precision", "recall", "f1")] == pytest.approx(
            [segment[k] for k in ("precision", "recall", "f1")], abs=TOL
        )
        f1s = [r["f1"] for r in pair["references"]]
        assert pair["best_reference"] == segment["best_reference"] == f1s.index(max(f1s)) and len(f1s) == 2
        assert all(set(t) == TOKEN_KEYS for t in pair["candidate_tokens"] + pair["reference_tokens"])
        chosen = pair["references"][pair["best_reference"]]
        assert math.fsum(t["contribution"] for t in pair["candidate_tokens"]) == pytest.approx(
            chosen["precision"], abs=TOL
        )
        assert math.fsum(t["contribution"] for t in pair["reference_tokens"]) == pytest.approx(
            chosen["recall"], abs=TOL
        )
        tokens = pair["candidate_tokens"]
        assert tokens[0]["special"] and tokens[0]["start"] is None and tokens[0]["weight"] == 0
        for t in tokens[1:-1]:
            assert wmt["hyps"][pair["line"] - 1][t["start"] : t["end"]].lower() == t["token"].removeprefix("##")
        assert all(0 <= t["match"] < len(pair["reference_tokens"]) for t in tokens)


@pytest.mark.slow
def test_idf_counts_over_every_reference_of_the_files(capsys, wmt):
    doc = explain_json(capsys, "-c", HYPS, "-r", REFS, "--idf", "--worst", "20")
    per, _, _ = api(wmt["hyps"], wmt["refs"], idf=True)
    assert len(doc["pairs"]) == 10  # more than the pairs: every pair, worst first
    assert [p["f1"] for p in doc["pairs"]] == sorted(p["f1"] for p in doc["pairs"])
    for pair in doc["pairs"]:
        assert pair["f1"] == pytest.approx(float(per[pair["line"] - 1, 2]), abs=TOL)
        assert pair["weights"] == "IDF over the metric's 10 references"
    assert len(set(per[:, 2].tolist())) == 10  # (ties would make the order ambiguous)


def test_one_pair_as_texts_with_a_page(capsys, tmp_path: Path):
    page = tmp_path / "why.html"
    cand, refs = 'A <b>cat</b> sat "here".', ["The cat sat on the mat.", "A dog slept."]
    rc, out, err = run_main(
        capsys, "explain", "--text", "-c", cand, "-r", *refs, "-m", MINILM, "--html", str(page), "--threshold", "0.7"
    )
    assert rc == 0, err
    assert out.startswith(MINILM) and "\x1b[" not in out and f"Saved the explanation page to {page}" in out
    assert "reference 0: P" in out and "(best: explained below)" in out
    text = page.read_text(encoding="utf-8")
    assert "&lt;b&gt;cat&lt;/b&gt;" in text and "<b>cat</b>" not in text and "&quot;here&quot;" in text
    assert MINILM in text and text.count("<script>") == 1
    coloured = run_main(capsys, "explain", "--text", "-c", "Angry bananas.", "-r", "A cat.", "-m", MINILM, "--color")
    assert "\x1b[31;1m" in coloured[1]


def test_a_blank_line_is_explained_not_a_crash(capsys, tmp_path: Path):
    cands, refs = tmp_path / "c.txt", tmp_path / "r.txt"
    cands.write_text("A cat sat.\n   \n", encoding="utf-8")
    refs.write_text("The cat sat.\nA dog.\n", encoding="utf-8")
    doc = explain_json(capsys, "-c", str(cands), "-r", str(refs), "--worst", "1")
    pair = doc["pairs"][0]
    assert pair["line"] == 2 and pair["blank"] and (pair["precision"], pair["recall"], pair["f1"]) == (0, 0, 0)
    assert "candidate is blank" in pair["notes"][0]


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["-c", HYPS, "-r", REFS, "--worst", "0"], ["--worst must be at least 1"]),
        (["--text", "-c", "a", "-r", "b", "--worst", "2"], ["--worst", "--text"]),
        (["-c", HYPS, "-r", REFS, "--idf-references", REFS], ["--idf-references needs --idf and --text"]),
        (["-c", HYPS, "-r", "no-such-file.txt"], ["reference file no-such-file.txt does not exist"]),
        (["-c", HYPS, "-r", REFS, "--html", HYPS], ["it is the input file"]),
    ],
)
def test_bad_input_is_one_line(capsys, args, words):
    line = one_line_error(capsys, "explain", "-m", MINILM, *args)
    assert all(w in line for w in words), line


def test_no_output_overwrites_the_context_or_the_idf_references(capsys, tmp_path: Path):
    """-o and --html were checked against -c and -r only: the context file and the IDF references were
    overwritten, exit code 0."""
    context = tmp_path / "context.txt"
    kept = "".join(f"context {i}\n" for i in range(10))
    for args in (
        ["-c", HYPS, "-r", REFS, "--context", str(context), "--worst", "1", "-o", str(context)],
        ["-c", HYPS, "-r", REFS, "--context", str(context), "--worst", "1", "--html", str(context)],
        ["--text", "-c", "The cat", "-r", "A cat", "--idf", "--idf-references", str(context), "-o", str(context)],
    ):
        context.write_text(kept, encoding="utf-8")
        line = one_line_error(capsys, "explain", "-m", MINILM, *args)
        flag = "--idf-references" if "--text" in args else "--context"
        assert f"cannot write {context}: it is the input file {context} ({flag})" in line, line
        assert context.read_text(encoding="utf-8") == kept


def test_texts_are_no_input_files_but_idf_references_are():
    """With --text (and in show) -c, -r and --context hold texts, so an output may be spelled as one of them;
    --idf-references and --baseline-path still name files."""
    parse = build_parser().parse_args
    args = parse(["explain", "--text", "-c", "a.txt", "-r", "b.txt", "--context", "c.txt", "--idf"])
    assert outputs.read_files(args) == []
    args = parse(["explain", "--text", "-c", "a", "-r", "b", "--idf", "--idf-references", "i.txt", "-o", "a"])
    assert outputs.read_files(args) == [("--idf-references", "i.txt")]
    args = parse(["explain", "-c", "a.txt", "-r", "b.txt", "b2.txt", "--context", "c.txt"])
    assert outputs.read_files(args) == [("-c", "a.txt"), ("-r", "b.txt"), ("-r", "b2.txt"), ("--context", "c.txt")]
    args = parse(["show", "-c", "a", "-r", "b", "-f", "x.png", "--idf-references", "i.txt", "--baseline-path", "l.tsv"])
    assert outputs.read_files(args) == [("--idf-references", "i.txt"), ("--baseline-path", "l.tsv")]


@pytest.mark.slow
def test_compare_html_page(capsys, tmp_path: Path):
    page = tmp_path / "compare.html"
    rc, _, err = run_main(capsys, "compare", "-c", HYPS, REFS2, "-r", REFS, "-m", MINILM, "--html", str(page))
    assert rc == 0, err
    text = page.read_text(encoding="utf-8")
    assert "<svg" in text and "F1 per segment" in text and "differ most" in text
    assert text.count('class="pair"') == 10  # 5 segments, each side explained
    assert "http://" not in text and "https://" not in text and MINILM in text


def test_show_draws_the_special_tokens_and_idf_weights(tmp_path: Path):
    pytest.importorskip("matplotlib")
    from bertscore_tm.reports.similarity_plot import plot_similarity

    metric = BERTScore(MINILM, idf=True)
    shown = plot_similarity(metric, "The cat sat.", "A cat sat down.", tmp_path / "s.png", idf_references=["A cat."])
    assert shown.cand_tokens[0] == "[CLS]" and shown.cand_tokens[-1] == "[SEP]" and shown.similarity.shape == (6, 7)
    assert shown.cand_weights[0] == 0 and shown.cand_weights[2] == 0  # [CLS]; "cat", in every IDF reference
    assert shown.cand_weights[1] == pytest.approx(math.log(2))  # "the": in none of them
    why = metric.explain("The cat sat.", "A cat sat down.", idf_references=["A cat."])
    assert shown.f1 == why.f1
