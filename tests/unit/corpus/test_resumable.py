"""Resumable corpus runs (`bertscore_tm.corpus.resumable`, issue 26 item 1): a run stopped after some shards (an
exception, a real SIGKILL) and run again gives exactly the scores of an uninterrupted run; a checkpoint of other
texts or another setting is refused, naming what differs; a torn shard is scored again; ``pairwise
--checkpoint`` resumes to the same output bytes."""

from __future__ import annotations

import inspect
import io
import json
import os
import signal
import subprocess
import sys
import time
from contextlib import redirect_stdout
from pathlib import Path

import numpy as np
import pytest
import torch

from bertscore_tm import BERTScore
from bertscore_tm.cli import main
from bertscore_tm.corpus import resumable
from bertscore_tm.corpus.resumable import CheckpointMismatchError, score_resumable
from tests.conftest import MINILM, REPO, WMT

pytestmark = pytest.mark.usefixtures("one_thread")

PAIRS, SHARD = 24, 6  # four shards


@pytest.fixture(scope="module")
def texts(wmt: dict[str, list[str]]) -> tuple[list[str], list[list[str]]]:
    """Pairs with one or two references each (the second: another pair's reference), so best-of counts."""
    cands, refs = wmt["hyps_long"][:PAIRS], wmt["refs_long"][:PAIRS]
    groups = [[r] if i % 3 else [r, refs[(i + 7) % PAIRS]] for i, r in enumerate(refs)]
    return cands, groups


@pytest.fixture(scope="module")
def plain(texts: tuple[list[str], list[list[str]]]) -> tuple[BERTScore, object]:
    """A plain metric and its uninterrupted scores, from the metric itself."""
    metric = BERTScore(MINILM)
    metric.update(*texts)
    expected = metric.compute_scores()
    metric.reset()
    return metric, expected


@pytest.fixture(scope="module", params=[False, True], ids=["plain", "idf"])
def setting(request: pytest.FixtureRequest, texts: tuple[list[str], list[list[str]]]) -> tuple[BERTScore, object]:
    """A metric (plain, or IDF counted over the references) and its uninterrupted scores, from the metric itself."""
    if not request.param:
        return request.getfixturevalue("plain")
    metric = BERTScore(MINILM, idf=True)
    metric.update(*texts)
    expected = metric.compute_scores()
    metric.reset()
    return metric, expected


def assert_same(a: object, b: object) -> None:
    for name in ("precision", "recall", "f1", "best_reference"):
        assert torch.equal(getattr(a, name), getattr(b, name)), name


def failing_after(monkeypatch: pytest.MonkeyPatch, k: int) -> list[int]:
    """Make the (k + 1)-th shard scored raise, as a kill inside the loop would stop it; returns the call log."""
    calls: list[int] = []
    real = resumable._score_tokens

    def scoring(*args: object, **kwargs: object) -> torch.Tensor:
        calls.append(1)
        if len(calls) > k:
            raise KeyboardInterrupt("killed")
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(resumable, "_score_tokens", scoring)
    return calls


@pytest.mark.slow
def test_uninterrupted_equals_the_metric(setting, texts, tmp_path: Path) -> None:
    metric, expected = setting
    got = score_resumable(metric, *texts, tmp_path, shard_size=SHARD)
    assert_same(got, expected)
    shards = sorted(tmp_path.glob("rank0-shard*.npy"))
    assert len(shards) == PAIRS // SHARD
    assert np.load(shards[0]).shape == (SHARD, 1, 4)
    manifest = json.loads((tmp_path / "manifest-rank0.json").read_text())
    assert manifest["hash_code"] == metric.hash_code and manifest["world_size"] == 1
    assert (manifest["idf_counts"] is not None) == metric.idf
    assert_same(score_resumable(metric, *texts, tmp_path, shard_size=SHARD), expected)  # all read back


@pytest.mark.slow
@pytest.mark.parametrize("k", [1, 3])
def test_resume_after_an_interruption(setting, texts, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, k: int) -> None:
    metric, expected = setting
    failing_after(monkeypatch, k)
    with pytest.raises(KeyboardInterrupt):
        score_resumable(metric, *texts, tmp_path, shard_size=SHARD)
    assert len(list(tmp_path.glob("rank0-shard*.npy"))) == k
    assert not list(tmp_path.glob(".*.tmp"))  # no half-written file left behind
    monkeypatch.undo()
    assert_same(score_resumable(metric, *texts, tmp_path, shard_size=SHARD), expected)


