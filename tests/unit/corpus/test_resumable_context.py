"""Resumable runs with a context per pair and with prompts (`score_resumable(..., context=)`, `score --context FILE
--checkpoint DIR`, `score_stream` over (candidate, references, context) triples): a run stopped after some shards and
resumed equals the metric's scores with the same contexts (bit for bit, IDF counted over the references' own tokens),
the contexts are part of the checkpoint's identity (a resume with other contexts, or none, is refused naming them), and
IDF with a reference prompt counts the references' tokens only, as the metric does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from bertscore_tm import BERTScore
from bertscore_tm.corpus.resumable import CheckpointMismatchError, score_resumable, score_stream
from bertscore_tm.errors import ArgumentValueError
from tests.conftest import MINILM, WMT
from tests.unit.corpus.test_resumable import assert_same, failing_after, interrupted_then_resumed, read, run_cli

pytestmark = pytest.mark.usefixtures("one_thread")

PAIRS, SHARD = 12, 4  # three shards


@pytest.fixture(scope="module")
def texts(wmt: dict[str, list[str]]) -> tuple[list[str], list[list[str]], list[str]]:
    """Pairs with one or two references each, and a context per pair (another segment's reference, standing for
    the source), one of them blank."""
    cands, refs = wmt["hyps_long"][:PAIRS], wmt["refs_long"][:PAIRS]
    groups = [[r] if i % 3 else [r, refs[(i + 5) % PAIRS]] for i, r in enumerate(refs)]
    contexts = [wmt["refs_long"][100 + i] for i in range(PAIRS)]
    contexts[7] = ""
    return cands, groups, contexts


def metric_scores(metric: BERTScore, cands: list[str], groups: list[list[str]], context: list[str] | None) -> object:
    metric.update(cands, groups, context=context)
    try:
        return metric.compute_scores()
    finally:
        metric.reset()


@pytest.mark.slow
@pytest.mark.parametrize("idf", [False, True], ids=["plain", "idf"])
def test_a_resumed_run_with_context_equals_the_metric(texts, tmp_path: Path, monkeypatch, idf: bool) -> None:
    cands, groups, contexts = texts
    metric = BERTScore(MINILM, idf=idf)
    expected = metric_scores(metric, cands, groups, contexts)
    failing_after(monkeypatch, 2)
    with pytest.raises(KeyboardInterrupt):
        score_resumable(metric, cands, groups, tmp_path, SHARD, context=contexts)
    monkeypatch.undo()
    calls = failing_after(monkeypatch, 99)
    assert_same(score_resumable(metric, cands, groups, tmp_path, SHARD, context=contexts), expected)
    assert len(calls) == 1  # only the shard not finished before
    without = metric_scores(metric, cands, groups, None)
    assert not bool((without.f1 == expected.f1).all())  # the context does change the scores


@pytest.mark.slow
def test_other_contexts_or_none_are_refused(texts, tmp_path: Path) -> None:
    cands, groups, contexts = texts
    metric = BERTScore(MINILM)
    score_resumable(metric, cands, groups, tmp_path, SHARD, context=contexts)
    manifest = json.loads((tmp_path / "manifest-rank0.json").read_text())
    assert len(manifest["context"]) == PAIRS // SHARD
    other = [*contexts]
    other[9] += " Indeed."
    with pytest.raises(CheckpointMismatchError, match=r"the contexts of inputs 8 to 11 \(shard 2") as err:
        score_resumable(metric, cands, groups, tmp_path, SHARD, context=other)
    assert err.value.what == "context"
    with pytest.raises(CheckpointMismatchError, match=r"the contexts .*'one per pair' there, 'none' here") as err:
        score_resumable(metric, cands, groups, tmp_path, SHARD)
    assert err.value.what == "context"
    score_resumable(metric, cands, groups, tmp_path / "none", SHARD)
    with pytest.raises(CheckpointMismatchError, match=r"'none' there, 'one per pair' here"):
        score_resumable(metric, cands, groups, tmp_path / "none", SHARD, context=contexts)
    with pytest.raises(ValueError, match="one text per pair"):
        score_resumable(metric, cands, groups, tmp_path / "short", SHARD, context=contexts[:-1])


@pytest.mark.slow
def test_idf_with_a_reference_prompt_counts_the_references_tokens_only(texts, tmp_path: Path) -> None:
    """The IDF counts come from the references as the metric encodes them: the prompt's tokens left out, and the
    text cut where the prompt leaves it less of the window (a window of 24 tokens cuts some of these)."""
    cands, groups, _ = texts
    metric = BERTScore(MINILM, idf=True, reference_prompt="passage: ", max_length=24)
    expected = metric_scores(metric, cands, groups, None)
    assert_same(score_resumable(metric, cands, groups, tmp_path, SHARD), expected)


def write_lines(path: Path, lines: list[str]) -> str:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


@pytest.mark.slow
@pytest.mark.parametrize(
    "extra", [["--context"], ["--reference-prompt", "passage: "]], ids=["context", "reference-prompt"]
)
def test_score_cli_resumes_to_the_output_without_checkpoint(tmp_path: Path, monkeypatch, capsys, extra) -> None:
    """`score --idf` with --context FILE (or --reference-prompt) and --checkpoint, killed after one of three shards
    and run again: the very bytes of the run without a checkpoint. A resume with another context file, or none, is
    one line and exit 2."""
    cands, refs = read(WMT / "hyps_long.txt")[:6], read(WMT / "refs_long.txt")[:6]
    contexts = read(WMT / "refs_long.txt")[100:106]
    if extra == ["--context"]:
        extra = ["--context", write_lines(tmp_path / "ctx.txt", contexts)]
    base = ["score", "-c", write_lines(tmp_path / "c.txt", cands), "-r", write_lines(tmp_path / "r.txt", refs)]
    base += ["-m", MINILM, "--idf", "-s", "--format", "json", "--device", "cpu", *extra]
    code, plain = run_cli(base)
    assert code == 0
    resumable = [*base, "--checkpoint", str(tmp_path / "ck"), "--shard-size", "2"]
    assert interrupted_then_resumed(resumable, monkeypatch, 1) == plain
    if extra[0] != "--context":
        return
    capsys.readouterr()
    other = write_lines(tmp_path / "other.txt", [*contexts[:5], "Another source."])
    assert run_cli([other if a == extra[1] else a for a in resumable])[0] == 2
    err = capsys.readouterr().err
    assert "the contexts of inputs 4 to 5" in err and err.count("\n") == 1 and "Traceback" not in err
    without = [a for a in resumable if a not in extra]
    assert run_cli(without)[0] == 2
    err = capsys.readouterr().err
    assert "'one per pair' there, 'none' here" in err and err.count("\n") == 1


def stream_with_contexts(texts) -> list[tuple]:
    """The pairs as a stream of triples, the pair whose context is blank given as a plain pair (no context)."""
    cands, groups, contexts = texts
    return [(c, g, x) if x else (c, g) for c, g, x in zip(cands, groups, contexts, strict=True)]


def concatenated(shards: list) -> object:
    from bertscore_tm.scoring.results import Scores

    assert len({s.hash_code for s in shards}) == 1
    p, r, f, best = (
        torch.cat([getattr(s, n) for s in shards]) for n in ("precision", "recall", "f1", "best_reference")
    )
    return Scores(p, r, f, shards[0].hash_code, best)


@pytest.mark.slow
def test_a_stream_with_contexts_equals_the_metric_and_resumes(texts, tmp_path: Path, monkeypatch) -> None:
    cands, groups, contexts = texts
    metric = BERTScore(MINILM)
    expected = metric_scores(metric, cands, groups, contexts)
    stopped = []
    for scores in score_stream(metric, iter(stream_with_contexts(texts)), tmp_path, SHARD):
        stopped.append(scores)
        if len(stopped) == 2:  # the loop stops halfway (two of three shards done)
            break
    calls = failing_after(monkeypatch, 99)
    resumed = list(score_stream(metric, iter(stream_with_contexts(texts)), tmp_path, SHARD))
    assert len(calls) == 1  # the two finished shards are read back, only the third is scored
    assert_same(concatenated(resumed), expected)
    assert_same(concatenated(stopped), concatenated(resumed[:2]))
    assert resumed[0].hash_code == expected.hash_code and expected.hash_code.endswith("_context")
    fresh = list(score_stream(metric, iter(stream_with_contexts(texts)), tmp_path / "fresh", SHARD))
    assert_same(concatenated(fresh), expected)


@pytest.mark.slow
def test_a_stream_resumed_with_other_contexts_is_refused(texts, tmp_path: Path) -> None:
    cands, groups, contexts = texts
    metric = BERTScore(MINILM)
    list(score_stream(metric, stream_with_contexts(texts), tmp_path, SHARD))
    other = stream_with_contexts((cands, groups, [*contexts[:5], "Another source.", *contexts[6:]]))
    with pytest.raises(CheckpointMismatchError, match=r"shard 1 .*holds other texts or contexts") as err:
        list(score_stream(metric, other, tmp_path, SHARD))
    assert err.value.what == "texts"
    with pytest.raises(CheckpointMismatchError, match="shard 0 "):  # the same pairs without their contexts
        list(score_stream(metric, list(zip(cands, groups, strict=True)), tmp_path, SHARD))


def test_a_stream_item_of_another_shape_is_refused_naming_it(tmp_path: Path) -> None:
    metric = BERTScore(MINILM)
    with pytest.raises(ArgumentValueError, match=r"pairs\[1\] must be \(candidate, reference\(s\)\)") as err:
        list(score_stream(metric, [("a", "b"), ("a",)], tmp_path, SHARD))
    assert err.value.argument == "pairs"
    with pytest.raises(TypeError, match=r"pairs\[5\]\[2\] must be a string, got int") as err:  # its context
        list(score_stream(metric, [("a", "b", "c")] * 5 + [("a", "b", 3)], tmp_path / "t", SHARD))
    assert err.value.argument == "pairs"
