"""`bertscore-tm` without a command takes bert-score's own command line: its flags, files or texts inline, and its
output, equal to bert-score's CLI module (`bert_score_cli.score`, not the `bert-score` script, which
code-bert-score's install overwrites) run unpadded (-b 1)."""

from __future__ import annotations

import contextlib
import io
import sys
import warnings
from pathlib import Path

import pytest

from bertscore_tm.cli import main
from tests.conftest import REPO, WMT, read_lines


def _ours(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _theirs(monkeypatch: pytest.MonkeyPatch, *argv: str) -> str:
    from bert_score_cli import score as cli

    monkeypatch.setattr(sys, "argv", ["bert-score", *argv])
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cli.main()
    return out.getvalue()


def _numbers(text: str) -> tuple[list[str], list[float]]:
    words = text.split()
    values = []
    kept = []
    for word in words:
        try:
            values.append(float(word))
        except ValueError:
            kept.append(word)
    return kept, values


def _same_output(ours: str, theirs: str) -> None:
    """The same lines, words and hash code; the printed numbers within their six decimals' rounding."""
    assert ours.count("\n") == theirs.count("\n")
    (our_words, our_values), (their_words, their_values) = _numbers(ours), _numbers(theirs)
    assert our_words == their_words
    assert len(our_values) == len(their_values)
    assert max(abs(a - b) for a, b in zip(our_values, their_values, strict=True)) <= 2e-6


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    folder = tmp_path_factory.mktemp("bert-score-cli")
    paths = {}
    for name, lines in (
        ("hyps", read_lines(WMT / "hyps.txt")[:12]),
        ("refs", read_lines(WMT / "refs.txt")[:12]),
        ("refs2", read_lines(WMT / "refs2.txt")[:12]),
    ):
        path = folder / f"{name}.txt"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        paths[name] = str(path)
    return paths


@pytest.mark.parametrize(
    "extra",
    [
        ["-s"],
        ["--idf", "--seg_level", "--num_layers", "3"],
        ["--rescale_with_baseline", "--lang", "en", "--baseline_path", "{baseline}", "--use_fast_tokenizer"],
    ],
    ids=["segments", "idf-layer-3", "rescaled-no-fast"],
)
def test_files_score_as_bert_scores_command_line(capsys, monkeypatch, files, minilm_path, extra) -> None:
    baseline = str(REPO / "baselines" / "en" / "sentence-transformers" / "all-MiniLM-L6-v2.tsv")
    extra = [e.format(baseline=baseline) for e in extra]
    argv = ["-r", files["refs"], files["refs2"], "-c", files["hyps"], "-m", minilm_path, "-b", "1", *extra]
    if "--num_layers" not in extra:
        argv += ["-l", "5"]
    code, ours, err = _ours(capsys, *argv)
    assert code == 0, err
    _same_output(ours, _theirs(monkeypatch, *argv))


def test_texts_given_inline_are_one_pair_with_its_references(capsys, monkeypatch, minilm_path) -> None:
    argv = ["-c", "The cat sat on the mat.", "-r", "A cat was sitting on the mat.", "The mat had a cat.", "-s"]
    argv += ["-m", minilm_path, "-l", "5", "-b", "1"]
    code, ours, err = _ours(capsys, *argv)
    assert code == 0, err
    assert ours.count("\n") == 2
    _same_output(ours, _theirs(monkeypatch, *argv))


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["-c", "one text", "-r", "{refs}", "-m", "{model}"], ["candidate file one text does not exist"]),
        (["-c", "a cat", "-r", "a dog", "--idf", "-m", "{model}"], ["--idf counts document frequencies"]),
        (["-c", "{hyps}", "-r", "{short}", "-m", "{model}", "-l", "5"], ["reference file", "has 1 line but"]),
        (["-c", "a cat", "-r", "a dog"], ["Either lang or model_type must be given"]),
        (["-c", "a cat", "-r", "a dog", "-m", "{model}", "-l", "5", "-b", "0"], ["batch_size", "got 0"]),
        (["-c", "a cat", "-r", "a dog", "-m", "{model}", "--baseline_path", "{refs}"], ["rescale_with_baseline"]),
    ],
    ids=["missing-candidate-file", "idf-one-pair", "line-counts", "no-model", "batch-size", "baseline-alone"],
)
def test_mistakes_are_one_line_and_exit_2(capsys, files, minilm_path, tmp_path: Path, argv, words) -> None:
    short = tmp_path / "short.txt"
    short.write_text("one line\n", encoding="utf-8")
    filled = [a.format(model=minilm_path, short=short, **files) for a in argv]
    code, out, err = _ours(capsys, *filled)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("bertscore-tm: error: "), err
    for word in words:
        assert word in err, (word, err)


def test_help_and_version_still_belong_to_the_commands(capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    assert "score" in capsys.readouterr().out
