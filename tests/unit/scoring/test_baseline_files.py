"""A rescale baseline must be a finite number below 1 in every cell the setting uses: (x - b) / (1 - b) is NaN,
infinite or sign-flipped otherwise. A bad file is a BaselineFileError naming the file, the data row (from 1)
and the column, when the metric is built; cells of layers the setting does not use do not matter."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from bertscore_tm import BERTScore
from bertscore_tm.errors import BaselineFileError, BaselineNotFoundError
from bertscore_tm.scoring.baselines import find_baseline, read_baseline
from tests.conftest import MINILM

GOOD = [0.8, 0.8, 0.8]


def _write(path: Path, bad_layer: int, column: str, value: str) -> Path:
    rows = ["LAYER,P,R,F"]
    for layer in range(7):
        cells = [str(v) for v in GOOD]
        if layer == bad_layer:
            cells["PRF".index(column)] = value
        rows.append(",".join([str(layer), *cells]))
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1", "1.0", "1.5"])
@pytest.mark.parametrize("column", ["P", "R", "F"])
def test_a_bad_value_in_the_layer_used_names_file_row_and_column(tmp_path, value, column):
    file = _write(tmp_path / "b.tsv", bad_layer=5, column=column, value=value)
    message = rf"{re.escape(str(file))}.*data row 6 \(layer 5\).*column {column}.*finite.*below 1"
    with pytest.raises(BaselineFileError, match=message) as err:
        BERTScore(MINILM, rescale_with_baseline=True, baseline_path=file)
    assert (err.value.path, err.value.row, err.value.column) == (str(file), 6, column)


def test_a_bad_value_in_a_layer_not_used_is_fine_unless_all_layers_are(tmp_path):
    file = _write(tmp_path / "b.tsv", bad_layer=2, column="R", value="nan")
    metric = BERTScore(MINILM, rescale_with_baseline=True, baseline_path=file)
    metric.update(["A cat."], ["A dog."])
    assert metric.compute()["f1"].isfinite().all()
    with pytest.raises(BaselineFileError, match=r"data row 3 \(layer 2\).*column R") as err:
        BERTScore(MINILM, rescale_with_baseline=True, baseline_path=file, all_layers=True)
    assert (err.value.row, err.value.column) == (3, "R")


def test_a_malformed_file_is_a_baseline_file_error_too(tmp_path):
    file = tmp_path / "b.tsv"
    file.write_text("LAYER,P,R,F\n0,0.5,0.5\n", encoding="utf-8")
    with pytest.raises(BaselineFileError, match="data row 1: expected 4 columns") as err:
        BERTScore(MINILM, rescale_with_baseline=True, baseline_path=file)
    assert err.value.row == 1
    file.write_text("layer;p;r;f\n", encoding="utf-8")
    with pytest.raises(BaselineFileError, match="header") as err:
        BERTScore(MINILM, rescale_with_baseline=True, baseline_path=file)
    assert err.value.row is None


def test_a_file_saved_with_a_byte_order_mark_is_read(tmp_path):
    """Some editors start UTF-8 files with a byte order mark: the header is still the header."""
    plain = _write(tmp_path / "plain.tsv", bad_layer=-1, column="P", value="")
    marked = tmp_path / "marked.tsv"
    marked.write_bytes(b"\xef\xbb\xbf" + plain.read_bytes())
    assert torch.equal(read_baseline(marked), read_baseline(plain))


def test_a_file_that_is_not_utf8_is_a_baseline_file_error_naming_it(tmp_path):
    file = tmp_path / "b.tsv"
    file.write_bytes(b"LAYER,P,R,F\n0,0.5,0.5,0.5\xff\n")
    with pytest.raises(BaselineFileError, match=rf"Baseline file {re.escape(str(file))} is not UTF-8 text"):
        BERTScore(MINILM, rescale_with_baseline=True, baseline_path=file)


def test_a_folder_is_not_a_baseline_file(tmp_path):
    with pytest.raises(BaselineNotFoundError, match=rf"{re.escape(str(tmp_path))} is a folder, not a file"):
        find_baseline("en", MINILM, tmp_path)


def test_a_model_given_as_a_folder_has_no_packaged_baseline_and_the_error_says_so(tmp_path):
    folder = tmp_path / "my-model"
    (tmp_path / "my-model.tsv").write_text("LAYER,P,R,F\n0,0.5,0.5,0.5\n")  # a joined path would have found this
    with pytest.raises(BaselineNotFoundError, match="none is packaged for a model given as a folder") as err:
        find_baseline("en", str(folder), None)
    assert "baseline_path=" in str(err.value)
