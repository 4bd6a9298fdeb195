"""The user layer table (BERTSCORE_TM_LAYERS or layer_table=): consulted before configs/models.json, and a
malformed table is a clear error naming its file."""

from __future__ import annotations

import json

import pytest

from bertscore_tm.models.registry import (
    LAYER_TABLE_ENV,
    PACKAGED_MINILM,
    LayerTableError,
    add_to_layer_table,
    default_model,
    default_num_layers,
    is_known_model,
    user_layer_table,
)


@pytest.fixture(autouse=True)
def no_table_from_outside(monkeypatch):
    monkeypatch.delenv(LAYER_TABLE_ENV, raising=False)


def write(path, content):
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content if isinstance(content, str) else json.dumps(content), encoding="utf-8")
    return path


def test_built_in_tables_unchanged_without_a_user_table():
    assert default_num_layers("roberta-large") == 17 and is_known_model("roberta-large")
    assert default_num_layers(PACKAGED_MINILM) == 5
    assert not is_known_model("my-org/my-encoder")
    assert default_model("en") == "roberta-large"
    with pytest.raises(ValueError, match=f"num_layers=<int> .*{LAYER_TABLE_ENV}"):
        default_num_layers("my-org/my-encoder")


def test_environment_table_is_consulted_first(tmp_path, monkeypatch):
    table = write(tmp_path / "layers.json", {"my-org/my-encoder": 3, "roberta-large": 20})
    monkeypatch.setenv(LAYER_TABLE_ENV, str(table))
    assert is_known_model("my-org/my-encoder") and default_num_layers("my-org/my-encoder") == 3
    assert default_num_layers("roberta-large") == 20  # the user's entry wins over the built-in one
    assert default_num_layers("roberta-base") == 10  # others still come from configs/models.json
    other = write(tmp_path / "other.json", {"my-org/my-encoder": 0})
    assert default_num_layers("my-org/my-encoder", layer_table=other) == 0  # the argument replaces the variable
    assert default_num_layers("roberta-large", layer_table=other) == 17
    write(table, {"my-org/my-encoder": 4})  # edited: read again
    assert default_num_layers("my-org/my-encoder") == 4


def test_keys_match_the_same_folder(tmp_path, monkeypatch):
    (tmp_path / "models" / "tuned").mkdir(parents=True)
    table = write(tmp_path / "models" / "layers.json", {"tuned": 2})  # relative to the table's folder
    assert default_num_layers(str(tmp_path / "models" / "tuned"), layer_table=table) == 2
    monkeypatch.chdir(tmp_path)
    assert default_num_layers("models/tuned/", layer_table=table) == 2
    assert not is_known_model("tuned-elsewhere", layer_table=table)
    write(table, {str(tmp_path / "models" / "tuned"): 6})
    assert default_num_layers("./models/tuned", layer_table=table) == 6


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ('{"a": 3,', "not valid JSON"),
        ("[1, 2]", "must be a JSON object"),
        ({"a": -1}, "layer -1: a layer is an integer >= 0"),
        ({"a": 2.0}, "layer 2.0"),
        ({"a": "7"}, "layer '7'"),
        ({"a": True}, "layer True"),
        ({" ": 1}, "empty model name"),
        ('{"a": 1, "a": 2}', "names model 'a' twice"),
        (b'{"caf\xe9": 1}', "cannot be used: 'utf-8' codec can't decode"),
    ],
)
def test_malformed_tables_name_the_file_and_the_problem(tmp_path, monkeypatch, content, problem):
    table = write(tmp_path / "bad.json", content)
    monkeypatch.setenv(LAYER_TABLE_ENV, str(table))
    for call in (lambda: default_num_layers("a"), lambda: is_known_model("roberta-large")):
        with pytest.raises(LayerTableError, match=problem) as err:
            call()
        assert str(table) in str(err.value) and err.value.path == str(table.resolve())
        assert isinstance(err.value, ValueError)


def test_missing_table_is_an_error(tmp_path, monkeypatch):
    monkeypatch.setenv(LAYER_TABLE_ENV, str(tmp_path / "nowhere.json"))
    with pytest.raises(LayerTableError, match=f"nowhere.json \\({LAYER_TABLE_ENV}=.*does not exist"):
        default_num_layers("roberta-large")
    with pytest.raises(LayerTableError, match="is not a file"):
        user_layer_table(tmp_path)
    monkeypatch.setenv(LAYER_TABLE_ENV, "  ")  # set but empty: no table
    assert user_layer_table() == {} and default_num_layers("roberta-large") == 17


def test_add_to_layer_table(tmp_path):
    path = tmp_path / "layers.json"
    add_to_layer_table(path, "my-org/a", 3)
    add_to_layer_table(path, "my-org/b", 0)
    add_to_layer_table(path, "my-org/a", 4)
    assert json.loads(path.read_text()) == {"my-org/a": 4, "my-org/b": 0}
    assert [p.name for p in tmp_path.iterdir()] == ["layers.json"]
    with pytest.raises(ValueError, match="layer") as err:  # the package's ArgumentValueError, naming it
        add_to_layer_table(path, "my-org/a", -2)
    assert err.value.argument == "layer"
    with pytest.raises(ValueError, match="blank"):
        add_to_layer_table(path, " ", 2)
    assert json.loads(path.read_text()) == {"my-org/a": 4, "my-org/b": 0}


def test_the_metric_takes_its_layer_from_the_table(tmp_path, monkeypatch, minilm_path):
    """A model tuned and tabled needs no num_layers, by name or by folder."""
    from bertscore_tm import BERTScore

    table = write(tmp_path / "layers.json", {PACKAGED_MINILM: 3, minilm_path: 2})
    monkeypatch.setenv(LAYER_TABLE_ENV, str(table))
    metric = BERTScore(PACKAGED_MINILM)
    assert metric.num_layers == 3 and "_L3_" in metric.hash_code
    assert BERTScore(minilm_path).num_layers == 2  # a folder the built-in table does not know
