"""torchmetrics' argument names are taken with their meaning (`bertscore_tm.settings.peers`): its docstring's
calls run with the import changed (the model swapped for the packaged MiniLM, as nothing is downloaded here) and
give bert-score's scores run unpadded."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from bertscore_tm import bert_score
from bertscore_tm.errors import ArgumentTypeError, ArgumentValueError
from tests.conftest import MINILM, REPO

BASELINE = REPO / "baselines" / "en" / "sentence-transformers" / "all-MiniLM-L6-v2.tsv"
PREDS = ["hello there", "general kenobi"]


@pytest.mark.parametrize(
    "target",
    [["hello there", "master kenobi"], [["hello there", "master kenobi"], ["hello there", "master kenobi"]]],
    ids=["one-reference", "two-references"],
)
def test_torchmetrics_docstring_calls_give_the_reference_scores(reference_score, target) -> None:
    got = bert_score(PREDS, target, model_name_or_path=MINILM, num_layers=5)
    assert sorted(got) == ["f1", "precision", "recall"]
    p, r, f = reference_score(PREDS, target, batch_size=1)
    for ours, theirs in zip((got["precision"], got["recall"], got["f1"]), (p, r, f), strict=True):
        torch.testing.assert_close(ours, theirs, atol=1e-5, rtol=0)


def test_user_forward_fn_has_torchmetrics_signature(minilm_path: str) -> None:
    from transformers import AutoModel, AutoTokenizer

    model, tokenizer = AutoModel.from_pretrained(minilm_path), AutoTokenizer.from_pretrained(minilm_path)
    seen: list[list[str]] = []

    def forward(model: torch.nn.Module, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        seen.append(sorted(batch))
        return model(batch["input_ids"], attention_mask=batch["attention_mask"]).last_hidden_state

    theirs = bert_score(
        PREDS, PREDS[::-1], model=model, user_tokenizer=tokenizer, user_forward_fn=forward, num_layers=6
    )
    ours = bert_score(PREDS, PREDS[::-1], model=model, tokenizer=tokenizer, num_layers=6)
    assert seen and all(keys == ["attention_mask", "input_ids"] for keys in seen)
    torch.testing.assert_close(theirs["f1"], ours["f1"], atol=1e-6, rtol=0)


def test_baseline_url_of_a_local_file_is_that_file() -> None:
    kwargs = {"model_name_or_path": MINILM, "rescale_with_baseline": True}
    by_url = bert_score(PREDS, PREDS[::-1], baseline_url=BASELINE.as_uri(), **kwargs)
    by_path = bert_score(PREDS, PREDS[::-1], baseline_path=str(BASELINE), **kwargs)
    assert torch.equal(by_url["f1"], by_path["f1"])


def test_a_remote_baseline_url_is_refused_while_downloads_are_off() -> None:
    with pytest.raises(ArgumentValueError, match="downloads are off") as err:
        bert_score(PREDS, PREDS, MINILM, rescale_with_baseline=True, baseline_url="https://example.org/b.csv")
    assert err.value.argument == "baseline_url"


@pytest.mark.slow
def test_truncation_and_num_threads_keep_their_meaning() -> None:
    window = bert_score(PREDS, PREDS, MINILM, truncation=False, return_hash=True)["hash"]
    cut = bert_score(PREDS, PREDS, MINILM, truncation=True, return_hash=True)["hash"]
    assert "long-texts=window" in str(window) and "long-texts" not in str(cut)
    before = torch.get_num_threads()
    assert bert_score(PREDS, PREDS, MINILM, num_threads=0)["f1"].shape == (2,)  # torchmetrics' default
    bert_score(PREDS, PREDS, MINILM, num_threads=1)
    assert torch.get_num_threads() == before  # set for the call only


@pytest.mark.parametrize(
    ("kwargs", "error", "argument"),
    [
        ({"user_tokenizer": object(), "tokenizer": object()}, ArgumentValueError, "user_tokenizer"),
        ({"user_forward_fn": 3}, ArgumentTypeError, "user_forward_fn"),
        ({"truncation": "yes"}, ArgumentTypeError, "truncation"),
        ({"baseline_url": 5, "rescale_with_baseline": True}, ArgumentTypeError, "baseline_url"),
        ({"baseline_url": "ftp://x/b.csv", "rescale_with_baseline": True}, ArgumentValueError, "baseline_url"),
    ],
    ids=["both-tokenizers", "forward-not-callable", "truncation-not-bool", "url-not-str", "url-scheme"],
)
def test_mistakes_in_torchmetrics_arguments_name_them(kwargs, error, argument, tmp_path: Path) -> None:
    with pytest.raises(error) as err:
        bert_score(PREDS, PREDS, MINILM, **kwargs)
    assert err.value.argument == argument


@pytest.mark.parametrize(
    "target",
    [["hello there", "master kenobi"], [["hello there", "master kenobi"], ["hello there", "master kenobi"]]],
    ids=["one-reference", "two-references"],
)
def test_torchmetrics_class_docstring_calls_give_the_reference_scores(reference_score, target) -> None:
    from bertscore_tm import BERTScore

    bertscore = BERTScore(MINILM, num_layers=5)  # torchmetrics' example, the model swapped for the packaged one
    got = bertscore(PREDS, target)  # forward(): the batch's value
    p, r, f = reference_score(PREDS, target, batch_size=1)
    for ours, theirs in zip((got["precision"], got["recall"], got["f1"]), (p, r, f), strict=True):
        torch.testing.assert_close(ours, theirs, atol=1e-5, rtol=0)


def test_the_metric_takes_torchmetrics_names_too(minilm_path: str) -> None:
    from transformers import AutoModel, AutoTokenizer

    from bertscore_tm import BERTScore

    model, tokenizer = AutoModel.from_pretrained(minilm_path), AutoTokenizer.from_pretrained(minilm_path)

    def forward(model: torch.nn.Module, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        return model(batch["input_ids"], attention_mask=batch["attention_mask"]).last_hidden_state

    theirs = BERTScore(model=model, user_tokenizer=tokenizer, user_forward_fn=forward, num_layers=6, num_threads=0)
    ours = BERTScore(model=model, tokenizer=tokenizer, num_layers=6)
    for metric in (theirs, ours):
        metric.update(PREDS, PREDS[::-1])
    torch.testing.assert_close(theirs.compute()["f1"], ours.compute()["f1"], atol=1e-6, rtol=0)
    rescaled = BERTScore(MINILM, rescale_with_baseline=True, baseline_url=BASELINE.as_uri())
    assert rescaled.baseline is not None
