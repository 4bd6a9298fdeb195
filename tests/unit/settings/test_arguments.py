"""Constructor arguments are checked in one place, before any model is loaded: a wrong type is a TypeError and
a value out of range a ValueError, each naming the argument (and what is allowed), the same way for
`BERTScore`, `bert_score` and `score`."""

from __future__ import annotations

import inspect

import pytest
import torch

import bertscore_tm.models.encoder
from bertscore_tm import BERTScore, bert_score, score
from tests.conftest import MINILM

WRONG_TYPES = [
    ("num_layers", 5.5),
    ("num_layers", True),
    ("num_layers", "5"),
    ("rescale_with_baseline", "no"),
    ("all_layers", "yes"),
    ("max_length", 2.5),
    ("idf", 1),
    ("batch_size", 2.5),
    ("return_hash", "yes"),
    ("verbose", 1),
    ("reduction", 1),
    ("output", 3),
    ("model_dtype", "float16"),
    ("device", 3.0),
    ("lang", 5),
    ("model_name_or_path", 5),
    ("embedding_cache_mb", 1.5),
]

OUT_OF_RANGE = [
    ("num_layers", -1, r"num_layers must be an integer >= 0"),
    ("batch_size", 0, r"batch_size must be an integer >= 1"),
    ("max_length", 1, r"max_length must be an integer >= 2"),
    ("reduction", "sum", r"reduction must be one of 'none', 'mean'"),
    ("output", "accuracy", r"output must be one of 'precision', 'recall', 'f1'"),
    ("model_dtype", torch.int8, r"model_dtype must be one of torch.float32, torch.bfloat16, torch.float16"),
    ("device", "no-such-device", r"device='no-such-device' is not a torch device"),
    ("model_name_or_path", " ", r"model_name_or_path must not be blank"),
    ("embedding_cache_mb", -1, r"embedding_cache_mb must be an integer >= 0"),
]


@pytest.fixture
def no_model_loading(monkeypatch):
    """Loading a model fails the test: every check below must come before it."""

    def loaded(*args, **kwargs):
        raise AssertionError("a model was looked up before the arguments were checked")

    monkeypatch.setattr(bertscore_tm.models.encoder, "locate_model", loaded)


def _settings(argument, value):
    settings = {"num_layers": 5, argument: value}
    if argument == "model_name_or_path":
        return {"num_layers": 5}, value
    return settings, MINILM


@pytest.mark.parametrize(("argument", "value"), WRONG_TYPES, ids=[f"{a}={v!r}" for a, v in WRONG_TYPES])
def test_a_wrong_type_is_a_type_error_naming_the_argument(no_model_loading, argument, value):
    settings, model = _settings(argument, value)
    with pytest.raises(TypeError, match=rf"^{argument} must be") as err:
        BERTScore(model, **settings)
    assert err.value.argument == argument
    with pytest.raises(TypeError, match=rf"^{argument} must be"):
        bert_score(["a"], ["b"], model, **settings)


@pytest.mark.parametrize(("argument", "value", "message"), OUT_OF_RANGE, ids=[f"{a}={v!r}" for a, v, _ in OUT_OF_RANGE])
def test_a_value_out_of_range_is_a_value_error_naming_argument_and_range(no_model_loading, argument, value, message):
    settings, model = _settings(argument, value)
    with pytest.raises(ValueError, match=message) as err:
        BERTScore(model, **settings)
    assert err.value.argument == argument


@pytest.mark.parametrize(
    ("argument", "value"),
    [("num_layers", 5.5), ("idf", "no"), ("rescale_with_baseline", "no"), ("all_layers", "yes"), ("batch_size", "8")],
)
def test_score_refuses_the_same_types_before_loading(no_model_loading, argument, value):
    with pytest.raises(TypeError, match=rf"^{argument} must be"):
        score(["a"], ["b"], model_type=MINILM, **{"num_layers": 5, argument: value})


def test_score_names_its_own_model_argument(no_model_loading):
    with pytest.raises(ValueError, match="Either lang or model_type") as err:
        score(["a"], ["b"])
    assert err.value.argument == "model_type"


def test_baseline_path_without_rescaling_is_refused_naming_both(no_model_loading, tmp_path):
    """It used to be silently ignored: the scores came back unrescaled."""
    file = tmp_path / "baseline.tsv"
    file.write_text("LAYER,P,R,F\n0,0.5,0.5,0.5\n")
    for call in (
        lambda: BERTScore(MINILM, baseline_path=file),
        lambda: bert_score(["a"], ["b"], MINILM, baseline_path=file),
        lambda: score(["a"], ["b"], model_type=MINILM, num_layers=5, baseline_path=file),
    ):
        with pytest.raises(ValueError, match=r"baseline_path=.*rescale_with_baseline") as err:
            call()
        assert err.value.argument == "baseline_path" and err.value.others == ("rescale_with_baseline",)