@pytest.mark.slow
def test_a_torn_shard_is_scored_again(plain, texts, tmp_path: Path) -> None:
    metric, expected = plain
    score_resumable(metric, *texts, tmp_path, shard_size=SHARD)
    torn = tmp_path / "rank0-shard000002.npy"
    torn.write_bytes(torn.read_bytes()[:100])
    (tmp_path / "rank0-shard000003.npy").write_bytes(b"")
    with pytest.warns(UserWarning, match="incomplete or damaged") as warned:
        assert_same(score_resumable(metric, *texts, tmp_path, shard_size=SHARD), expected)
    assert sorted(str(w.message).split()[2][-10:] for w in warned) == ["000002.npy", "000003.npy"]
    assert np.load(torn).shape == (SHARD, 1, 4)


def other_numbers(path: Path) -> None:
    """Replace a shard file by a well-formed one of the same shape with other numbers (as a copy from another
    run or a hand edit would): only its bytes tell."""
    array = np.load(path)
    np.save(path, (array * 0.5).astype(array.dtype), allow_pickle=False)


@pytest.mark.slow
def test_a_shard_with_other_numbers_is_noticed_and_scored_again(plain, texts, tmp_path: Path) -> None:
    metric, expected = plain
    score_resumable(metric, *texts, tmp_path, shard_size=SHARD)
    manifest = json.loads((tmp_path / "manifest-rank0.json").read_text())
    assert sorted(manifest["digests"]) == [f"rank0-shard{k:06d}.npy" for k in range(PAIRS // SHARD)]
    other_numbers(tmp_path / "rank0-shard000001.npy")
    with pytest.warns(UserWarning, match="shard000001.npy is not the file this run wrote") as warned:
        assert_same(score_resumable(metric, *texts, tmp_path, shard_size=SHARD), expected)
    assert len(warned) == 1
    assert_same(score_resumable(metric, *texts, tmp_path, shard_size=SHARD), expected)  # whole again: no warning


@pytest.mark.slow
def test_a_stream_shard_and_a_matrix_shard_with_other_numbers_are_scored_again(plain, texts, tmp_path: Path) -> None:
    metric, expected = plain
    list(resumable.score_stream(metric, stream_of(texts), tmp_path / "s", shard_size=SHARD))
    other_numbers(next((tmp_path / "s").glob("rank0-shard000002-*.npy")))
    with pytest.warns(UserWarning, match="not the file this run wrote"):
        again = list(resumable.score_stream(metric, stream_of(texts), tmp_path / "s", shard_size=SHARD))
    assert torch.equal(torch.cat([s.f1 for s in again]), expected.f1)
    cands, refs = texts[0][:8], [g[0] for g in texts[1][:5]]
    whole = resumable.pairwise_resumable(metric, cands, refs, tmp_path / "p", shard_size=3)
    other_numbers(tmp_path / "p" / "rank0-shard000000.npy")
    with pytest.warns(UserWarning, match="not the file this run wrote"):
        assert torch.equal(resumable.pairwise_resumable(metric, cands, refs, tmp_path / "p", shard_size=3), whole)


@pytest.mark.slow
def test_other_inputs_or_settings_are_refused(plain, texts, tmp_path: Path) -> None:
    cands, groups = texts
    plain = plain[0]
    score_resumable(plain, cands[:16], groups[:16], tmp_path, shard_size=SHARD)
    changed = [*cands[:16]]
    changed[11] += " (edited)"
    with pytest.raises(CheckpointMismatchError, match=r"the texts of inputs 6 to 11 \(shard 1") as err:
        score_resumable(plain, changed, groups[:16], tmp_path, shard_size=SHARD)
    assert err.value.what == "texts"
    with pytest.raises(CheckpointMismatchError, match="the setting") as err:
        score_resumable(BERTScore(MINILM, num_layers=4), cands[:16], groups[:16], tmp_path, shard_size=SHARD)
    assert err.value.what == "hash_code"
    with pytest.raises(CheckpointMismatchError, match="the shard size"):
        score_resumable(plain, cands[:16], groups[:16], tmp_path, shard_size=4)
    with pytest.raises(CheckpointMismatchError, match="the number of inputs"):
        score_resumable(plain, cands[:24], groups[:24], tmp_path, shard_size=SHARD)
    manifest = tmp_path / "manifest-rank0.json"
    record = json.loads(manifest.read_text())
    manifest.write_text(json.dumps({**record, "world_size": 2}))
    with pytest.raises(CheckpointMismatchError, match="made by 2 process") as err:
        score_resumable(plain, cands[:16], groups[:16], tmp_path, shard_size=SHARD)
    assert (err.value.saved, err.value.given) == (2, 1)


@pytest.mark.slow
def test_idf_counts_over_other_references_are_refused(texts, tmp_path: Path) -> None:
    """With IDF counted, every shard depends on all references: another last reference is refused up front."""
    cands, groups = texts
    metric = BERTScore(MINILM, idf=True)
    score_resumable(metric, cands[:16], groups[:16], tmp_path, shard_size=SHARD)
    other = [*groups[:15], ["Something else entirely, with new words."]]
    with pytest.raises(CheckpointMismatchError, match="the IDF counts") as err:
        score_resumable(metric, cands[:16], other, tmp_path, shard_size=SHARD)
    assert err.value.what == "idf_counts"


KILLED_RUN = """
import sys, time, torch
from bertscore_tm import BERTScore
from bertscore_tm.corpus import resumable
torch.set_num_threads(1)
cands, refs = (open(p, encoding="utf-8").read().splitlines()[:{pairs}] for p in sys.argv[1:3])
folder = sys.argv[3]
real = resumable._score_tokens
def slow(*args, **kwargs):  # the scores are the real ones; the pause gives the test time to kill mid-run
    out = real(*args, **kwargs)
    time.sleep(0.3)
    return out
resumable._score_tokens = slow
resumable.score_resumable(BERTScore("{model}", idf=True), cands, refs, folder, shard_size={shard})
print("finished")
"""


@pytest.mark.slow
def test_resume_after_sigkill(texts, tmp_path: Path) -> None:
    """A real SIGKILL of a process scoring with a checkpoint, then the rest in this process: the same scores."""
    folder, script = tmp_path / "ckpt", tmp_path / "run.py"
    script.write_text(KILLED_RUN.format(pairs=PAIRS, model=MINILM, shard=3))
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    files = [str(WMT / "hyps_long.txt"), str(WMT / "refs_long.txt"), str(folder)]
    proc = subprocess.Popen([sys.executable, str(script), *files], env=env, stdout=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while len(list(folder.glob("rank0-shard*.npy"))) < 2 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL
    done = len(list(folder.glob("rank0-shard*.npy")))
    assert 2 <= done < PAIRS // 3
    cands, refs = (
        f.read_text(encoding="utf-8").splitlines()[:PAIRS] for f in (WMT / "hyps_long.txt", WMT / "refs_long.txt")
    )
    metric = BERTScore(MINILM, idf=True)
    got = score_resumable(metric, cands, refs, folder, shard_size=3)
    metric.update(cands, refs)
    assert_same(got, metric.compute_scores())


def run_cli(argv: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    with redirect_stdout(out):
        code = main(argv)
    return code, out.getvalue()


def read(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


@pytest.mark.slow
def test_pairwise_cli_resumes_to_the_same_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Interrupted after two shards of rows and run again: the bytes of an uninterrupted run with the same shard
    size; within float32 rounding of a run without a checkpoint (the all-pairs engine's tiles, and so its last
    bit, depend on which candidates are scored together)."""
    lines = read(WMT / "hyps_long.txt")
    (tmp_path / "c.txt").write_text("\n".join(lines[:10]) + "\n", encoding="utf-8")
    (tmp_path / "r.txt").write_text("\n".join(lines[100:106]) + "\n", encoding="utf-8")
    base = ["pairwise", "-c", str(tmp_path / "c.txt"), "-r", str(tmp_path / "r.txt"), "-m", MINILM, "--idf"]
    base += ["--device", "cpu"]
    assert run_cli([*base, "-o", str(tmp_path / "plain.out")])[0] == 0
    base += ["--shard-size", "3"]
    assert run_cli([*base, "-o", str(tmp_path / "whole.out"), "--checkpoint", str(tmp_path / "ck1")])[0] == 0
    resumed = [*base, "-o", str(tmp_path / "resumed.out"), "--checkpoint", str(tmp_path / "ck2")]
    real, calls = resumable.pairwise_scores, []

    def failing(*args: object, **kwargs: object) -> torch.Tensor:
        calls.append(1)
        if len(calls) > 2:
            raise KeyboardInterrupt
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(resumable, "pairwise_scores", failing)
    assert run_cli(resumed)[0] == 130
    assert len(list((tmp_path / "ck2").glob("rank0-shard*.npy"))) == 2 and not (tmp_path / "resumed.out").exists()
    monkeypatch.setattr(resumable, "pairwise_scores", real)
    assert run_cli(resumed)[0] == 0
    assert (tmp_path / "resumed.out").read_bytes() == (tmp_path / "whole.out").read_bytes()
    whole, plain = (np.loadtxt(tmp_path / f"{n}.out") for n in ("whole", "plain"))
    np.testing.assert_allclose(whole, plain, rtol=0, atol=1e-6)


def interrupted_then_resumed(argv: list[str], monkeypatch: pytest.MonkeyPatch, shards_first: int) -> str:
    """`argv` stopped (as a kill would) after `shards_first` shards are scored, then run again: its output."""
    real, calls = resumable._score_tokens, []

    def failing(*args: object, **kwargs: object) -> torch.Tensor:
        calls.append(1)
        if len(calls) > shards_first:
            raise KeyboardInterrupt
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(resumable, "_score_tokens", failing)
    assert run_cli(argv)[0] == 130
    monkeypatch.setattr(resumable, "_score_tokens", real)
    code, out = run_cli(argv)
    assert code == 0 and len(calls) == shards_first + 1
    return out


@pytest.mark.slow
def test_score_cli_resumes_to_the_output_of_a_run_without_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`score --checkpoint`, killed after two of four shards and run again: the very bytes of `score` without a
    checkpoint (pairs score the same in any batch), two reference files and IDF included."""
    files = [tmp_path / n for n in ("c.txt", "r1.txt", "r2.txt")]
    for path, name, lo in zip(files, ("hyps_long", "refs_long", "refs_long"), (0, 0, 50), strict=True):
        path.write_text("\n".join(read(WMT / f"{name}.txt")[lo : lo + 8]) + "\n", encoding="utf-8")
    base = ["score", "-c", str(files[0]), "-r", str(files[1]), str(files[2]), "-m", MINILM, "--idf", "-s"]
    base += ["--format", "json", "--device", "cpu"]
    code, plain = run_cli(base)
    assert code == 0
    resumed = interrupted_then_resumed(
        [*base, "--checkpoint", str(tmp_path / "ck"), "--shard-size", "2"], monkeypatch, 2
    )
    assert resumed == plain
    assert len(list((tmp_path / "ck").glob("rank0-shard*.npy"))) == 4
    capsys.readouterr()
    other = [a for a in base if a != "--idf"]  # another setting into the same folder: one line, exit 2
    assert run_cli([*other, "--checkpoint", str(tmp_path / "ck"), "--shard-size", "2"])[0] == 2
    err = capsys.readouterr().err
    assert "made from other inputs or another setting" in err and "--checkpoint" in err and err.count("\n") == 1


@pytest.mark.slow
def test_compare_cli_resumes_each_system(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`compare --checkpoint`: each system's shards in their own folder; interrupted in the second system and run
    again, the same table as a run without a checkpoint."""
    lines, refs = read(WMT / "hyps_long.txt"), read(WMT / "refs_long.txt")
    files = {n: tmp_path / f"{n}.txt" for n in ("a", "b", "r")}
    for path, part in zip(files.values(), (lines[:6], lines[6:12], refs[:6]), strict=True):
        path.write_text("\n".join(part) + "\n", encoding="utf-8")
    base = ["compare", "-c", str(files["a"]), str(files["b"]), "-r", str(files["r"]), "-m", MINILM]
    base += ["--bootstrap", "200", "--device", "cpu"]
    code, plain = run_cli(base)
    assert code == 0
    resumed = interrupted_then_resumed(
        [*base, "--checkpoint", str(tmp_path / "ck"), "--shard-size", "4"], monkeypatch, 3
    )
    assert resumed == plain
    assert sorted(p.name for p in (tmp_path / "ck").iterdir()) == ["system0", "system1"]


def test_shard_size_without_a_checkpoint_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["score", "-c", str(WMT / "hyps.txt"), "-r", str(WMT / "refs.txt"), "--shard-size", "5"])
    err = capsys.readouterr().err
    assert code == 2 and "--shard-size only matters with --checkpoint" in err and "Traceback" not in err


# -- a stream of pairs, in the user's own loop ------------------------------------------------------------------
def stream_of(texts: tuple[list[str], list[list[str]]]) -> list[tuple[str, list[str]]]:
    return list(zip(*texts, strict=True))


@pytest.mark.slow
def test_a_stream_yields_the_metrics_scores_a_shard_at_a_time(plain, texts, tmp_path: Path) -> None:
    metric, expected = plain
    shards = list(resumable.score_stream(metric, iter(stream_of(texts)), tmp_path, shard_size=SHARD))
    assert [len(s.f1) for s in shards] == [SHARD] * (PAIRS // SHARD)
    for name in ("precision", "recall", "f1", "best_reference"):
        assert torch.equal(torch.cat([getattr(s, name) for s in shards]), getattr(expected, name)), name


@pytest.mark.slow
def test_a_stream_resumes_after_an_interruption(plain, texts, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A loop stopped in its third shard and run again over the same pairs: the two finished shards are read
    back, not scored, and every shard equals an uninterrupted loop's."""
    metric, expected = plain
    calls = failing_after(monkeypatch, 2)
    got = []
    with pytest.raises(KeyboardInterrupt):
        for scores in resumable.score_stream(metric, stream_of(texts), tmp_path, shard_size=SHARD):
            got.append(scores)
    assert len(got) == 2 and len(calls) == 3
    monkeypatch.undo()
    calls = failing_after(monkeypatch, 99)
    again = list(resumable.score_stream(metric, stream_of(texts), tmp_path, shard_size=SHARD))
    assert len(calls) == PAIRS // SHARD - 2  # only the shards not finished before
    assert torch.equal(torch.cat([s.f1 for s in again]), expected.f1)
    assert torch.equal(torch.cat([s.f1 for s in got]), expected.f1[: 2 * SHARD])


def test_a_stream_of_other_pairs_or_counted_idf_is_refused(plain, texts, tmp_path: Path) -> None:
    metric, _ = plain
    pairs = stream_of(texts)
    list(resumable.score_stream(metric, pairs[:SHARD], tmp_path, shard_size=SHARD))
    other = [(c + " Indeed.", r) for c, r in pairs]
    with pytest.raises(CheckpointMismatchError, match="shard 0") as err:
        next(resumable.score_stream(metric, other, tmp_path, shard_size=SHARD))
    assert err.value.what == "texts"
    with pytest.raises(ValueError, match="cannot count IDF over references it has not read yet"):
        next(resumable.score_stream(BERTScore(MINILM, idf=True), pairs, tmp_path / "idf", shard_size=SHARD))


@pytest.mark.slow
def test_a_full_disk_stops_with_one_error_and_keeps_the_shards_before(
    plain, texts, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No space left while keeping the third shard: a `CheckpointWriteError` (a BERTScoreError) saying so, the
    two shards before it whole; with space again, the run goes on from them to the uninterrupted scores."""
    import errno

    metric, expected = plain
    real, writes = resumable.write_atomically, []

    def full_disk(target: Path, data: bytes) -> None:
        writes.append(target)
        if len(writes) > 5:  # the manifest, then two shards, each after its digest in the manifest
            raise OSError(errno.ENOSPC, "No space left on device")
        real(target, data)

    monkeypatch.setattr(resumable, "write_atomically", full_disk)
    with pytest.raises(resumable.CheckpointWriteError, match=r"No space left on device.*shards written before"):
        score_resumable(metric, *texts, tmp_path, shard_size=SHARD)
    assert len(list(tmp_path.glob("rank0-shard*.npy"))) == 2 and not list(tmp_path.glob(".*.tmp"))
    monkeypatch.undo()
    calls = failing_after(monkeypatch, 99)
    assert_same(score_resumable(metric, *texts, tmp_path, shard_size=SHARD), expected)
    assert len(calls) == PAIRS // SHARD - 2


def test_an_unusable_checkpoint_folder_is_one_line_before_the_model_loads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    afile = tmp_path / "a-file"
    afile.write_text("x", encoding="utf-8")
    args = ["score", "-c", str(WMT / "hyps.txt"), "-r", str(WMT / "refs.txt"), "-m", MINILM]
    assert main([*args, "--checkpoint", str(afile / "ckpt")]) == 2
    err = capsys.readouterr().err
    assert (
        err.startswith(f"bertscore-tm: error: cannot keep a checkpoint in {afile / 'ckpt'}: ") and err.count("\n") == 1
    )


def test_shards_hold_10000_pairs_and_1000_matrix_rows_by_default(capsys: pytest.CaptureFixture[str]) -> None:
    # a pair shard as large as the command line's chunks of lines plans full batches (docs/corpus-scale.md); a
    # matrix row is scored against every reference, so its shards are smaller
    for command, default in (("score", "10,000"), ("compare", "10,000"), ("pairwise", "1,000")):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        assert f"per checkpoint shard (default: {default})" in " ".join(capsys.readouterr().out.split()), command
    assert inspect.signature(score_resumable).parameters["shard_size"].default == 10_000
    assert inspect.signature(resumable.pairwise_resumable).parameters["shard_size"].default == 1000
