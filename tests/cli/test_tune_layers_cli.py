"""``bertscore-tm tune-layers`` (issue 25) on a 30-row slice of the vendored WMT17 judgements with the packaged
MiniLM: the JSON equals the library's figures, the text table, the plot, ``--add-to-table`` read back by the
metric, and every bad input as one line and exit code 2 (before the model loads where the input says it)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from bertscore_tm import BERTScore
from bertscore_tm.tuning.layer_tuning import read_judgements, tune_layers
from tests.cli.test_cli import no_model, one_line_error, run_main  # noqa: F401 (no_model is a fixture)
from tests.conftest import MINILM, REPO

pytestmark = pytest.mark.usefixtures("one_thread")
DATA = REPO / "tests" / "data" / "wmt17-da" / "da-seglevel-toen.tsv"
HEADER = "lp\tsystem\tsid\thuman\tcandidate\treference\n"
LAYERS = 7  # MiniLM: the embeddings and 6 blocks


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """6 judgements of each language pair, spread over its 560 (several systems each)."""
    lines = DATA.read_text(encoding="utf-8").splitlines(keepends=True)
    picked = [lines[1 + pair * 560 + k * 93] for pair in range(5) for k in range(6)]
    path = tmp_path_factory.mktemp("judged") / "judged.tsv"
    path.write_text(lines[0] + "".join(picked), encoding="utf-8")
    return path


def tune(capsys, judged: Path, *extra: str) -> tuple[str, str]:
    rc, out, err = run_main(
        capsys, "tune-layers", "--data", str(judged), "--group-by", "lp", "-m", MINILM, "--bootstrap", "200", *extra
    )
    assert rc == 0, err
    return out, err


@pytest.fixture(scope="module")
def outputs(judged: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """One JSON run with --system-column, --plot and --add-to-table, and one text run (module-wide)."""
    from bertscore_tm.cli import main

    folder = tmp_path_factory.mktemp("outputs")
    common = ["tune-layers", "--data", str(judged), "--group-by", "lp", "-m", MINILM, "--bootstrap", "200"]
    json_file, text_file = folder / "tuning.json", folder / "tuning.txt"
    extra = ["--plot", str(folder / "layers.png"), "--add-to-table", str(folder / "layers.json")]
    assert main([*common, "--system-column", "system", "--format", "json", "-o", str(json_file), *extra]) == 0
    assert main([*common, "--system-column", "system", "-o", str(text_file)]) == 0
    return {
        "json": json.loads(json_file.read_text(encoding="utf-8")),
        "text": text_file.read_text(encoding="utf-8"),
        "folder": folder,
    }


@pytest.mark.slow
def test_json_holds_the_librarys_figures(judged, outputs):
    doc = outputs["json"]
    rows = read_judgements(judged, group="lp", system="system")
    library = tune_layers(rows, MINILM, bootstrap=200, seed=0)
    assert doc["best_layer"] == library.best_layer and doc["default_layer"] == 5
    assert [entry["layer"] for entry in doc["layers"]] == list(range(LAYERS))
    for entry in doc["layers"]:
        for method in ("pearson", "spearman", "kendall"):
            figures, expected = entry[method], library.figures(entry["layer"], method)
            assert set(figures) == {"mean", "groups", "ci"}
            assert figures["mean"] == pytest.approx(expected.mean, abs=1e-9)
            assert figures["groups"] == pytest.approx(expected.groups, abs=1e-9)
            assert set(figures["groups"]) == {"cs-en", "de-en", "ru-en", "tr-en", "zh-en"}
            assert figures["ci"] == pytest.approx(list(expected.ci), abs=1e-9) and figures["ci"][0] <= figures["ci"][1]
        assert set(entry["system"]["pearson"]["groups"]) == {"cs-en", "de-en", "ru-en", "tr-en", "zh-en"}
    assert doc["layer_table_line"] == f'"{MINILM}": {doc["best_layer"]}'
    assert doc["test"]["default"] == 5 and 0 < doc["test"]["p_value"] <= 1


def test_text_table_and_verdict(outputs):
    doc, lines = outputs["json"], outputs["text"].splitlines()
    assert lines[0] == doc["hash"]
    assert lines[1].startswith("30 judgements in 5 group(s) (cs-en 6, de-en 6, ru-en 6, tr-en 6, zh-en 6)")
    header = lines[3].split()
    assert header[:7] == ["layer", "pearson", "[95%]", "spearman", "[95%]", "kendall", "[95%]"]
    assert header[7:] == ["cs-en", "de-en", "ru-en", "tr-en", "zh-en", "system", "r"]
    table = lines[4 : 4 + LAYERS]
    for layer, row in enumerate(table):
        cells = row.split()
        assert cells[0] == str(layer)
        assert float(cells[1]) == pytest.approx(doc["layers"][layer]["pearson"]["mean"], abs=5e-5)
        assert ("<- best" in row) == (layer == doc["best_layer"]) and ("<- default" in row) == (layer == 5)
    best = f"best layer: {doc['best_layer']} (pearson of F1 "
    assert any(line.startswith(best) for line in lines)
    test = [line for line in lines if "default layer 5" in line]
    assert len(test) == 1 and ("significantly better" in test[0] or doc["best_layer"] == 5)
    assert lines[-1] == f"layer table line (BERTSCORE_TM_LAYERS): {doc['layer_table_line']}"


def test_add_to_table_is_the_layer_the_metric_then_uses(outputs, monkeypatch):
    table = outputs["folder"] / "layers.json"
    assert json.loads(table.read_text(encoding="utf-8")) == {MINILM: outputs["json"]["best_layer"]}
    assert outputs["json"]["layer_table"] == str(table)
    monkeypatch.setenv("BERTSCORE_TM_LAYERS", str(table))
    assert BERTScore(MINILM).num_layers == outputs["json"]["best_layer"]


def test_plot_is_a_png(outputs):
    assert (outputs["folder"] / "layers.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert outputs["json"]["plot"] == str(outputs["folder"] / "layers.png")


def test_bad_lines_skipped_with_a_count_and_small_groups_left_out(capsys, tmp_path):
    path = tmp_path / "few.tsv"
    rows = [
        "a\tA\t1\t0.5\tthe cat sat on the mat.\tthe cat sat on a mat.\n",
        "a\tB\t2\tgood\tit rains.\tit is raining.\n",
        "a\tB\t3\t-0.4\ta dog ran off.\tthe dog ran away.\n",
        "a\tA\t4\t1.2\tbirds sing loudly.\tbirds are singing loudly.\n",
        "a\tC\t5\t0.1\the left.\tshe stayed home.\n",
        "b\tA\t1\t0.3\tyes.\tno.\n",
    ]
    path.write_text(HEADER + "".join(rows), encoding="utf-8")
    out, err = tune(capsys, path, "--skip-bad")
    assert f"{path}: 1 bad line(s) left out; 5 judgements kept" in err
    assert "1 group(s) have fewer than 3 segments and are left out of the average: 'b' (1)" in err
    assert "4 judgements in 1 group(s) (a 4); left out: groups of fewer than 3 lines, b (1); 1 bad line(s)" in out


@pytest.mark.parametrize(
    ("bad_line", "message"),
    [
        ("cs-en\tA\t4\tgood\tx\ty\n", r"line 4 has a human score that is not a number: 'good' \(--skip-bad leaves"),
        ("cs-en\tA\t4\t\tx\ty\n", r"line 4 has no human score \(--skip-bad leaves bad lines out\)$"),
    ],
)
@pytest.mark.usefixtures("no_model")
def test_a_bad_human_score_names_its_line(capsys, tmp_path, bad_line, message):
    path = tmp_path / "bad.tsv"
    path.write_text(HEADER + "cs-en\tA\t1\t0.5\ta\tb\ncs-en\tB\t2\t0.1\tc\td\n" + bad_line, encoding="utf-8")
    line = one_line_error(capsys, "tune-layers", "--data", str(path), "-m", MINILM)
    assert str(path) in line
    assert re.search(message, line), line


@pytest.mark.usefixtures("no_model")
def test_bad_files_are_one_line_before_the_model_loads(capsys, tmp_path):
    def error(text: str, *args: str) -> str:
        path = tmp_path / "judged.tsv"
        path.write_text(text, encoding="utf-8")
        return one_line_error(capsys, "tune-layers", "--data", str(path), "-m", MINILM, *args)

    good = "cs-en\tA\t1\t0.5\ta\tb\ncs-en\tB\t2\t0.1\tc\td\ncs-en\tA\t3\t0.9\te\tf\n"
    line = error(HEADER + good, "--human-column", "score", "--group-by", "language")
    assert "no column 'score' (the human column), no column 'language' (the group column)" in line
    assert line.endswith(
        "(name the right ones with --candidate-column, --reference-column, --human-column, "
        "--group-by and --system-column)"
    )
    assert "has 1 usable judgement(s): a correlation needs at least 3" in error(HEADER + good.split("\n")[0] + "\n")
    constant = good.replace("0.1", "0.5").replace("0.9", "0.5")
    assert "the human scores of group 'cs-en' are all 0.5" in error(HEADER + constant, "--group-by", "lp")
    assert "the human scores of the judgements are all 0.5" in error(HEADER + constant)
    split = good.replace("cs-en\tA\t3", "de-en\tA\t3")
    assert "no group has 3 judgements or more" in error(HEADER + split, "--group-by", "lp")
    assert "matplotlib writes no 'weird' images" in error(HEADER + good, "--plot", str(tmp_path / "x.weird"))
    (tmp_path / "table.json").write_text("[1, 2]", encoding="utf-8")
    assert "must be a JSON object" in error(HEADER + good, "--add-to-table", str(tmp_path / "table.json"))
    assert "--default-layer must be 0 or more" in error(HEADER + good, "--default-layer", "-1")
    assert "--bootstrap must be at least 1" in error(HEADER + good, "--bootstrap", "0")
    same = str(tmp_path / "out.json")
    assert f"-o and --add-to-table name the same file {same}" in error(
        HEADER + good, "-o", same, "--add-to-table", same
    )


def test_plot_without_matplotlib_and_a_layer_beyond_the_model(capsys, tmp_path, judged, monkeypatch):
    with monkeypatch.context() as patched:
        patched.setitem(sys.modules, "matplotlib", None)  # import matplotlib raises ImportError
        line = one_line_error(capsys, "tune-layers", "--data", str(judged), "--plot", str(tmp_path / "p.png"))
    assert "--plot needs matplotlib: pip install 'bertscore-tm[plot]'" in line
    line = one_line_error(capsys, "tune-layers", "--data", str(judged), "-m", MINILM, "--default-layer", "9")
    assert line.endswith(f"--default-layer 9 is not a layer of {MINILM}: it has layers 0 (the embeddings) to 6")


@pytest.mark.parametrize(
    ("command", "says", "never"),
    [
        ("tune-layers", "intervals of the correlations", "--method randomization"),
        ("compare", "each F1 difference", "the F1 mean at level"),
        ("score", "interval of the F1 mean at level C", "--method randomization"),
    ],
)
def test_resampling_help_says_what_each_command_resamples(capsys, command, says, never):
    with pytest.raises(SystemExit):
        run_main(capsys, command, "--help")
    text = " ".join(capsys.readouterr().out.split())  # argparse wraps the help at the terminal's width
    assert says in text and never not in text
