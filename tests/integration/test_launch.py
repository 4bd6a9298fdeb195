"""The command line on torch's launcher: `torchrun --nproc-per-node 2 -m bertscore_tm score ...` with two gloo
processes on the CPU writes exactly what one process writes (every digit of the JSON, IDF summed over both
shards), and a user mistake is still one line, said once."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

import bertscore_tm
import bertscore_tm.distributed.launch
from bertscore_tm.cli import UsageError, main
from bertscore_tm.distributed.launch import Processes, processes
from tests.conftest import MINILM

LAUNCH_TIMEOUT_S = 420  # two processes loading the model on a busy two-core machine


def _env() -> dict[str, str]:
    env = dict(
        os.environ,
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        TOKENIZERS_PARALLELISM="false",
        OMP_NUM_THREADS="1",
        GLOO_SOCKET_IFNAME="lo",
        PYTHONFAULTHANDLER="1",  # a process that aborts prints every thread's Python stack (the SIGABRT below)
    )
    package_root = str(Path(bertscore_tm.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH", "")) if p)
    for name in ("WORLD_SIZE", "RANK", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(name, None)
    return env


def _torchrun(*argv: str) -> subprocess.CompletedProcess[str]:
    """`torchrun --standalone --nproc-per-node 2 <argv>` in a clean offline environment, its output captured.

    Launched once. A process of the first test's launch used to die now and then with SIGABRT ("terminate
    called without an active exception"), 3 of about 20 launches on 2026-11-22. That launch alone kept its
    destroyed process group's gloo threads running into the interpreter's teardown (torch.distributed.nn,
    first imported inside the group by the model's loading, held the group); its job runner now imports it
    first, as bertscore_tm's entry points do, and the test checks that the threads end (benchmarks/RESULTS.md).
    The processes run with Python's faulthandler on: should an abort happen again, it shows every thread's
    stack."""
    launcher = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"]
    return subprocess.run(
        [*launcher, *argv], capture_output=True, text=True, env=_env(), timeout=LAUNCH_TIMEOUT_S, check=False
    )


def test_two_processes_write_exactly_what_one_process_writes(tmp_path, wmt, capsys):
    """score (through `-m bertscore_tm`, torchrun's own way), then score, compare and pairwise in one process
    group (tests/integration/torchrun_jobs.py: one launch for three jobs): rank 0 writes every digit one
    process writes."""
    # an odd number of lines, so the shards differ in size; two references per candidate; IDF over both shards
    n = 11
    files = {
        "c.txt": wmt["hyps_long"][:n],
        "c2.txt": wmt["hyps_long"][200 : 200 + n],
        "r1.txt": wmt["refs_long"][:n],
        "r2.txt": wmt["refs_long"][100 : 100 + n],
    }
    for name, lines in files.items():
        (tmp_path / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    c, c2, r1, r2 = (str(tmp_path / name) for name in files)
    common = ["-m", MINILM, "--idf", "--format", "json", "--no-progress"]
    jobs = [
        ["score", "-c", c, "-r", r1, r2, *common, "-s"],
        ["compare", "-c", c, c2, "-r", r1, *common, "--bootstrap", "200"],
        ["pairwise", "-c", c, "-r", r1, *common],
    ]
    (tmp_path / "jobs.json").write_text(json.dumps(jobs), encoding="utf-8")
    out = tmp_path / "out"
    out.mkdir()
    proc = _torchrun(str(Path(__file__).with_name("torchrun_jobs.py")), str(out), str(tmp_path / "jobs.json"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    for i, argv in enumerate(jobs):
        assert [(out / f"{i}.rank{r}.rc").read_text() for r in (0, 1)] == ["0", "0"], argv[0]
        assert main(argv) == 0  # one process, in this one
        alone = capsys.readouterr().out
        assert (out / f"{i}.out").read_text(encoding="utf-8") == alone, argv[0]  # every digit the same
    score = json.loads((out / "0.out").read_text(encoding="utf-8"))
    assert score["pairs"] == n and len(score["segments"]) == n
    assert len(json.loads((out / "2.out").read_text(encoding="utf-8"))["f1"]) == n  # every row gathered
    # the destroyed group's threads ended with it (none left to be torn down with the interpreter)
    assert [(out / f"threads.rank{r}").read_text() for r in (0, 1)] == ["", ""]


GROUP_ENDS = """
import sys
if sys.argv[1] == "first":
    import bertscore_tm.models.loading  # imports torch.distributed.nn before the group, as every entry point does
import torch.distributed as dist
dist.init_process_group("gloo", init_method="file://" + sys.argv[2], rank=0, world_size=1)
import torch.distributed.fsdp  # what loading a transformers model imports (and torch.distributed.nn with it)
dist.barrier()
dist.destroy_process_group()
sys.path.insert(0, sys.argv[3])
from torchrun_jobs import group_threads  # the job runner's own count, read once the group is gone
print(group_threads())
"""


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads a process's threads from /proc")
def test_a_destroyed_process_group_ends_when_bertscore_tm_was_imported_first(tmp_path):
    """torch.distributed.nn takes the default process group as its functions' default argument when first
    imported; imported inside a group (as loading a model does), it keeps the group, and its gloo threads,
    alive after destroy_process_group() until the interpreter's teardown. Imported with bertscore_tm's model
    loader, before the group, it holds nothing: the group's threads end when it is destroyed."""
    left = {}
    for when in ("first", "inside"):
        store = tmp_path / f"store-{when}"
        proc = subprocess.run(
            [sys.executable, "-c", GROUP_ENDS, when, str(store), str(Path(__file__).parent)],
            capture_output=True,
            text=True,
            env=_env(),
            timeout=120,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        left[when] = proc.stdout.strip()
    assert left["first"] == "[]"
    assert "gloo" in left["inside"]  # the same program importing it inside the group: its threads are left


def test_torchrun_runs_the_module_itself(tmp_path, wmt, capsys):
    """`torchrun --nproc-per-node 2 -m bertscore_tm score ...`: the processes set up their group themselves."""
    n = 5
    for name, lines in {"c.txt": wmt["hyps"][:n], "r.txt": wmt["refs"][:n]}.items():
        (tmp_path / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    args = ["score", "-c", str(tmp_path / "c.txt"), "-r", str(tmp_path / "r.txt"), "-m", MINILM, "--idf", "-s"]
    proc = _torchrun("-m", "bertscore_tm", *args)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert main(args) == 0
    assert proc.stdout == capsys.readouterr().out


KILLED = str(Path(__file__).with_name("torchrun_killed.py"))


@pytest.mark.parametrize(("rank", "shards", "signal_name"), [(1, 1, "KILL"), (0, 2, "TERM")])
def test_a_job_with_a_process_killed_ends_and_resumes_to_the_bytes_of_one_process(
    tmp_path, wmt, capsys, rank, shards, signal_name
):
    """`score --checkpoint` on two processes, one of them killed when it starts a shard (SIGKILL: a lost peer;
    SIGTERM: a scheduler's stop): the job ends on every process within a bounded time, leaving no output and
    the finished shards; run again, it scores the rest and writes the bytes one process writes."""
    n = 12  # 6 lines, 3 shards of 2, per process
    for name, lines in {"c.txt": wmt["hyps_long"][:n], "r.txt": wmt["refs_long"][:n]}.items():
        (tmp_path / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    out, folder = tmp_path / "scores.tsv", tmp_path / "ckpt"
    args = ["score", "-c", str(tmp_path / "c.txt"), "-r", str(tmp_path / "r.txt"), "-m", MINILM, "--idf", "-s"]
    args += ["--format", "tsv", "--no-progress"]
    resumable = [*args, "--checkpoint", str(folder), "--shard-size", "2", "-o", str(out)]
    start = time.monotonic()
    killed = _torchrun(KILLED, str(rank), str(shards), signal_name, "--", *resumable)
    assert killed.returncode != 0 and time.monotonic() - start < LAUNCH_TIMEOUT_S / 2, killed.stderr[-3000:]
    frames = [line for line in killed.stderr.splitlines() if line.lstrip().startswith('File "')]
    assert not [f for f in frames if "bertscore_tm" in f], killed.stderr[-3000:]  # torchrun's own report only
    assert not out.exists()
    assert len(list(folder.glob(f"rank{rank}-shard*.npy"))) == shards
    resumed = _torchrun(KILLED, "-1", "0", "KILL", "--", *resumable)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert main(args) == 0  # one process, without a checkpoint
    assert out.read_text(encoding="utf-8") == capsys.readouterr().out


def test_a_lost_process_is_one_line_not_a_traceback(monkeypatch, capsys, tmp_path):
    """What a process says when a collective fails because another process went away."""
    import torch.distributed as dist

    from bertscore_tm.cli.commands import score

    def lost(*args, **kwargs):
        raise dist.DistBackendError("[gloo/transport/tcp/pair.cc:534] Connection closed by peer [127.0.0.1]:4321")

    monkeypatch.setattr(score, "run", lost)
    (tmp_path / "c.txt").write_text("a\n", encoding="utf-8")
    assert main(["score", "-c", str(tmp_path / "c.txt"), "-r", str(tmp_path / "c.txt")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("bertscore-tm: error: another process of this torchrun job stopped") and err.count("\n") == 1
    assert "Connection closed by peer" in err and "--checkpoint" in err


def test_commands_that_do_not_split_refuse_several_processes(monkeypatch, capsys):
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "0")
    assert main(["mbr", "-i", "x.txt", "--group-size", "2"]) == 2
    assert "mbr runs in one process; torchrun started 2" in capsys.readouterr().err
    assert main(["score", "-c", "-", "-r", "r.txt"]) == 2
    assert "standard input (-) cannot be shared" in capsys.readouterr().err


def test_a_mistake_is_said_once_by_rank_zero(tmp_path, monkeypatch, capsys):
    (tmp_path / "c.txt").write_text("a\nb\n", encoding="utf-8")
    args = ["score", "-c", str(tmp_path / "c.txt"), "-r", str(tmp_path / "missing.txt"), "-m", MINILM]
    monkeypatch.setenv("WORLD_SIZE", "2")
    for rank, said in (
        ("1", ""),
        ("0", f"bertscore-tm: error: reference file {tmp_path / 'missing.txt'} does not exist\n"),
    ):
        monkeypatch.setenv("RANK", rank)
        assert main(args) == 2
        assert capsys.readouterr().err == said


def test_without_torchrun_there_is_one_process_and_no_process_group(monkeypatch):
    import torch.distributed as dist

    for name in ("WORLD_SIZE", "RANK", "LOCAL_RANK"):
        monkeypatch.delenv(name, raising=False)
    with processes("cpu") as run:
        assert run == Processes(0, 1, 0, "cpu")
        assert run.writes_output and run.shard(7) == (0, 7)
        assert not (dist.is_available() and dist.is_initialized())


def test_shards_are_contiguous_and_cover_every_line_once():
    for lines in (0, 1, 5, 23, 1000):
        for world in (1, 2, 3, 8):
            shards = [Processes(rank, world).shard(lines) for rank in range(world)]
            assert shards[0][0] == 0 and shards[-1][1] == lines
            assert all(a[1] == b[0] for a, b in itertools.pairwise(shards))
            assert max(b - a for a, b in shards) - min(b - a for a, b in shards) <= 1


def test_each_process_takes_its_local_gpu(monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "4")
    monkeypatch.setenv("RANK", "3")
    monkeypatch.setenv("LOCAL_RANK", "1")
    assert bertscore_tm.distributed.launch.launched() == (3, 4, 1)
    assert bertscore_tm.distributed.launch.local_device("cuda", 1) == "cuda:1"
    assert not bertscore_tm.distributed.launch.reports_errors()


@pytest.fixture(autouse=True)
def _no_inherited_launch(monkeypatch):
    """These tests set torchrun's variables themselves; none leak in from the environment that runs them."""
    for name in ("WORLD_SIZE", "RANK", "LOCAL_RANK"):
        monkeypatch.delenv(name, raising=False)


def test_under_torchrun_a_gpu_named_by_index_is_refused_and_none_means_this_process_s_own(monkeypatch, capsys):
    from bertscore_tm.cli import _process_device

    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("LOCAL_RANK", "1")
    with pytest.raises(UsageError, match=r"--device cuda:0: torchrun started 2 processes, and each uses the GPU"):
        _process_device("cuda:0")  # both processes would share GPU 0 (NCCL refuses that at its first exchange)
    assert _process_device("cpu") == "cpu"
    if not torch.cuda.is_available():
        assert _process_device(None) == "cpu"
        with pytest.raises(UsageError, match="--device cuda:1: CUDA is not available"):
            _process_device("cuda")  # mapped to this process's GPU before it is checked
    elif torch.cuda.device_count() >= 2:
        assert _process_device(None) == _process_device("cuda") == "cuda:1"


def test_baseline_under_torchrun_refuses_a_gpu_named_by_index_as_score_does(monkeypatch, capsys, tmp_path, wmt):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(wmt["refs"][:8]) + "\n", encoding="utf-8")
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("LOCAL_RANK", "0")
    argv = ["--corpus", str(corpus), "-m", MINILM, "--pairs", "2", "-o", str(tmp_path / "b.tsv"), "--device", "cuda:0"]
    assert main(["baseline", *argv]) == 2
    assert "--device cuda:0: torchrun started 2 processes, and each uses the GPU" in capsys.readouterr().err
    assert not (tmp_path / "b.tsv").exists()
