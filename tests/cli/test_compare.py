"""Several systems in one run: `score_systems`, `bertscore-tm compare` and `score --confidence`, on the WMT
sample pairs with the packaged MiniLM.

Each system's scores must equal scoring that system alone (with IDF too: one IDF over the references, not
one per system), the references must be embedded once for all systems, and the intervals and p-values must
be those of `bertscore_tm.comparison.significance` on the per-pair scores. Variants run in-process through
`cli.main(argv)`; one run goes through a real process, as a user runs it.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import bertscore_tm
from bertscore_tm import BERTScore, cli, score
from bertscore_tm.comparison.significance import bootstrap_interval, paired_test
from bertscore_tm.comparison.systems import score_systems
from conftest import MINILM, WMT

TOL = 1e-6  # per-pair scores of texts embedded in differently composed batches agree to float noise


@pytest.fixture(scope="module")
def systems(wmt: dict[str, list[str]]) -> dict[str, list[str]]:
    """Three systems for the WMT references: the hypotheses, the second reference translation, and a mix
    that shares its first five lines with the second and its last five with the first."""
    mixed = wmt["refs2"][:5] + wmt["hyps"][5:]
    return {"hyps": wmt["hyps"], "refs2": wmt["refs2"], "mixed": mixed}


@pytest.fixture(scope="module")
def files(systems: dict[str, list[str]], tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    folder = tmp_path_factory.mktemp("systems")
    (folder / "mixed.txt").write_text("\n".join(systems["mixed"]) + "\n", encoding="utf-8")
    return {
        "hyps": str(WMT / "hyps.txt"),
        "refs2": str(WMT / "refs2.txt"),
        "mixed": str(folder / "mixed.txt"),
        "refs": str(WMT / "refs.txt"),
    }


def alone(cands: list[str], refs: list, idf: bool = False) -> torch.Tensor:
    """[3, N] P, R, F1 of one system scored on its own, as `score` does (computed once per input)."""
    key = (tuple(cands), tuple(tuple(r) if isinstance(r, list) else r for r in refs), idf)
    if key not in _ALONE:
        _ALONE[key] = torch.stack(score(cands, refs, model_type=MINILM, lang="en", idf=idf)).double()
    return _ALONE[key]


_ALONE: dict[tuple, torch.Tensor] = {}


def distinct_texts(metric: BERTScore, *files: list[str]) -> int:
    """How many distinct texts the metric sees in these lines (as token ids: MiniLM is uncased)."""
    return len({tuple(metric.token_ids(line).tolist()) for lines in files for line in lines})


def run_main(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = cli.main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


# -- score_systems -------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("idf", [False, True])
def test_each_system_scores_as_if_scored_alone_and_the_references_are_embedded_once(systems, wmt, idf: bool) -> None:
    metric = BERTScore(MINILM, idf=idf)
    scores = score_systems(metric, list(systems.values()), wmt["refs"])
    assert scores["f1"].shape == (3, 10)
    for i, cands in enumerate(systems.values()):
        expected = alone(cands, wmt["refs"], idf=idf)
        got = torch.stack([scores[k][i] for k in ("precision", "recall", "f1")]).double()
        assert torch.allclose(got, expected, atol=TOL, rtol=0), (i, (got - expected).abs().max())
    # the references, the hypotheses and the second references; the mixed system adds no text of its own
    assert metric.embedder.rows_embedded == distinct_texts(metric, wmt["refs"], wmt["hyps"], wmt["refs2"]) == 27
    alone_rows = sum(distinct_texts(metric, wmt["refs"], cands) for cands in systems.values())
    assert alone_rows == 55  # what scoring the three systems one by one embeds


@pytest.mark.slow
def test_counting_the_references_once_per_system_would_change_idf_scores(systems, wmt) -> None:
    """What score_systems avoids: three plain updates count the references three times, and
    ln((3M + 1) / (3 df + 1)) is not ln((M + 1) / (df + 1)), so the scores move well beyond float noise."""
    metric = BERTScore(MINILM, idf=True)
    for cands in systems.values():
        metric.update(cands, wmt["refs"])
    naive = metric.compute()["f1"][:10].double()
    assert (naive - alone(systems["hyps"], wmt["refs"], idf=True)[2]).abs().max() > 1e-3


@pytest.mark.slow
def test_score_systems_with_several_references_per_line(systems, wmt) -> None:
    targets = [[a, b] for a, b in zip(wmt["refs"], wmt["refs2"], strict=True)]
    scores = score_systems(BERTScore(MINILM, idf=True), [systems["hyps"], systems["mixed"]], targets)
    assert torch.allclose(scores["f1"][1].double(), alone(systems["mixed"], targets, idf=True)[2], atol=TOL, rtol=0)


def test_score_systems_refuses_what_it_cannot_do(systems, wmt) -> None:
    metric = BERTScore(MINILM)
    with pytest.raises(
        ValueError, match=r"systems\[1\] and target must have the same length: got 9 predictions and 10"
    ):
        score_systems(metric, [systems["hyps"], systems["refs2"][:9]], wmt["refs"])
    metric.update(systems["hyps"][:1], wmt["refs"][:1])
    with pytest.raises(ValueError, match=r"fresh metric.*metric.reset"):
        score_systems(metric, [systems["hyps"]], wmt["refs"])
    with pytest.raises(ValueError, match="reduction='none' and output=None"):
        score_systems(BERTScore(MINILM, reduction="mean"), [systems["hyps"]], wmt["refs"])


# -- compare -------------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("idf", [False, True])
def test_compare_json_equals_score_per_system_and_the_significance_functions(capsys, files, systems, wmt, idf) -> None:
    names = [files["hyps"], files["refs2"], files["mixed"]]
    extra = ["--idf"] if idf else []
    rc, out, err = run_main(
        capsys, "compare", "-r", files["refs"], "-c", *names, "-m", MINILM, "--format", "json", *extra
    )
    assert rc == 0, err
    doc = json.loads(out)
    assert list(doc) == ["hash", "model_commit", "method", "bootstrap", "seed", "confidence", "systems"]
    assert doc["model_commit"] is None  # the packaged MiniLM records no Hub commit
    (_, code) = score(wmt["hyps"], wmt["refs"], model_type=MINILM, idf=idf, return_hash=True, use_fast_tokenizer=True)
    settings = (doc["hash"], doc["method"], doc["bootstrap"], doc["seed"], doc["confidence"])
    assert settings == (code, "bootstrap", 1000, 0, 0.95)
    assert [s["name"] for s in doc["systems"]] == names
    per_pair = torch.stack([alone(cands, wmt["refs"], idf=idf) for cands in systems.values()])  # [3, 3, 10]
    for row, expected in zip(doc["systems"], per_pair, strict=True):
        assert list(row) == ["name", "precision", "recall", "f1", "f1_ci", "p_value", "delta_f1"]
        assert torch.allclose(
            torch.tensor([row["precision"], row["recall"], row["f1"]], dtype=torch.float64),
            expected.mean(dim=1),
            atol=TOL,
            rtol=0,
        )
    baseline, *others = doc["systems"]
    assert baseline["p_value"] is None and baseline["delta_f1"] is None
    f1 = per_pair[:, 2]
    intervals = bootstrap_interval(f1, 0.95, 1000, 0)
    test = paired_test(f1[0], f1[1:], "bootstrap", 1000, 0, 0.95)
    for i, row in enumerate(doc["systems"]):
        assert row["f1_ci"][0] <= row["f1"] <= row["f1_ci"][1]
        assert row["f1_ci"] == pytest.approx([float(intervals.low[i]), float(intervals.high[i])], abs=TOL)
    for i, row in enumerate(others):
        assert row["delta_f1"] == pytest.approx(row["f1"] - baseline["f1"], abs=1e-12)
        assert row["p_value"] == float(test.p_value[i])  # same resamples: same count (no statistic near a tie)


def test_compare_embeds_the_references_once(capsys, monkeypatch, files, wmt) -> None:
    made = []
    make = cli.metrics.make_metric
    monkeypatch.setattr(cli.metrics, "make_metric", lambda **kw: made.append(make(**kw)) or made[-1])
    names = [files["hyps"], files["refs2"], files["mixed"]]
    rc, _, err = run_main(capsys, "compare", "-r", files["refs"], "-c", *names, "-m", MINILM)
    assert rc == 0, err
    assert len(made) == 1  # one metric, one compute
    assert made[0].embedder.rows_embedded == distinct_texts(made[0], wmt["refs"], wmt["hyps"], wmt["refs2"]) == 27


@pytest.mark.slow
def test_compare_text_in_a_real_process(files) -> None:
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    package_root = str(Path(bertscore_tm.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH", "")) if p)
    args = [
        "compare",
        "-r",
        files["refs"],
        "-c",
        files["hyps"],
        files["refs2"],
        files["mixed"],
        "-m",
        MINILM,
        "--method",
        "randomization",
        "--confidence",
        "0.9",
        "--bootstrap",
        "500",
        "--seed",
        "3",
    ]
    command = [sys.executable, "-m", "bertscore_tm", *args]
    proc = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    lines = proc.stdout.strip("\n").split("\n")
    assert lines[0].startswith(f"{MINILM}_L5_no-idf_version=")  # the hash code on top
    assert "approximate randomization (Riezler and Maxwell 2005), 500 shuffles" in lines[1] and "seed 3" in lines[1]
    assert lines[2].split() == ["system", "P", "R", "F1", "F1", "90%", "CI", "delta", "F1", "p-value"]
    rows = [line.split() for line in lines[3:]]
    assert [r[0] for r in rows] == [files["hyps"], files["refs2"], files["mixed"]] and rows[0][-1] == "baseline"

    buffer = io.StringIO()  # the same run in JSON, in-process: the table shows its numbers
    with contextlib.redirect_stdout(buffer):
        assert cli.main([*args, "--format", "json"]) == 0
    doc = json.loads(buffer.getvalue())
    for row, cells in zip(doc["systems"], rows, strict=True):
        assert cells[1:4] == [f"{row[k]:.6f}" for k in ("precision", "recall", "f1")]
        assert " ".join(cells[4:6]) == f"[{row['f1_ci'][0]:.6f}, {row['f1_ci'][1]:.6f}]"
        if row["p_value"] is not None:
            assert cells[6] == f"{row['delta_f1']:+.6f}" and cells[7] == f"{row['p_value']:.4f}"
            assert (cells[-1] == "*") == (row["p_value"] < 0.05)


@pytest.mark.slow
def test_compare_same_seed_same_output(capsys, files) -> None:
    """(Another seed gives other resamples: test_significance; the seed reaching them: the tests around.)"""
    args = ["compare", "-r", files["refs"], "-c", files["hyps"], files["refs2"], "-m", MINILM]
    args += ["--method", "randomization"]
    first, again = (run_main(capsys, *args, *seed)[1] for seed in ([], ["--seed", "0"]))
    assert first == again and "seed 0" in first


def test_identical_systems_compare_with_p_value_one(capsys, files) -> None:
    args = ["compare", "-r", files["refs"], "-c", files["hyps"], files["hyps"], "-m", MINILM, "--format", "json"]
    rc, out, _ = run_main(capsys, *args)
    assert rc == 0
    same = json.loads(out)["systems"][1]
    assert (same["p_value"], same["delta_f1"]) == (1.0, 0.0)


def test_compare_help_does_not_import_torch() -> None:
    code = (
        "import sys\nfrom bertscore_tm.cli import main\n"
        "try:\n    main(['compare', '--help'])\nexcept SystemExit:\n    pass\n"
        "print('torch' in sys.modules)"
    )
    env = dict(os.environ, PYTHONPATH=str(Path(bertscore_tm.__file__).resolve().parents[1]))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert "--bootstrap N" in proc.stdout and proc.stdout.strip().endswith("False")


# -- score --confidence --------------------------------------------------------------------------------------


@pytest.mark.slow
def test_score_confidence_adds_the_f1_interval_in_every_format(capsys, files, wmt) -> None:
    f1 = alone(wmt["hyps"], wmt["refs"])[2]
    base = ["score", "-c", files["hyps"], "-r", files["refs"], "-m", MINILM]
    interval = bootstrap_interval(f1, 0.9, 2000, 7)
    expected = [float(interval.low), float(interval.high)]

    interval_args = ["--confidence", "0.9", "--bootstrap", "2000", "--seed", "7"]
    rc, out, _ = run_main(capsys, *base, *interval_args)
    assert rc == 0
    summary, ci = out.strip().split(" F1 90% CI: ")
    assert summary.endswith(f"F1: {float(f1.mean()):.6f}")
    assert ci == f"[{expected[0]:.6f}, {expected[1]:.6f}]"

    rc, out, _ = run_main(capsys, *base, *interval_args, "--format", "json")
    doc = json.loads(out)
    assert doc["f1_ci"] == pytest.approx(expected, abs=TOL)
    assert (doc["confidence"], doc["bootstrap"], doc["seed"]) == (0.9, 2000, 7)

    rc, out, _ = run_main(capsys, *base, *interval_args, "--format", "tsv")
    header, row = out.strip("\n").split("\n")
    assert header.split("\t") == ["hash", "P", "R", "F1", "F1_low", "F1_high"]
    assert [float(x) for x in row.split("\t")[4:]] == pytest.approx(expected, abs=TOL)


# -- bad input: one line, exit 2, before any model is looked up ----------------------------------------------

NO_MODEL = ["-m", "no-such-org/no-such-model", "-l", "3"]  # reached only if the check came too late
TWO = ["compare", "-r", "{refs}", "-c", "{hyps}", "{refs2}"]  # two systems, fine so far
SCORE = ["score", "-c", "{hyps}", "-r", "{refs}"]
ERRORS = [
    (["compare", "-r", "{refs}", "-c", "{hyps}"], ["at least two systems", "got 1"]),
    (
        ["compare", "-r", "{refs}", "-c", "{hyps}", "{short}"],
        ["system file", "short.txt has 3 lines", "baseline", "has 10 lines"],
    ),
    (
        ["compare", "-r", "{short}", "-c", "{hyps}", "{refs2}"],
        ["reference file", "short.txt has 3 lines", "have 10 lines"],
    ),
    ([*TWO, "--bootstrap", "0"], ["--bootstrap must be at least 1", "got 0"]),
    ([*TWO, "--bootstrap", "many"], ["--bootstrap must be a whole number", "got many"]),
    ([*TWO, "--confidence", "1"], ["--confidence must be between 0 and 1", "got 1"]),
    ([*TWO, "--confidence", "0"], ["--confidence must be between 0 and 1", "got 0"]),
    ([*TWO, "--confidence", "95"], ["between 0 and 1", "a fraction: 0.95, not 95"]),
    ([*TWO, "--confidence", "high"], ["--confidence must be a number", "got high"]),
    ([*TWO, "--seed", "1.5"], ["--seed must be a whole number", "got 1.5"]),
    ([*TWO, "--seed", "-2"], ["--seed must be at least 0", "got -2"]),
    (["compare", "-r", "{refs}", "-c", "{hyps}", "{missing}"], ["system file", "missing.txt", "does not exist"]),
    ([*SCORE, "--seed", "3"], ["--seed only matters with --confidence"]),
    ([*SCORE, "--confidence", "2"], ["--confidence must be between 0 and 1"]),
    ([*SCORE, "--confidence", "0.9", "--bootstrap", "0.5"], ["--bootstrap must be a whole number"]),
    # more resamples than memory allows: refused before the model runs, not after it
    ([*TWO, "--bootstrap", "100000000000"], ["--bootstrap must be at least 1 and at most 1,000,000"]),
    ([*SCORE, "--confidence", "0.9", "--bootstrap", "1000001"], ["at most 1,000,000", "got 1000001"]),
    # one line per system: every resample is that line, so any difference would look significant
    (["compare", "-r", "{one}", "-c", "{one}", "{one}"], ["the system files have 1 line", "at least 2 lines"]),
]


@pytest.mark.parametrize(("args", "words"), ERRORS, ids=[" ".join(a[:1] + a[-2:]) for a, _ in ERRORS])
def test_bad_input_is_one_line_exit_2_before_the_model(capsys, files, tmp_path: Path, args, words) -> None:
    short = tmp_path / "short.txt"
    short.write_text("one\ntwo\nthree\n", encoding="utf-8")
    one = tmp_path / "one.txt"
    one.write_text("A single line.\n", encoding="utf-8")
    paths = dict(files, short=str(short), one=str(one), missing=str(tmp_path / "missing.txt"))
    rc, out, err = run_main(capsys, *(a.format(**paths) for a in args), *NO_MODEL)
    assert rc == 2 and out == ""
    lines = err.strip().split("\n")
    assert len(lines) == 1 and lines[0].startswith("bertscore-tm: error: "), err
    for word in words:
        assert word in lines[0], (word, lines[0])


def test_compare_on_few_lines_warns_naming_the_count(capsys, tmp_path: Path) -> None:
    """Below 10 lines the p-value is coarse: the results come with a warning that says how many lines there were."""
    path = tmp_path / "three.txt"
    path.write_text("The cat sat.\nIt rains.\nWe left early.\n", encoding="utf-8")
    rc, out, err = run_main(capsys, "compare", "-r", str(path), "-c", str(path), str(path), "-m", MINILM)
    assert rc == 0 and "p-value" in out
    assert "bertscore-tm: warning: a paired test on only 3 pair(s)" in err


@pytest.mark.slow
def test_repeated_c_and_r_collect_every_file(capsys, files) -> None:
    """`-c a -c b` is `-c a b` and `-r x -r y` is `-r x y`: no file is silently dropped."""
    one = ["compare", "-r", files["refs"], files["refs2"], "-c", files["hyps"], files["mixed"]]
    repeated = ["compare", "-r", files["refs"], "-r", files["refs2"], "-c", files["hyps"], "-c", files["mixed"]]
    outputs = [run_main(capsys, *args, "-m", MINILM, "--format", "json")[1] for args in (one, repeated)]
    assert [s["name"] for s in json.loads(outputs[0])["systems"]] == [files["hyps"], files["mixed"]]
    assert outputs[0] == outputs[1]
