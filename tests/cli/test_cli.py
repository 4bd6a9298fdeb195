"""The `bertscore-tm` command line, run as a user runs it, checked against the Python API.

Each subcommand runs at least once in a subprocess (`python -m bertscore_tm ...`, offline); the variants and
error cases run in-process through `cli.main(argv)`, which is the same code minus the interpreter start-up,
to keep the suite quick on two cores. Printed scores have six decimals, so they must equal the API's to 1e-6.
"""

from __future__ import annotations

import argparse
import csv
import io
import itertools
import json
import os
import re
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import bertscore_tm
from bertscore_tm import BERTScore, errors, score
from bertscore_tm.cli import build_parser, main, outputs
from bertscore_tm.cli.errors import flag
from bertscore_tm.tuning.baseline_building import sample_pairs
from tests.conftest import MINILM, WMT

SUMMARY = re.compile(r"^(?P<hash>\S+) P: (?P<p>-?\d+\.\d{6}) R: (?P<r>-?\d+\.\d{6}) F1: (?P<f>-?\d+\.\d{6})$")
TOL = 1e-6

#: A small corpus written for these tests (plus a duplicate and a blank line, which the sampler drops).
CORPUS = [
    "The morning train was late again, so we walked to the office.",
    "She planted tomatoes along the south wall of the garden.",
    "Our neighbour repairs old bicycles in his garage on weekends.",
    "The library will close early on Friday for staff training.",
    "He forgot his umbrella and arrived soaked to the skin.",
    "A small boat drifted slowly past the lighthouse.",
    "The committee approved the budget after a long debate.",
    "Children were building a snowman in the park.",
    "The soup needs more salt and a little pepper.",
    "Heavy rain flooded several roads near the river.",
    "My sister is learning to play the cello.",
    "The museum opened a new exhibition of ancient coins.",
    "Please send me the report before the meeting tomorrow.",
    "The old bridge was closed for repairs last summer.",
    "A fox crossed the road just before dawn.",
    "They painted the kitchen a pale shade of yellow.",
    "The price of coffee has risen sharply this year.",
    "We watched the stars from the roof of the cabin.",
    "The new software update fixed the printing problem.",
    "Her grandfather told stories about the war.",
    "The bakery on the corner sells the best bread in town.",
    "Traffic was light because of the public holiday.",
    "The students presented their project to the whole school.",
    "A strong wind knocked over the fence during the night.",
    "He finally finished reading the long novel.",
    "The hotel room had a view of the harbour.",
    "Farmers are worried about the dry weather.",
    "The orchestra played a piece by a young composer.",
    "I left my keys on the table by the door.",
    "The team celebrated their victory with a dinner.",
    "Children were building a snowman in the park.",
    "",
]
BASELINE_PAIRS, BASELINE_SEED = 12, 3


def _env() -> dict[str, str]:
    """The environment a user's shell would have, offline, with this checkout's package importable."""
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    package_root = str(Path(bertscore_tm.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH", "")) if p)
    return env


def run_cli(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "bertscore_tm", *args], capture_output=True, text=True, env=_env(), timeout=300
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


def run_main(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    """The one `bertscore-tm: error: ...` line a user mistake gives (exit code 2, nothing on stdout)."""
    rc, out, err = run_main(capsys, *args)
    assert rc == 2, (rc, out, err)
    assert out == ""
    lines = err.strip().split("\n")
    assert len(lines) == 1 and lines[0].startswith("bertscore-tm: error: "), err
    return lines[0]


def feed_stdin(monkeypatch: pytest.MonkeyPatch, data: bytes) -> None:
    """Standard input as a pipe gives it: bytes, whatever the locale."""
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data), encoding="latin-1"))