def test_return_hash_with_a_single_output_is_refused(no_model_loading):
    with pytest.raises(ValueError, match="return_hash needs the dict output"):
        BERTScore(MINILM, output="f1", return_hash=True)


def test_every_constructor_argument_has_a_rule():
    from bertscore_tm.settings.arguments import RULES

    parameters = inspect.signature(BERTScore.__init__).parameters
    ours = {name for name, p in parameters.items() if name != "self" and p.kind is not p.VAR_KEYWORD}
    assert ours == set(RULES)


def test_the_settings_declaration_is_the_one_source_of_defaults():
    """The Metric's signature, the scoring core and the command line take each default from `SETTINGS`."""
    import torch

    from bertscore_tm.cli import build_parser
    from bertscore_tm.settings.arguments import SETTINGS, default, settings_table
    from bertscore_tm.settings.config import Config

    def as_declared(value: object) -> object:
        return str(value).removeprefix("torch.") if isinstance(value, torch.dtype) else value

    parameters = inspect.signature(BERTScore.__init__).parameters
    assert list(SETTINGS) == [n for n, p in parameters.items() if n != "self" and p.kind is not p.VAR_KEYWORD]
    assert {n: as_declared(parameters[n].default) for n in SETTINGS} == {n: s.default for n, s in SETTINGS.items()}
    built = Config.of({}).arguments()
    assert {n: as_declared(v) for n, v in built.items()} == {n: s.default for n, s in SETTINGS.items()}
    args = build_parser().parse_args(["score", "-c", "c", "-r", "r"])
    assert (args.lang, args.long_texts, args.dtype) == (default("lang"), default("long_texts"), default("model_dtype"))
    table = settings_table()
    assert all(f"| `{name}` |" in table for name in SETTINGS)


def test_literal_types_name_the_string_choices():
    from typing import get_type_hints

    from bertscore_tm.settings.arguments import OUTPUTS, REDUCTIONS

    hints = get_type_hints(BERTScore.__init__)
    assert "Literal['none', 'mean']" in str(hints["reduction"]) and REDUCTIONS == ("none", "mean")
    assert "Literal['precision', 'recall', 'f1', 'f_beta']" in str(hints["output"])
    assert OUTPUTS == ("precision", "recall", "f1", "f_beta")


def test_integer_types_that_are_integers_are_fine():
    import numpy as np

    from bertscore_tm.settings.arguments import validate_arguments

    validate_arguments({"num_layers": np.int64(5), "batch_size": 3, "max_length": 2, "device": torch.device("cpu")})


def test_the_settings_object_groups_every_setting_of_the_table_once():
    from bertscore_tm.settings.arguments import SETTINGS
    from bertscore_tm.settings.config import groups

    names = [name for group in groups().values() for name in group]
    assert sorted(names) == sorted(SETTINGS) and len(names) == len(set(names))


def test_the_settings_object_refuses_a_name_the_table_lacks_naming_it(no_model_loading):
    from bertscore_tm.errors import ArgumentTypeError
    from bertscore_tm.settings.config import Config

    with pytest.raises(
        ArgumentTypeError, match="bert_score\\(\\) got an unexpected keyword argument 'num_layer'"
    ) as err:
        Config.of({"num_layer": 5}, caller="bert_score")
    assert err.value.argument == "num_layer"
    with pytest.raises(TypeError, match="unexpected keyword argument 'num_layer'"):
        bert_score(["a"], ["b"], MINILM, num_layer=5)


def test_a_changed_setting_is_checked_again():
    from bertscore_tm.settings.config import Config

    config = Config.of({"num_layers": 5})
    assert config.replace(idf=True).scoring.idf is True and config.scoring.idf is False
    with pytest.raises(ValueError, match="batch_size must be an integer >= 1"):
        config.replace(batch_size=0)


@pytest.mark.slow
def test_a_metric_from_a_checked_config_equals_one_from_its_arguments():
    from bertscore_tm.settings.config import Config

    config = Config.of({"model_name_or_path": MINILM, "idf": True})
    a, b = BERTScore.from_config(config), BERTScore(MINILM, idf=True)
    for metric in (a, b):
        metric.update(["The cat sat.", "It rained."], ["A cat was sitting.", "Rain fell all day."])
    assert a.hash_code == b.hash_code
    got, want = a.compute(), b.compute()
    assert all(torch.equal(got[k], want[k]) for k in ("precision", "recall", "f1"))
