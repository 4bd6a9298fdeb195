"""A model directory whose tokenizer files are missing or belong to another model fails when the metric is
built, saying what is missing or what does not fit. (It used to load a 5-token vocabulary, turn every text into
[UNK]s and score unrelated texts at F1 0.99.)"""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path

import pytest

from bertscore_tm import BERTScore
from bertscore_tm.errors import ModelSetupError

UNRELATED = (["The cat sat on the mat."], ["Stock markets fell sharply today."])


def _copy(minilm_path: str, target: Path, drop: tuple[str, ...] = (), vocab: list[str] | None = None) -> Path:
    """The packaged MiniLM's directory, weights linked, tokenizer files copied but for `drop`."""
    target.mkdir()
    source = Path(minilm_path)
    (target / "model.safetensors").symlink_to(source / "model.safetensors")
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json"):
        if name not in drop:
            shutil.copy(source / name, target / name)
    if vocab is not None:
        (target / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    return target


def _build(path: Path) -> BERTScore:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return BERTScore(path, num_layers=5)


def test_a_complete_copy_scores_as_the_packaged_model(minilm_path, tmp_path):
    copy = _build(_copy(minilm_path, tmp_path / "m"))
    packaged = _build(Path(minilm_path))
    for metric in (copy, packaged):
        metric.update(*UNRELATED)
    assert copy.compute()["f1"].tolist() == packaged.compute()["f1"].tolist()
    assert copy.compute()["f1"].item() < 0.5


@pytest.mark.parametrize(
    "drop",
    [
        ("tokenizer.json", "vocab.txt"),
        ("tokenizer.json", "vocab.txt", "tokenizer_config.json", "special_tokens_map.json"),
    ],
    ids=["vocabulary files", "every tokenizer file"],
)
def test_missing_tokenizer_files_are_named(minilm_path, tmp_path, drop):
    path = _copy(minilm_path, tmp_path / "m", drop=drop)
    with pytest.raises(ModelSetupError, match=r"no tokenizer files.*tokenizer\.json.*vocab\.txt") as err:
        _build(path)
    assert err.value.path == str(path) and err.value.argument == "model_name_or_path"
    assert isinstance(err.value, ValueError)


def test_an_almost_empty_vocabulary_is_refused(minilm_path, tmp_path):
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    path = _copy(minilm_path, tmp_path / "m", drop=("tokenizer.json",), vocab=specials)
    with pytest.raises(ModelSetupError, match=r"only 5 tokens.*30522"):
        _build(path)


def test_a_vocabulary_larger_than_the_embedding_table_is_refused(minilm_path, tmp_path):
    words = Path(minilm_path, "vocab.txt").read_text(encoding="utf-8").splitlines()
    path = _copy(minilm_path, tmp_path / "m", drop=("tokenizer.json",), vocab=words + [f"extra{i}" for i in range(100)])
    with pytest.raises(ModelSetupError, match=r"30622 tokens.*embedding table has 30522 rows"):
        _build(path)


def test_a_model_not_on_this_machine_is_said_first_even_without_a_layer():
    """Not "no default layer is known" first, then, once num_layers is given, that the model is missing."""
    from bertscore_tm.errors import ModelNotFoundError

    with pytest.raises(ModelNotFoundError, match="'nonexistent/model-xyz' is not on this machine"):
        BERTScore("nonexistent/model-xyz")
