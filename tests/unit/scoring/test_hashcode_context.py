"""The hash code names a per-pair context (issue 39): scores of texts encoded with a context are not those of the
texts alone, so their code gains ``_context`` wherever they are reported (the Metric, from its state, through
forward(), merge_state(), reset(), state_dict() and DDP; the functions; resumable runs; explanations; the command
line), and only there: the default code is unchanged and a blank context, which adds nothing, adds nothing to it."""

from __future__ import annotations

import json

import pytest
import torch

from bertscore_tm import BERTScore, bert_score, score
from bertscore_tm.corpus.resumable import score_resumable
from tests.conftest import MINILM
from tests.spawn import process_group, run_ranks, save_rank

CANDS = ["The cat sat on the mat.", "Heavy rain is expected tomorrow."]
REFS = ["A cat was sitting on the mat.", "Tomorrow it will rain a lot."]
CONTEXT = ["Describe where the animal is.", "What is the weather forecast for Tuesday?"]


@pytest.fixture(scope="module")
def plain_code() -> str:
    return BERTScore(MINILM).hash_code


def test_the_flag_renders_only_when_set(plain_code: str) -> None:
    from dataclasses import replace

    metric = BERTScore(MINILM)
    assert metric.signature.context is False and metric.signature.format() == plain_code
    assert replace(metric.signature, context=True).format() == plain_code + "_context"
    assert "context" not in metric.settings()  # data, not a setting ranks must share


def test_the_metric_names_a_context_once_an_update_carried_one(plain_code: str) -> None:
    metric = BERTScore(MINILM, return_hash=True)
    metric.update(CANDS, REFS)
    assert metric.hash_code == plain_code and metric.compute()["hash"] == plain_code
    metric.update(CANDS, REFS, context=["", "  "])  # blank contexts add nothing: the scores are the texts'
    assert metric.hash_code == plain_code
    metric.update(CANDS, REFS, context=CONTEXT)
    assert metric.hash_code == plain_code + "_context"
    assert metric.compute()["hash"] == metric.compute_scores().hash_code == plain_code + "_context"
    assert metric.signature.context is True
    assert metric.pairwise(CANDS, REFS)["hash"] == plain_code  # all pairs take no context: the setting's code
    metric.reset()
    assert metric.hash_code == plain_code


@pytest.mark.slow
def test_forward_merge_state_and_state_dict_keep_the_flag(plain_code: str) -> None:
    stepped = BERTScore(MINILM, return_hash=True)
    assert stepped(CANDS, REFS, context=CONTEXT)["hash"] == plain_code + "_context"  # the batch's own code
    stepped(CANDS, REFS)  # a later batch without a context leaves the accumulated flag on
    assert stepped.hash_code == plain_code + "_context"

    merged = BERTScore(MINILM)
    merged.update(CANDS, REFS)
    merged.merge_state(stepped)
    assert merged.hash_code == plain_code + "_context"
    into_plain = BERTScore(MINILM)
    into_plain.update(CANDS, REFS)
    into_plain.merge_state(BERTScore(MINILM))
    assert into_plain.hash_code == plain_code

    stepped.persistent(True)
    restored = BERTScore(MINILM)
    restored.load_state_dict(stepped.state_dict())
    assert restored.hash_code == plain_code + "_context"


@pytest.mark.slow
def test_the_functions_and_resumable_runs_name_it(plain_code: str, tmp_path) -> None:
    assert bert_score(CANDS, REFS, MINILM, context=CONTEXT, return_hash=True)["hash"] == plain_code + "_context"
    assert bert_score(CANDS, REFS, MINILM, return_hash=True)["hash"] == plain_code
    _, code = score(CANDS, REFS, MINILM, context=CONTEXT, return_hash=True, use_fast_tokenizer=True)
    assert code == plain_code + "_context"
    _, blank = score(CANDS, REFS, MINILM, context=["", ""], return_hash=True, use_fast_tokenizer=True)
    assert blank == plain_code
    metric = BERTScore(MINILM)
    resumed = score_resumable(metric, CANDS, REFS, tmp_path / "with", context=CONTEXT)
    assert resumed.hash_code == plain_code + "_context"
    assert score_resumable(metric, CANDS, REFS, tmp_path / "without").hash_code == plain_code
    manifest = json.loads((tmp_path / "with" / "manifest-rank0.json").read_text())
    assert manifest["hash_code"] == plain_code  # the setting; the contexts are recorded apart, by digest


def test_an_explanation_with_a_context_names_it(plain_code: str) -> None:
    metric = BERTScore(MINILM)
    assert metric.explain(CANDS[0], REFS[0], context=CONTEXT[0]).hash_code == plain_code + "_context"
    assert metric.explain(CANDS[0], REFS[0]).hash_code == plain_code


@pytest.mark.slow
def test_the_command_line_prints_the_code_with_the_context(tmp_path, capsys, plain_code: str) -> None:
    from bertscore_tm.cli import main

    files = {}
    for name, lines in (("c", CANDS), ("r", REFS), ("x", CONTEXT)):
        files[name] = tmp_path / f"{name}.txt"
        files[name].write_text("\n".join(lines) + "\n")
    argv = ["score", "-c", str(files["c"]), "-r", str(files["r"]), "-m", MINILM]
    assert main(argv) == 0
    assert capsys.readouterr().out.split(" P: ")[0] == plain_code
    for extra in ([], ["--checkpoint", str(tmp_path / "ckpt")]):
        assert main([*argv, "--context", str(files["x"]), *extra]) == 0
        assert capsys.readouterr().out.split(" P: ")[0] == plain_code + "_context"
    assert main([*argv, "--context", str(files["x"]), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["hash"] == plain_code + "_context"


def _context_worker(rank: int, port: int, out_dir: str) -> None:
    with process_group(rank, port, world=2):
        metric = BERTScore(MINILM, num_layers=3, return_hash=True)
        if rank == 0:  # only rank 0's pair has a context: the gathered scores were made with one
            metric.update(CANDS[:1], REFS[:1], context=CONTEXT[:1])
        else:
            metric.update(CANDS[1:], REFS[1:])
        result = metric.compute()
        save_rank(out_dir, rank, {"hash": result["hash"], "code": metric.hash_code, "f1": result["f1"]})


@pytest.mark.slow
def test_under_ddp_every_rank_names_a_context_any_rank_had() -> None:
    ranks = run_ranks(_context_worker, world=2)
    alone = BERTScore(MINILM, num_layers=3)
    alone.update(CANDS[:1], REFS[:1], context=CONTEXT[:1])
    alone.update(CANDS[1:], REFS[1:])
    expected = alone.compute()["f1"]
    for rank in ranks:
        assert rank["hash"] == rank["code"] == alone.hash_code and alone.hash_code.endswith("_context")
        assert torch.equal(rank["f1"], expected)