@pytest.fixture()
def no_model(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if the command builds a metric (so loads a model): its checks must come first."""

    def refuse(*args: object, **kwargs: object) -> None:
        pytest.fail("a metric was built (a model loaded) before the mistake was reported")

    monkeypatch.setattr(bertscore_tm.metric.bertscore.BERTScore, "from_config", classmethod(refuse))


def parse_text(out: str) -> tuple[str, list[float], list[list[float]]]:
    """(hash, [P, R, F1] means, per-pair rows) from the text format."""
    lines = out.strip("\n").split("\n")
    m = SUMMARY.match(lines[0])
    assert m, lines[0]
    rows = [[float(x) for x in line.split("\t")] for line in lines[1:]]
    assert all(len(row) == 3 for row in rows), lines[1:]
    return m["hash"], [float(m["p"]), float(m["r"]), float(m["f"])], rows


def assert_close(printed: list[float] | list[list[float]], expected: torch.Tensor) -> None:
    got = torch.tensor(printed, dtype=torch.float64)
    assert got.shape == expected.shape
    assert torch.allclose(got, expected.to(torch.float64), atol=TOL, rtol=0), (got, expected)


def api(cands: list[str], refs: list, **kwargs) -> tuple[torch.Tensor, torch.Tensor, str]:
    """The API's per-pair [N, 3] scores, their means [3] and the hash code."""
    (p, r, f), code = score(
        cands, refs, model_type=MINILM, lang="en", return_hash=True, use_fast_tokenizer=True, **kwargs
    )
    per = torch.stack((p, r, f), dim=1).to(torch.float64)
    return per, per.mean(dim=0), code


@pytest.fixture(scope="module")
def files(wmt: dict[str, list[str]]) -> dict[str, str]:
    return {name: str(WMT / f"{name}.txt") for name in ("hyps", "refs", "refs2")}


@pytest.fixture(scope="module")
def corpus_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("corpus") / "corpus.txt"
    path.write_text("\n".join(CORPUS) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def baseline_file(corpus_file: Path) -> Path:
    """A baseline the `baseline` command computes on the small corpus (with the progress bar forced on)."""
    out = corpus_file.parent / "baseline.tsv"
    proc = run_cli(
        "baseline",
        "--corpus",
        str(corpus_file),
        "-m",
        MINILM,
        "--lang",
        "en",
        "--pairs",
        str(BASELINE_PAIRS),
        "--seed",
        str(BASELINE_SEED),
        "-o",
        str(out),
        "--progress",
    )
    assert "BERTScore: embedding" in proc.stderr  # the tqdm bar
    assert f"{BASELINE_PAIRS} pairs of 30 distinct lines, seed {BASELINE_SEED}" in proc.stdout
    return out


# -- score ---------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_score_one_reference_with_segments(files: dict[str, str], wmt: dict[str, list[str]]) -> None:
    proc = run_cli("score", "-c", files["hyps"], "-r", files["refs"], "-m", MINILM, "-s")
    code, means, rows = parse_text(proc.stdout)
    per, mean, expected_code = api(wmt["hyps"], wmt["refs"])
    assert code == expected_code
    assert_close(means, mean)
    assert_close(rows, per)


@pytest.mark.slow
def test_score_two_references_json(files: dict[str, str], wmt: dict[str, list[str]]) -> None:
    proc = run_cli(
        "score", "-c", files["hyps"], "-r", files["refs"], files["refs2"], "-m", MINILM, "--format", "json", "-s"
    )
    doc = json.loads(proc.stdout)
    per, mean, expected_code = api(wmt["hyps"], [list(g) for g in zip(wmt["refs"], wmt["refs2"], strict=True)])
    assert doc["hash"] == expected_code
    assert doc["pairs"] == 10 and doc["references_per_candidate"] == 2
    assert_close([doc["precision"], doc["recall"], doc["f1"]], mean)
    assert_close([[s["precision"], s["recall"], s["f1"]] for s in doc["segments"]], per)
    # several references: each of P, R, F is the best over the references, so none is below one reference's
    one_ref, _, _ = api(wmt["hyps"], wmt["refs"])
    assert bool((per >= one_ref - 1e-7).all())


@pytest.mark.slow
def test_score_two_references_text(capsys, files: dict[str, str], wmt: dict[str, list[str]]) -> None:
    rc, out, _ = run_main(capsys, "score", "-c", files["hyps"], "-r", files["refs"], files["refs2"], "-m", MINILM)
    assert rc == 0
    _, means, rows = parse_text(out)
    assert rows == []  # no -s: the summary only
    _, mean, _ = api(wmt["hyps"], [list(g) for g in zip(wmt["refs"], wmt["refs2"], strict=True)])
    assert_close(means, mean)


@pytest.mark.slow
def test_score_idf(capsys, files: dict[str, str], wmt: dict[str, list[str]]) -> None:
    rc, out, _ = run_main(capsys, "score", "-c", files["hyps"], "-r", files["refs"], "-m", MINILM, "--idf", "-s")
    assert rc == 0
    code, means, rows = parse_text(out)
    per, mean, expected_code = api(wmt["hyps"], wmt["refs"], idf=True)
    assert "_idf_" in code and code == expected_code
    assert_close(means, mean)
    assert_close(rows, per)


@pytest.mark.slow
def test_score_tsv(capsys, files: dict[str, str], wmt: dict[str, list[str]]) -> None:
    per, mean, expected_code = api(wmt["hyps"], wmt["refs"])
    rc, out, _ = run_main(capsys, "score", "-c", files["hyps"], "-r", files["refs"], "-m", MINILM, "--format", "tsv")
    assert rc == 0
    header, row = out.strip("\n").split("\n")
    assert header == "hash\tP\tR\tF1"
    code, *values = row.split("\t")
    assert code == expected_code
    assert_close([float(v) for v in values], mean)

    rc, out, _ = run_main(
        capsys, "score", "-c", files["hyps"], "-r", files["refs"], "-m", MINILM, "--format", "tsv", "-s"
    )
    assert rc == 0
    lines = out.strip("\n").split("\n")
    # with -s the hash and the means stay, as comment lines before the table (`comment="#"` readers skip them)
    assert lines[0] == f"# hash\t{expected_code}"
    label, *values = lines[1].split("\t")
    assert label == "# mean"
    assert_close([float(v) for v in values], mean)
    table = list(csv.reader(lines[2:], delimiter="\t"))
    assert table[0] == ["line", "P", "R", "F1"]
    assert [int(r[0]) for r in table[1:]] == list(range(1, 11))
    assert_close([[float(x) for x in r[1:]] for r in table[1:]], per)


@pytest.mark.slow
def test_score_data_json_counts_each_rows_references(capsys, tmp_path: Path, wmt: dict[str, list[str]]) -> None:
    """`references_per_candidate` is every row's number of references (it was the number of columns named: 1
    for a column of lists), None where the rows have different numbers; and `--reference-column ref1
    --reference-column ref2` scores against both columns, as `--reference-column ref1 ref2` does."""
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    cands, refs, refs2 = wmt["hyps"][:3], wmt["refs"][:3], wmt["refs2"][:3]
    both = [[a, b] for a, b in zip(refs, refs2, strict=True)]
    some = [[refs[0]], both[1], [refs[2]]]
    data = tmp_path / "pairs.parquet"
    pq.write_table(pa.table({"candidate": cands, "ref1": refs, "ref2": refs2, "both": both, "some": some}), data)

    def summary(*columns: str) -> dict:
        args = ["--data", str(data), "--reference-column", *columns, "-o", str(tmp_path / "scored.parquet")]
        rc, out, err = run_main(capsys, "score", *args, "-m", MINILM, "--format", "json")
        assert rc == 0, err
        return json.loads(out)

    together, listed = summary("ref1", "ref2"), summary("both")
    assert together["references_per_candidate"] == listed["references_per_candidate"] == 2
    assert listed["f1"] == pytest.approx(together["f1"], abs=1e-9)
    assert summary("ref1", "--reference-column", "ref2") == together
    assert summary("some")["references_per_candidate"] is None
    assert summary("ref1")["references_per_candidate"] == 1


@pytest.mark.slow
def test_score_rescaled_with_computed_baseline(
    capsys, files: dict[str, str], wmt: dict[str, list[str]], baseline_file: Path
) -> None:
    rc, out, _ = run_main(
        capsys,
        "score",
        "-c",
        files["hyps"],
        "-r",
        files["refs"],
        "-m",
        MINILM,
        "--rescale-with-baseline",
        "--baseline-path",
        str(baseline_file),
        "-s",
    )
    assert rc == 0
    code, means, rows = parse_text(out)
    per, mean, expected_code = api(wmt["hyps"], wmt["refs"], rescale_with_baseline=True, baseline_path=baseline_file)
    assert code == expected_code and code.endswith("-custom-rescaled_fast-tokenizer")
    assert_close(means, mean)
    assert_close(rows, per)
    plain, _, _ = api(wmt["hyps"], wmt["refs"])
    assert not torch.allclose(per, plain, atol=1e-3)  # the rescaling did something


@pytest.mark.slow
def test_baseline_placed_under_lang_folder(
    capsys, monkeypatch, tmp_path: Path, files: dict[str, str], wmt: dict[str, list[str]], baseline_file: Path
) -> None:
    """The file `baseline` writes works with --lang once it sits at baselines/LANG/<model>.tsv."""
    target = tmp_path / "xx" / f"{MINILM}.tsv"
    target.parent.mkdir(parents=True)
    shutil.copy(baseline_file, target)
    monkeypatch.setattr(bertscore_tm.scoring.baselines, "data_dir", lambda name: tmp_path)
    rc, out, _ = run_main(
        capsys,
        "score",
        "-c",
        files["hyps"],
        "-r",
        files["refs"],
        "-m",
        MINILM,
        "--lang",
        "xx",
        "--rescale-with-baseline",
    )
    assert rc == 0
    code, means, _ = parse_text(out)
    _, mean, _ = api(wmt["hyps"], wmt["refs"], rescale_with_baseline=True, baseline_path=baseline_file)
    assert code.endswith("-rescaled_fast-tokenizer") and "custom" not in code
    assert_close(means, mean)


@pytest.mark.slow
def test_score_rescaled_with_shipped_baseline(capsys, files: dict[str, str], wmt: dict[str, list[str]]) -> None:
    """The packaged MiniLM baseline (baselines/en/...) is found through --lang en."""
    rc, out, _ = run_main(
        capsys, "score", "-c", files["hyps"], "-r", files["refs"], "-m", MINILM, "--rescale-with-baseline"
    )
    assert rc == 0
    code, means, _ = parse_text(out)
    (p, r, f), expected_code = score(
        wmt["hyps"],
        wmt["refs"],
        model_type=MINILM,
        lang="en",
        rescale_with_baseline=True,
        return_hash=True,
        use_fast_tokenizer=True,
    )
    assert code == expected_code
    assert_close(means, torch.stack((p, r, f), dim=1).double().mean(dim=0))


@pytest.mark.slow
def test_score_output_file(capsys, tmp_path: Path, files: dict[str, str], wmt: dict[str, list[str]]) -> None:
    """-o writes what would go to stdout to a file, and only once the scores are there."""
    target = tmp_path / "scores.json"
    rc, out, _ = run_main(
        capsys, "score", "-c", files["hyps"], "-r", files["refs"], "-m", MINILM, "--format", "json", "-o", str(target)
    )
    assert rc == 0 and out == ""
    _, mean, expected_code = api(wmt["hyps"], wmt["refs"])
    doc = json.loads(target.read_text(encoding="utf-8"))
    assert doc["hash"] == expected_code
    assert_close([doc["precision"], doc["recall"], doc["f1"]], mean)


@pytest.mark.slow
@pytest.mark.parametrize("which", ["-c", "-r"])
def test_score_reads_standard_input(
    capsys, monkeypatch, files: dict[str, str], wmt: dict[str, list[str]], which: str
) -> None:
    """`-` reads that file from standard input, as UTF-8 whatever the locale, with any line endings."""
    name = "hyps" if which == "-c" else "refs"
    feed_stdin(monkeypatch, "\r\n".join(wmt[name]).encode("utf-8") + b"\r\n")
    paths = {"-c": files["hyps"], "-r": files["refs"], which: "-"}
    rc, out, _ = run_main(capsys, "score", "-c", paths["-c"], "-r", paths["-r"], "-m", MINILM, "-s")
    assert rc == 0
    code, means, rows = parse_text(out)
    per, mean, expected_code = api(wmt["hyps"], wmt["refs"])
    assert code == expected_code
    assert_close(means, mean)
    assert_close(rows, per)


def test_baseline_corpus_from_standard_input(
    capsys, monkeypatch, tmp_path: Path, corpus_file: Path, baseline_file: Path
) -> None:
    feed_stdin(monkeypatch, corpus_file.read_bytes())
    target = tmp_path / "b.tsv"
    rc, out, _ = run_main(
        capsys,
        "baseline",
        "--corpus",
        "-",
        "-m",
        MINILM,
        "--pairs",
        str(BASELINE_PAIRS),
        "--seed",
        str(BASELINE_SEED),
        "-o",
        str(target),
    )
    assert rc == 0, out
    assert target.read_bytes() == baseline_file.read_bytes()


# -- show ----------------------------------------------------------------------------------------------------


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG file"
    assert data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


@pytest.mark.slow
def test_show_writes_png(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    cand, ref = CORPUS[8], "The soup could use a bit more salt."
    out = tmp_path / "sim.png"
    proc = run_cli("show", "-c", cand, "-r", ref, "-f", str(out), "-m", MINILM)
    width, height = _png_size(out)
    assert 300 <= width <= 4000 and 250 <= height <= 4000, (width, height)
    assert out.stat().st_size > 10_000
    code, means, _ = parse_text(proc.stdout.split("\n")[0])
    _, mean, expected_code = api([cand], [ref])
    assert code == expected_code
    assert_close(means, mean)
    assert f"Saved the similarity matrix to {out}" in proc.stdout


@pytest.mark.slow
def test_show_matrix_and_rescaling(tmp_path: Path, baseline_file: Path) -> None:
    """The plotted matrix is the cosine similarity of every token, the special ones included (they take part in
    the matching); rescaled with the F baseline."""
    pytest.importorskip("matplotlib")
    from bertscore_tm.reports.similarity_plot import plot_similarity
    from bertscore_tm.scoring.baselines import read_baseline

    cand, ref = "The cat sat on the mat.", "A cat was sitting on the mat."
    plain = plot_similarity(BERTScore(MINILM), cand, ref, tmp_path / "a.png")
    assert plain.cand_tokens == ["[CLS]", "the", "cat", "sat", "on", "the", "mat", ".", "[SEP]"]
    assert plain.similarity.shape == (9, 10)
    assert float(plain.similarity.max()) <= 1 + 1e-5 and float(plain.similarity[2, 2]) > 0.9  # cat ~ cat
    rescaled = plot_similarity(
        BERTScore(MINILM, rescale_with_baseline=True, baseline_path=baseline_file), cand, ref, tmp_path / "b.png"
    )
    b = float(read_baseline(baseline_file)[5, 2])
    assert torch.allclose(rescaled.similarity, (plain.similarity - b) / (1 - b), atol=1e-6)
    (p, _r, f) = score([cand], [ref], model_type=MINILM, rescale_with_baseline=True, baseline_path=baseline_file)
    assert abs(rescaled.f1 - float(f[0])) < TOL and abs(rescaled.precision - float(p[0])) < TOL


@pytest.mark.parametrize(
    ("name", "written"), [("sim", "sim.png"), ("sim.", "sim.png"), ("sim.SVG", "sim.SVG"), ("sim.pdf", "sim.pdf")]
)
def test_show_reports_the_file_it_wrote(capsys, tmp_path: Path, name: str, written: str) -> None:
    """No extension: matplotlib's default format, and its extension added; the message names that file."""
    pytest.importorskip("matplotlib")
    target = str(tmp_path / name)
    rc, out, _ = run_main(capsys, "show", "-c", "A cat sat.", "-r", "The cat sat down.", "-m", MINILM, "-f", target)
    assert rc == 0
    assert out.split("\n")[1] == f"Saved the similarity matrix to {tmp_path / written}"
    assert [p.name for p in tmp_path.iterdir()] == [written]


def _heatmap(n_c: int, n_r: int):
    from bertscore_tm.reports.similarity_plot import draw_heatmap

    sim = torch.rand(n_c, n_r, generator=torch.Generator().manual_seed(0))
    return draw_heatmap(sim, [f"c{i}" for i in range(n_c)], [f"r{j}" for j in range(n_r)], "P = 1", "cosine similarity")


def test_show_short_pairs_label_every_cell() -> None:
    pytest.importorskip("matplotlib")
    fig = _heatmap(7, 8)
    ax = fig.axes[0]
    assert len(ax.texts) == 7 * 8
    assert [t.get_text() for t in ax.get_yticklabels()] == [f"c{i}" for i in range(7)]


def test_show_long_pairs_stay_small() -> None:
    """Past 40 tokens a side: no per-cell labels, a bounded figure, a raster heatmap, thinned tick labels
    (a 512-token pair used to take 10 minutes and 7.7 GB drawing 262,144 labels)."""
    pytest.importorskip("matplotlib")
    fig = _heatmap(507, 41)
    ax = fig.axes[0]
    assert len(ax.texts) == 0
    assert max(fig.get_size_inches()) <= 24
    assert all(image.get_rasterized() for image in ax.images)
    ys, xs = ax.get_yticks(), ax.get_xticks()
    assert 20 <= len(ys) <= 200 and 1 < len(xs) < 41  # every k-th token, the same k on both axes (square cells)
    assert ys[1] - ys[0] == xs[1] - xs[0] > 1
    assert len(ax.get_yticks(minor=True)) == 0  # no grid lines past the size


@pytest.mark.slow
def test_show_long_pair_end_to_end(capsys, tmp_path: Path, wmt: dict[str, list[str]]) -> None:
    """A pair at the model's 512-token window draws in seconds, to a bounded picture."""
    pytest.importorskip("matplotlib")
    cand, ref = " ".join(wmt["hyps_long"][:40]), " ".join(wmt["refs_long"][:40])  # past the window: cut to 512
    out = tmp_path / "long.png"
    rc, _, _ = run_main(capsys, "show", "-c", cand, "-r", ref, "-m", MINILM, "-f", str(out))
    assert rc == 0
    width, height = _png_size(out)
    assert max(width, height) <= 2600, (width, height)


# -- baseline ------------------------------------------------------------------------------------------------


def _read_table(path: Path) -> torch.Tensor:
    with path.open(newline="") as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == ["LAYER", "P", "R", "F"]
    assert [int(r[0]) for r in rows[1:]] == list(range(len(rows) - 1))
    return torch.tensor([[float(x) for x in r[1:]] for r in rows[1:]], dtype=torch.float64)


@pytest.mark.slow
def test_baseline_reproducible_and_equal_to_layer_means(baseline_file: Path, corpus_file: Path) -> None:
    again = baseline_file.parent / "again.tsv"
    run_cli(
        "baseline",
        "--corpus",
        str(corpus_file),
        "-m",
        MINILM,
        "--pairs",
        str(BASELINE_PAIRS),
        "--seed",
        str(BASELINE_SEED),
        "-o",
        str(again),
    )
    assert again.read_bytes() == baseline_file.read_bytes()  # same seed, same file

    table = _read_table(baseline_file)
    assert table.shape == (7, 3)  # MiniLM-L6: embeddings + 6 layers
    cands, refs = sample_pairs(CORPUS, BASELINE_PAIRS, BASELINE_SEED)
    metric = BERTScore(MINILM, all_layers=True)
    metric.update(cands, refs)
    out = metric.compute()
    expected = torch.stack([out[k].double().mean(dim=1) for k in ("precision", "recall", "f1")], dim=1)
    assert torch.allclose(table, expected, atol=TOL, rtol=0)


def test_sample_pairs_contract() -> None:
    lines = [f"line {i}" for i in range(10)]
    # pinned: changing the sampler silently changes every baseline made with it
    assert sample_pairs(lines, 3, seed=7) == (["line 3", "line 2", "line 7"], ["line 0", "line 1", "line 6"])
    cands, refs = sample_pairs(CORPUS, BASELINE_PAIRS, BASELINE_SEED)
    assert len(cands) == len(refs) == BASELINE_PAIRS
    assert len(set(cands + refs)) == 2 * BASELINE_PAIRS and "" not in cands + refs  # distinct, no line twice
    assert sample_pairs(CORPUS, BASELINE_PAIRS, BASELINE_SEED) == (cands, refs)
    assert sample_pairs(CORPUS, BASELINE_PAIRS, BASELINE_SEED + 1) != (cands, refs)
    with pytest.raises(ValueError, match="30 distinct non-blank lines"):
        sample_pairs(CORPUS, 16)


def test_packaged_minilm_baseline_is_sane() -> None:
    table = _read_table(Path(bertscore_tm.scoring.baselines.packaged_baseline_path("en", MINILM)))
    assert table.shape == (7, 3)
    assert bool(((table > 0.1) & (table < 0.9)).all())


# -- errors --------------------------------------------------------------------------------------------------


def test_error_exits_2_without_traceback_in_a_real_process(tmp_path: Path) -> None:
    proc = run_cli("score", "-c", str(tmp_path / "missing.txt"), "-r", str(tmp_path / "missing.txt"), check=False)
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"bertscore-tm: error: candidate file {tmp_path / 'missing.txt'} does not exist"
    assert proc.stdout == ""


@pytest.fixture()
def small(tmp_path: Path) -> dict[str, str]:
    paths = {
        "cands": ["The cat sat on the mat.", "It is raining today.", "We left early."],
        "refs": ["A cat sat on a mat.", "Today it rains.", "We went home early."],
        "short": ["Only one line."],
        "empty": [],
    }
    out = {}
    for name, lines in paths.items():
        path = tmp_path / f"{name}.txt"
        path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        out[name] = str(path)
    out["missing"] = str(tmp_path / "missing.txt")
    (tmp_path / "latin1.txt").write_bytes("Caf\u00e9\n".encode("latin-1"))
    out["latin1"] = str(tmp_path / "latin1.txt")
    (tmp_path / "folder").mkdir()
    out["folder"] = str(tmp_path / "folder")
    out["png"] = str(tmp_path / "sim.png")
    out["corpus"] = out["cands"]
    out["out"] = str(tmp_path / "out.tsv")
    return out


ERRORS = [
    # (arguments, words the one-line message must contain)
    (["score", "-c", "{missing}", "-r", "{refs}"], ["candidate file", "missing.txt", "does not exist"]),
    (["score", "-c", "{cands}", "-r", "{refs}", "{missing}"], ["reference file", "missing.txt", "does not exist"]),
    (["score", "-c", "{cands}", "-r", "{short}", "-m", MINILM], ["short.txt has 1 line but", "has 3 lines"]),
    (["score", "-c", "{empty}", "-r", "{refs}", "-m", MINILM], ["candidate file", "empty.txt", "is empty"]),
    (["score", "-c", "{cands}", "-r", "{empty}", "-m", MINILM], ["reference file", "empty.txt", "is empty"]),
    (
        ["score", "-c", "{cands}", "-r", "{refs}", "-m", "no-such-org/no-such-model", "-l", "3"],
        ["no-such-org/no-such-model", "not on this machine"],
    ),
    (["score", "-c", "{cands}", "-r", "{refs}"], ["roberta-large", "not on this machine"]),  # en's default model
    (
        ["score", "-c", "{cands}", "-r", "{refs}", "-m", MINILM, "--lang", "xx", "--rescale-with-baseline"],
        ["No rescale baseline", "'xx'"],
    ),
    (
        [
            "score",
            "-c",
            "{cands}",
            "-r",
            "{refs}",
            "-m",
            MINILM,
            "--rescale-with-baseline",
            "--baseline-path",
            "{missing}",
        ],
        ["Baseline file", "missing.txt", "does not exist"],
    ),
    (
        [
            "score",
            "-c",
            "{cands}",
            "-r",
            "{refs}",
            "-m",
            MINILM,
            "--rescale-with-baseline",
            "--baseline-path",
            "{folder}",
        ],
        ["Baseline file", "folder is a folder, not a file"],
    ),
    (
        [
            "score",
            "-c",
            "{cands}",
            "-r",
            "{refs}",
            "-m",
            MINILM,
            "--rescale-with-baseline",
            "--baseline-path",
            "{latin1}",
        ],
        ["Baseline file", "latin1.txt is not UTF-8 text", "byte 3"],
    ),
    (
        [
            "score",
            "-c",
            "{cands}",
            "-r",
            "{refs}",
            "-m",
            MINILM,
            "--rescale-with-baseline",
            "--baseline-path",
            "{refs}",
        ],
        ["header", "LAYER,P,R,F"],
    ),
    (["score", "-c", "{cands}", "-r", "{refs}", "-m", MINILM, "-l", "9"], ["num_layers", "between 0 and 6"]),
    (["score", "-c", "{cands}", "-r", "{refs}", "-m", MINILM, "-b", "0"], ["-b/--batch-size", ">= 1", "got 0"]),
    (
        ["show", "-c", "a cat", "-r", "a dog", "-f", "{png}", "-m", "no-such-org/no-such-model", "-l", "3"],
        ["not on this machine"],
    ),
    (
        ["show", "-c", "a cat", "-r", "a dog", "-f", "{png}", "-m", MINILM, "--lang", "xx", "--rescale-with-baseline"],
        ["No rescale baseline"],
    ),
    (
        ["baseline", "--corpus", "{missing}", "-m", MINILM, "-o", "{out}"],
        ["corpus file", "missing.txt", "does not exist"],
    ),
    (
        ["baseline", "--corpus", "{corpus}", "-m", MINILM, "--pairs", "2", "-o", "{out}"],
        ["3 distinct non-blank lines", "--pairs 2 needs 4"],
    ),
    (
        ["baseline", "--corpus", "{corpus}", "-m", "no-such-org/no-such-model", "--pairs", "1", "-o", "{out}"],
        ["not on this machine"],
    ),
]


@pytest.mark.parametrize(("args", "words"), ERRORS, ids=[" ".join(a[:1] + a[-4:]) for a, _ in ERRORS])
def test_user_errors_exit_2_with_one_line(capsys, small: dict[str, str], args: list[str], words: list[str]) -> None:
    rc, out, err = run_main(capsys, *(a.format(**small) for a in args))
    assert rc == 2
    assert out == ""
    lines = err.strip().split("\n")
    assert len(lines) == 1 and lines[0].startswith("bertscore-tm: error: "), err
    for word in words:
        assert word in lines[0], (word, lines[0])
    assert not Path(small["out"]).exists() and not Path(small["png"]).exists()


def test_usage_errors_are_argparse_exit_2(capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["score", "-c", "hyps.txt", "--no-such-option"])
    assert exc.value.code == 2
    assert "--no-such-option" in capsys.readouterr().err


def test_score_without_its_inputs_is_one_line_exit_2(capsys) -> None:
    # -c/-r or --data: argparse cannot require one of the two, so the command says it, in one line, before any load
    assert main(["score", "-r", "refs.txt"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("bertscore-tm: error: ") and err.count("\n") == 1
    assert "-c FILE" in err and "--data FILE" in err


# -- errors: what the library raises -------------------------------------------------------------------------

LIBRARY_ERRORS = [
    # (the error, words the line must hold: the message, then the command line's name for the argument at fault)
    (
        errors.ModelSetupError("num_layers must be between 0 and 6, got 9", path="/m", argument="num_layers"),
        ["got 9", "num_layers is -l/--num-layers"],
    ),
    (
        errors.BaselineFileError(
            "Baseline file b.tsv, data row 3, column F: nan is not finite", path="b.tsv", row=3, column="F"
        ),
        ["data row 3, column F", "baseline_path is --baseline-path"],
    ),
    (
        errors.BaselineNotFoundError(
            "No rescale baseline for model 'm' and lang 'xx'",
            path="x",
            model="m",
            lang="xx",
            argument="rescale_with_baseline",
        ),
        ["No rescale baseline", "--baseline-path baseline.tsv, or leave out --rescale-with-baseline"],
    ),
    (errors.ModelNotFoundError("Model 'm' is not on this machine", model="m"), ["-m /path/to/local/model"]),
    (
        errors.SettingsMismatchError("processes differ in idf: [True, False]", setting="idf", values=[True, False]),
        ["idf is --idf"],
    ),
]


@pytest.mark.parametrize(("error", "words"), LIBRARY_ERRORS, ids=[type(e).__name__ for e, _ in LIBRARY_ERRORS])
def test_library_errors_are_one_line_with_the_flag(
    capsys, monkeypatch, small: dict[str, str], error: errors.BERTScoreError, words: list[str]
) -> None:
    """Any BERTScoreError is a user error; the hint comes from its `argument` field, spelled as a flag."""

    def raise_it(*args: object, **kwargs: object) -> None:
        raise error

    monkeypatch.setattr(bertscore_tm.metric.bertscore.BERTScore, "from_config", classmethod(raise_it))
    line = one_line_error(capsys, "score", "-c", small["cands"], "-r", small["refs"], "-m", MINILM)
    assert line.startswith(f"bertscore-tm: error: {error}")
    for word in words:
        assert word in line, (word, line)


@pytest.mark.parametrize("ending", ["", "."])
def test_hints_follow_the_message_as_a_sentence(capsys, monkeypatch, small: dict[str, str], ending: str) -> None:
    """The hint is a sentence of its own: a period ends the message before it (one, whether or not it had one)."""

    def raise_it(*args: object, **kwargs: object) -> None:
        raise errors.ModelSetupError(f"num_layers must be between 0 and 6, got 7{ending}", argument="num_layers")

    monkeypatch.setattr(bertscore_tm.metric.bertscore.BERTScore, "from_config", classmethod(raise_it))
    line = one_line_error(capsys, "score", "-c", small["cands"], "-r", small["refs"], "-m", MINILM)
    assert line.endswith("got 7. On the command line, num_layers is -l/--num-layers."), line


def test_hints_come_from_fields_not_from_messages(capsys, monkeypatch, small: dict[str, str]) -> None:
    """A message that mentions a Python argument gets no hint unless the error names it in `argument`."""

    def raise_it(*args: object, **kwargs: object) -> None:
        raise errors.BERTScoreError("pass baseline_path='x' or num_layers=<int> (model_name_or_path)")

    monkeypatch.setattr(bertscore_tm.metric.bertscore.BERTScore, "from_config", classmethod(raise_it))
    line = one_line_error(capsys, "score", "-c", small["cands"], "-r", small["refs"], "-m", MINILM)
    assert line == "bertscore-tm: error: pass baseline_path='x' or num_layers=<int> (model_name_or_path)"


def test_every_argument_the_metric_gets_from_an_option_has_its_flag(capsys, monkeypatch, small: dict[str, str]) -> None:
    """A library error names the Python argument at fault (`argument`), and the hint spells it as a flag: every
    setting `score` passes to the metric (as many as any command passes) needs its flag in the settings table, or
    its errors come without one (``candidate_prompt must not be blank`` did)."""
    from bertscore_tm.settings.config import Config

    given: dict[str, object] = {}

    def record(cls: type, arguments: dict[str, object], **kwargs: object) -> None:
        given.update(arguments)
        raise errors.BERTScoreError("stop here")

    monkeypatch.setattr(Config, "of", classmethod(record))
    one_line_error(capsys, "score", "-c", small["cands"], "-r", small["refs"], "-m", MINILM)
    assert {"candidate_prompt", "beta", "ignore"} <= set(given)
    assert [name for name in given if flag(name) is None] == []


def test_a_baseline_file_without_rescaling_is_refused_as_the_library_refuses_it(
    capsys, small: dict[str, str], tmp_path: Path
) -> None:
    line = one_line_error(
        capsys, "score", "-c", small["cands"], "-r", small["refs"], "-m", MINILM, "--baseline-path", str(tmp_path)
    )
    assert "rescale_with_baseline is False" in line
    assert line.endswith("baseline_path is --baseline-path and rescale_with_baseline is --rescale-with-baseline."), line


@pytest.mark.parametrize("flag", ["--candidate-prompt", "--reference-prompt"])
def test_a_blank_prompt_is_one_line_naming_its_flag(capsys, small: dict[str, str], flag: str) -> None:
    name = flag[2:].replace("-", "_")
    line = one_line_error(capsys, "score", "-c", small["cands"], "-r", small["refs"], "-m", MINILM, flag, " ")
    assert line.endswith(f"{name} must not be blank. On the command line, {name} is {flag}."), line


def test_library_errors_while_scoring_are_one_line(capsys, monkeypatch, small: dict[str, str]) -> None:
    def fail(self: BERTScore) -> None:
        raise errors.SettingsMismatchError(
            "processes differ in num_layers: [5, 4]", setting="num_layers", values=[5, 4]
        )

    monkeypatch.setattr(BERTScore, "compute_scores", fail)
    line = one_line_error(capsys, "score", "-c", small["cands"], "-r", small["refs"], "-m", MINILM)
    assert "processes differ in num_layers" in line and "-l/--num-layers" in line


# -- errors: devices, weights, outputs, standard input -------------------------------------------------------


def _usable(device: str) -> bool:
    kind = device.split(":")[0]
    if kind == "cuda":
        return torch.cuda.is_available() and torch.cuda.device_count() > int(device.partition(":")[2] or 0)
    return kind == "mps" and torch.backends.mps.is_available()


@pytest.mark.parametrize("device", ["mps", "meta", "xla", "foo", "cuda", "cuda:7", "hpu", "privateuseone", "mkldnn"])
def test_unusable_devices_are_one_line_before_any_model(capsys, no_model, small: dict[str, str], device: str) -> None:
    if _usable(device):
        pytest.skip(f"{device} is usable here")
    for command in (
        ["score", "-c", small["cands"], "-r", small["refs"]],
        ["show", "-c", "a cat", "-r", "a dog", "-f", small["png"]],
        ["baseline", "--corpus", small["cands"], "--pairs", "1", "-o", small["out"]],
    ):
        line = one_line_error(capsys, *command, "-m", MINILM, "--device", device)
        assert f"--device {device}" in line, line
    assert not Path(small["png"]).exists() and not Path(small["out"]).exists()


@pytest.mark.parametrize("name", ["x.bmp", "x.xyz", "x.pgf"])
def test_show_image_formats_matplotlib_cannot_write(
    capsys, no_model, small: dict[str, str], tmp_path: Path, name: str
) -> None:
    pytest.importorskip("matplotlib")
    if name == "x.pgf" and shutil.which("xelatex"):
        pytest.skip("this machine has xelatex, so matplotlib writes pgf")
    line = one_line_error(capsys, "show", "-c", "a cat", "-r", "a dog", "-f", str(tmp_path / name), "-m", MINILM)
    assert f"cannot write {tmp_path / name}" in line and "png" in line, line
    assert not (tmp_path / name).exists()


def _model_copy(minilm_path: str, folder: Path) -> Path:
    """The packaged MiniLM's files, linked (not copied) into `folder`, except its weights."""
    folder.mkdir()
    for item in Path(minilm_path).iterdir():
        if item.name != "model.safetensors":
            (folder / item.name).symlink_to(item)
    return folder


def _safetensors_raw(header: bytes) -> bytes:
    """A safetensors file's start: the header's length (8 bytes, little-endian), then the header."""
    return len(header).to_bytes(8, "little") + header


def _safetensors_head(minilm_path: str, size: int) -> bytes:
    with open(Path(minilm_path) / "model.safetensors", "rb") as fh:
        return fh.read(size)


CORRUPT_WEIGHTS = {
    "empty safetensors": ("model.safetensors", lambda path: b""),
    "safetensors cut after the header": ("model.safetensors", lambda path: _safetensors_head(path, 1_000_000)),
    "safetensors with a bad header": ("model.safetensors", lambda path: _safetensors_raw(b"{not json at all")),
    "safetensors cut inside the header": ("model.safetensors", lambda path: _safetensors_head(path, 100)),
    "empty pytorch_model.bin": ("pytorch_model.bin", lambda path: b""),
    "pytorch_model.bin cut short": ("pytorch_model.bin", lambda path: _torch_zip_head(path, 100_000)),
}


def _torch_zip_head(minilm_path: str, size: int) -> bytes:
    buffer = io.BytesIO()
    torch.save({f"w{i}": torch.zeros(20_000) for i in range(4)}, buffer)
    return buffer.getvalue()[:size]


@pytest.mark.parametrize("case", list(CORRUPT_WEIGHTS))
def test_corrupt_weights_are_one_line_naming_the_file(
    capsys, tmp_path: Path, small: dict[str, str], minilm_path: str, case: str
) -> None:
    name, content = CORRUPT_WEIGHTS[case]
    model = _model_copy(minilm_path, tmp_path / "model")
    (model / name).write_bytes(content(minilm_path))
    line = one_line_error(capsys, "score", "-c", small["cands"], "-r", small["refs"], "-m", str(model), "-l", "5")
    assert str(model / name) in line, line


def _safetensors(header: dict, data: bytes) -> bytes:
    return _safetensors_raw(json.dumps(header).encode()) + data


def test_weights_the_loader_rejects_are_one_line_naming_the_folder(
    capsys, tmp_path: Path, small: dict[str, str], minilm_path: str
) -> None:
    """Whole in structure, so past the early check, yet unreadable (a dtype safetensors does not know): the
    loader's own error, in one line naming the folder and the file."""
    model = _model_copy(minilm_path, tmp_path / "model")
    unknown_dtype = {"w": {"dtype": "Z9", "shape": [1], "data_offsets": [0, 4]}}
    (model / "model.safetensors").write_bytes(_safetensors(unknown_dtype, b"\0" * 4))
    line = one_line_error(capsys, "score", "-c", small["cands"], "-r", small["refs"], "-m", str(model), "-l", "5")
    assert f"cannot read the weights of the model in {model}" in line and "model.safetensors" in line, line


def test_broken_model_folders_are_one_line(capsys, tmp_path: Path, small: dict[str, str], minilm_path: str) -> None:
    model = _model_copy(minilm_path, tmp_path / "model")
    (model / "model.safetensors").symlink_to(Path(minilm_path) / "model.safetensors")
    (model / "config.json").unlink()
    (model / "config.json").write_text("{not json")
    command = ["score", "-c", small["cands"], "-r", small["refs"], "-m", str(model), "-l", "5"]
    assert "cannot set up" in one_line_error(capsys, *command)
    shard = "model-00001-of-00002.safetensors"
    (model / "model.safetensors.index.json").write_text(json.dumps({"weight_map": {"w": shard}}))
    (model / "model.safetensors").unlink()
    line = one_line_error(capsys, *command)
    assert f"the weights file {model / shard} is missing" in line, line


def test_a_model_without_a_tuned_layer_needs_l(
    capsys, no_model, tmp_path: Path, small: dict[str, str], minilm_path: str
) -> None:
    model = _model_copy(minilm_path, tmp_path / "model")
    (model / "model.safetensors").symlink_to(Path(minilm_path) / "model.safetensors")
    line = one_line_error(capsys, "score", "-c", small["cands"], "-r", small["refs"], "-m", str(model))
    assert f"no default layer is known for {model}: pass -l N" in line, line


@pytest.fixture()
def unwritable(tmp_path: Path) -> Path:
    """A folder this process cannot create files in (root ignores permission bits: then /sys, where it can't)."""
    if os.geteuid() != 0:
        folder = tmp_path / "read-only"
        folder.mkdir()
        folder.chmod(0o555)
        return folder
    try:
        with open("/sys/bertscore-tm-probe", "w"):
            pass
    except OSError:
        return Path("/sys")
    pytest.skip("no unwritable folder here")


def _outputs(small: dict[str, str], target: str) -> list[list[str]]:
    """Every command that writes a file, writing to `target`."""
    return [
        ["score", "-c", small["cands"], "-r", small["refs"], "-o", target],
        ["show", "-c", "a cat", "-r", "a dog", "-f", target],
        ["baseline", "--corpus", small["cands"], "--pairs", "1", "-o", target],
    ]


@pytest.mark.parametrize("where", ["missing folder", "a folder", "read-only folder", "under a file"])
def test_unwritable_outputs_are_one_line_before_any_model(
    capsys, no_model, small: dict[str, str], tmp_path: Path, unwritable: Path, where: str
) -> None:
    target = {
        "missing folder": tmp_path / "no-such-folder" / "out.png",
        "a folder": tmp_path,
        "read-only folder": unwritable / "out.png",
        "under a file": Path(small["refs"]) / "out.png",
    }[where]
    for command in _outputs(small, str(target)):
        line = one_line_error(capsys, *command, "-m", MINILM)
        assert f"cannot write {target}" in line, line


def test_score_output_is_written_only_after_scoring(capsys, small: dict[str, str], tmp_path: Path) -> None:
    """A mistake found while setting up leaves an existing output file as it was."""
    target = tmp_path / "kept.txt"
    target.write_text("old\n")
    one_line_error(
        capsys, "score", "-c", small["cands"], "-r", small["refs"], "-m", MINILM, "-l", "99", "-o", str(target)
    )
    assert target.read_text() == "old\n"


def test_standard_input_only_once(capsys, monkeypatch, no_model, small: dict[str, str]) -> None:
    feed_stdin(monkeypatch, b"a\nb\nc\n")
    line = one_line_error(capsys, "score", "-c", "-", "-r", "-", "-m", MINILM)
    assert "standard input" in line and "only once" in line
    line = one_line_error(capsys, "score", "-c", small["cands"], "-r", "-", "-", "-m", MINILM)
    assert "standard input" in line and "only once" in line


def test_standard_input_only_once_in_every_command(capsys, monkeypatch, no_model, small: dict[str, str]) -> None:
    """Twice `-` is refused as such, not reported as an empty second file."""
    for command in (
        ["pairwise", "-c", "-", "-r", "-"],
        ["compare", "-c", "-", "-", "-r", small["refs"]],
        ["compare", "-c", "-", small["cands"], "-r", "-"],
        ["mbr", "-i", "-", "--groups", "-"],
    ):
        feed_stdin(monkeypatch, b"a\nb\nc\n")
        line = one_line_error(capsys, *command, "-m", MINILM)
        assert "standard input (-) can be read only once" in line, line


def test_an_output_that_is_an_input_is_refused(capsys, no_model, small: dict[str, str], tmp_path: Path) -> None:
    """Writing the results over an input file would lose it: refused before any model, under any spelling."""
    link = tmp_path / "link-to-refs.txt"
    link.symlink_to(small["refs"])
    before = {path: Path(path).read_text() for path in (small["cands"], small["refs"])}
    for command, output in (
        (["score", "-c", small["cands"], "-r", small["refs"]], small["cands"]),
        (["score", "-c", small["cands"], "-r", small["cands"], small["refs"]], str(link)),
        (["pairwise", "-c", small["cands"], "-r", small["refs"]], f"{tmp_path}/./refs.txt"),
        (["baseline", "--corpus", small["cands"], "--pairs", "1"], small["cands"]),
    ):
        line = one_line_error(capsys, *command, "-o", output, "-m", MINILM)
        assert f"cannot write {output}: it is the input file" in line, line
    assert {path: Path(path).read_text() for path in before} == before


def test_standard_input_errors_name_it(capsys, monkeypatch, no_model, small: dict[str, str]) -> None:
    feed_stdin(monkeypatch, b"")
    line = one_line_error(capsys, "score", "-c", "-", "-r", small["refs"], "-m", MINILM)
    assert "candidate file - (standard input) is empty" in line
    feed_stdin(monkeypatch, b"ok\n\xff\xfe\n")
    line = one_line_error(capsys, "score", "-c", small["cands"], "-r", "-", "-m", MINILM)
    assert "reference file - (standard input) is not UTF-8 text" in line and "byte 3" in line


# -- every command's inputs and outputs ----------------------------------------------------------------------


def subcommands() -> dict[str, argparse.ArgumentParser]:
    """Each command's parser, by name, as `bertscore-tm` builds them."""
    (sub,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(sub.choices)


def fewest(command: str, small: dict[str, str], given: dict[str, list[str]]) -> list[str]:
    """The command's fewest arguments (in `small`'s files), with the options `given` put in their place."""
    least = {
        "score": {"-c": [small["cands"]], "-r": [small["refs"]]},
        "compare": {"-c": [small["cands"], small["refs"]], "-r": [small["refs"]]},
        "show": {"-c": ["a cat"], "-r": ["a dog"], "-f": [small["png"]]},
        "explain": {"-c": [small["cands"]], "-r": [small["refs"]]},
        "baseline": {"--corpus": [small["cands"]], "-o": [small["out"]]},
        "pairwise": {"-c": [small["cands"]], "-r": [small["refs"]]},
        "mbr": {"-i": [small["cands"]], "--group-size": ["3"]},
        "tune-layers": {"--data": [small["cands"]]},
    }[command]
    return [command, *(x for flag, values in (least | given).items() for x in (flag, *values))]


def files_of(command: str) -> tuple[list[argparse.Action], list[argparse.Action]]:
    """The command's options that name files it reads and files (or folders) it writes (`outputs.READS`,
    `outputs.WRITES`), options that hold texts (metavar TEXT: show's -c and -r) left out."""
    actions = [a for a in subcommands()[command]._actions if a.option_strings]
    reads = [a for a in actions if a.dest in outputs.READS and a.metavar != "TEXT"]
    return reads, [a for a in actions if a.dest in outputs.WRITES]


def test_every_option_that_names_a_file_is_an_input_or_an_output() -> None:
    """So that the checks below cover an option added later: one whose metavar says it takes a file or a folder
    must be in `outputs.READS` or `outputs.WRITES` (and every name there is some command's option)."""
    named = set()
    for command, parser in subcommands().items():
        for action in parser._actions:
            if action.metavar and re.search(r"FILE|DIR|SYS|HYPS|OUT|PATH", str(action.metavar)):
                assert action.dest in outputs.READS or action.dest in outputs.WRITES, (command, action.option_strings)
            named.add(action.dest)
    assert set(outputs.READS) | set(outputs.WRITES) <= named


@pytest.mark.parametrize("command", [c for c in sorted(subcommands()) if all(files_of(c))])
def test_no_output_may_be_any_input_of_its_command(
    capsys, no_model, small: dict[str, str], tmp_path: Path, command: str
) -> None:
    """Every output option (-o, --html, --plot, --add-to-table, -f, --checkpoint) against every input option
    (-c, -r, --data, --context, --idf-references, --baseline-path, --corpus, ...): refused before any model
    loads, the input left as it was."""
    victim = tmp_path / "victim.txt"
    reads, writes = files_of(command)
    for read, write in itertools.product(reads, writes):
        victim.write_text("kept\n", encoding="utf-8")
        given = {read.option_strings[0]: [str(victim)], write.option_strings[0]: [str(victim)]}
        line = one_line_error(capsys, *fewest(command, small, given), "-m", MINILM)
        assert f"it is the input file {victim} ({outputs.READS[read.dest]})" in line, line
        assert victim.read_text(encoding="utf-8") == "kept\n"


def test_the_inputs_and_outputs_are_checked_in_every_command_that_has_them() -> None:
    pairs = {command: len(list(itertools.product(*files_of(command)))) for command in subcommands()}
    assert pairs["score"] == 5 * 2 and pairs["explain"] == 5 * 2 and pairs["tune-layers"] == 1 * 3, pairs
    assert pairs["mbr"] == 0 and all(n > 0 for command, n in pairs.items() if command != "mbr"), pairs


@pytest.mark.parametrize("command", [c for c in sorted(subcommands()) if len(files_of(c)[1]) > 1])
def test_two_outputs_naming_one_path_are_refused_before_anything_is_written(
    capsys, no_model, small: dict[str, str], tmp_path: Path, command: str
) -> None:
    """`-o x --checkpoint x` used to score everything, then fail on writing x (a folder by then)."""
    same = tmp_path / "same.png"  # a picture's name as -f and --plot write it
    for first, second in itertools.combinations(files_of(command)[1], 2):
        given = {first.option_strings[0]: [str(same)], second.option_strings[0]: [str(same)]}
        line = one_line_error(capsys, *fewest(command, small, given), "-m", MINILM)
        flags = sorted(
            [outputs.WRITES[first.dest], outputs.WRITES[second.dest]], key=list(outputs.WRITES.values()).index
        )
        assert f"{flags[0]} and {flags[1]} name the same" in line and str(same) in line, line
        assert not same.exists()


@pytest.mark.parametrize("command", ["score", "compare", "pairwise"])
def test_a_checkpoint_that_is_a_file_is_refused_as_a_file(
    capsys, no_model, small: dict[str, str], tmp_path: Path, command: str
) -> None:
    """Not "File exists": the one line says what is wrong, whether the file is an input or not."""
    other = tmp_path / "notes.txt"
    other.write_text("kept\n", encoding="utf-8")
    line = one_line_error(capsys, *fewest(command, small, {"--checkpoint": [str(other)]}), "-m", MINILM)
    assert line.endswith(
        f"cannot keep a checkpoint in {other}: it is a file, not a folder; give a folder (made where missing)"
    )
    line = one_line_error(capsys, *fewest(command, small, {"--checkpoint": [small["refs"]]}), "-m", MINILM)
    assert f"cannot keep a checkpoint in {small['refs']}: it is the input file" in line and "not a folder" in line
    assert other.read_text(encoding="utf-8") == "kept\n"


# -- repeated options ----------------------------------------------------------------------------------------


@pytest.mark.slow
def test_repeated_r_collects_every_reference_file(capsys, files: dict[str, str]) -> None:
    """`-r a -r b` is `-r a b` (two references per candidate), not b alone."""
    base = ["score", "-c", files["hyps"], "-m", MINILM, "--format", "json"]
    rc, together, _ = run_main(capsys, *base, "-r", files["refs"], files["refs2"])
    rc2, repeated, _ = run_main(capsys, *base, "-r", files["refs"], "-r", files["refs2"])
    assert rc == rc2 == 0 and together == repeated
    assert json.loads(repeated)["references_per_candidate"] == 2


@pytest.mark.parametrize(
    "command",
    [
        ["score", "-c", "{cands}", "-c", "{refs}", "-r", "{refs}"],
        ["pairwise", "-c", "{cands}", "-r", "{refs}", "-r", "{cands}"],
        ["mbr", "-i", "{cands}", "-i", "{refs}", "--group-size", "3"],
        ["baseline", "--corpus", "{cands}", "--corpus", "{refs}", "-o", "{out}"],
    ],
    ids=lambda command: command[0],
)
def test_a_one_file_option_given_twice_is_refused(capsys, no_model, small: dict[str, str], command: list[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main([a.format(**small) for a in command] + ["-m", MINILM])
    assert exc.value.code == 2
    assert "given twice" in capsys.readouterr().err


def _value(action: argparse.Action) -> str:
    """A value the option takes."""
    return str(next(iter(action.choices))) if action.choices else "1"


@pytest.mark.parametrize("command", sorted(subcommands()))
def test_every_option_that_takes_one_value_is_refused_when_given_twice(
    capsys, small: dict[str, str], command: str
) -> None:
    """Every option of every command, walked: a flag takes no value; an option that takes one (a file, a
    number, a name: -o, --data, -l, --format, ...) is refused when given twice, and accepted once, its default
    not counting as given (--lang en); one that takes several collects every occurrence."""
    parser = subcommands()[command]
    exclusive = {a for group in parser._mutually_exclusive_groups for a in group._group_actions}
    for action in (a for a in parser._actions if a.option_strings and a.nargs != 0):
        flag, value = action.option_strings[0], _value(action)
        if action.nargs is None:
            with pytest.raises(SystemExit) as exc:
                build_parser().parse_args([command, flag, value, flag, value])
            assert exc.value.code == 2
            assert f"argument {'/'.join(action.option_strings)}: given twice" in capsys.readouterr().err
            if action not in exclusive:
                build_parser().parse_args([*fewest(command, small, {flag: [value]})])
        else:
            assert action.nargs == "+", (command, flag, action.nargs)
            args = build_parser().parse_args([*fewest(command, small, {flag: ["a"]}), flag, "b", "c"])
            assert getattr(args, action.dest) == ["a", "b", "c"], (command, flag)


def test_reference_columns_given_apart_are_collected() -> None:
    """`--reference-column ref1 --reference-column ref2` is both columns, as `-r a -r b` is both files (it used to
    be ref2 alone, silently)."""
    apart = build_parser().parse_args(
        ["score", "--data", "d.parquet", "--reference-column", "ref1", "--reference-column", "ref2"]
    )
    assert apart.reference_column == ["ref1", "ref2"]


def test_a_column_option_without_data_is_refused(capsys, no_model, small: dict[str, str]) -> None:
    """--candidate-column was silently ignored with -c/-r (its default hid whether it was given)."""
    for option in ("--candidate-column", "--reference-column", "--context-column"):
        line = one_line_error(capsys, "score", "-c", small["cands"], "-r", small["refs"], option, "foo", "-m", MINILM)
        assert line.endswith("--reference-column, --candidate-column and --context-column go with --data FILE")


# -- standard output that cannot be written ------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("command", ["score", "pairwise"])
def test_a_full_standard_output_is_one_line(small: dict[str, str], command: str) -> None:
    """`> /dev/full` (a full disk): the one-line error `-o /dev/full` gives, no traceback."""
    args = [sys.executable, "-m", "bertscore_tm", command, "-c", small["cands"], "-r", small["refs"], "-m", MINILM]
    with open("/dev/full", "w") as full:
        proc = subprocess.run(args, stdout=full, stderr=subprocess.PIPE, text=True, env=_env(), timeout=300)
    assert proc.returncode == 2
    assert proc.stderr == "bertscore-tm: error: cannot write standard output: No space left on device\n"


def test_a_closed_standard_output_is_one_line(capsys, monkeypatch, small: dict[str, str]) -> None:
    """`>&-`: Python then has no sys.stdout at all."""
    monkeypatch.setattr(sys, "stdout", None)
    rc = main(["score", "-c", small["cands"], "-r", small["refs"], "-m", MINILM])
    assert rc == 2
    assert (
        capsys.readouterr().err
        == "bertscore-tm: error: cannot write standard output: this process has none (it was closed)\n"
    )


# -- errors: the rest of the sweep ---------------------------------------------------------------------------


SWEEP = [
    (["score", "-c", "{cands}", "-r", "{refs}", "-m", MINILM, "-b", "-3"], ["-b/--batch-size", ">= 1", "got -3"]),
    (["score", "-c", "{cands}", "-r", "{refs}", "-m", MINILM, "-l", "-1"], ["-l/--num-layers", ">= 0", "got -1"]),
    (["score", "-c", "{cands}", "-r", "{refs}", "-m", MINILM, "-l", "99"], ["between 0 and 6", "got 99"]),
    (["score", "-c", "{latin1}", "-r", "{refs}", "-m", MINILM], ["latin1.txt is not UTF-8 text", "byte 3"]),
    (["score", "-c", "{folder}", "-r", "{refs}", "-m", MINILM], ["candidate file", "is a folder, not a file"]),
    (["score", "-c", "{cands}", "-r", "{refs}", "-m", "{folder}", "-l", "2"], ["cannot set up", "config.json"]),
    (
        ["score", "-c", "{cands}", "-r", "{refs}", "-m", MINILM, "--lang", "xx", "--rescale-with-baseline"],
        ["No rescale baseline", "'xx'", "--baseline-path baseline.tsv"],
    ),
    (
        ["show", "-c", "caf\udce9", "-r", "a cafe", "-f", "{png}", "-m", MINILM],
        ["candidate text (-c)", "not UTF-8", "0xe9"],
    ),
    (["show", "-c", " ", "-r", "a cafe", "-f", "{png}", "-m", MINILM], ["non-blank"]),
    (["baseline", "--corpus", "{cands}", "-m", MINILM, "--pairs", "0", "-o", "{out}"], ["--pairs", "at least 1"]),
    (
        ["baseline", "--corpus", "{cands}", "-m", MINILM, "--pairs", "1", "-b", "0", "-o", "{out}"],
        ["-b/--batch-size", ">= 1"],
    ),
]


@pytest.mark.parametrize(("args", "words"), SWEEP, ids=[" ".join(a for a in args if a != MINILM) for args, _ in SWEEP])
def test_sweep_of_mistakes(capsys, small: dict[str, str], args: list[str], words: list[str]) -> None:
    line = one_line_error(capsys, *(a.format(**small) for a in args))
    for word in words:
        assert word in line, (word, line)
    assert not Path(small["out"]).exists() and not Path(small["png"]).exists()
