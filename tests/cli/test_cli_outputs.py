"""Output files appear whole or not at all, and SIGTERM stops a command with one line.

Every file the command line writes (score, pairwise and baseline ``-o``, show ``-f``) goes to a temporary file in
the target's folder, is synced to disk and then moved onto the target in one step: a folder that takes no new
files, a full disk or an interruption leaves an existing target byte for byte as it was and no temporary file
behind, with a one-line error (exit code 2). SIGTERM is one line and exit code 143, as SIGINT is one line and 130.
"""

from __future__ import annotations

import errno
import io
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import bertscore_tm
from bertscore_tm.cli import main, outputs
from bertscore_tm.cli.errors import Terminated, UsageError
from bertscore_tm.cli.signals import terminable
from tests.conftest import MINILM

OLD = b"the results of an earlier run\n"
CANDS = ["The cat sat on the mat.", "It is raining today.", "We left early."]
REFS = ["A cat sat on a mat.", "Today it rains.", "We went home early."]


@pytest.fixture()
def texts(tmp_path: Path) -> dict[str, str]:
    """Three candidates, their references, and a corpus for `baseline` (in their own folder)."""
    folder = tmp_path / "inputs"
    folder.mkdir()
    paths = {}
    for name, lines in {"cands": CANDS, "refs": REFS, "corpus": CANDS + REFS}.items():
        (folder / f"{name}.txt").write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        paths[name] = str(folder / f"{name}.txt")
    return paths


def commands(texts: dict[str, str], folder: Path) -> dict[str, tuple[list[str], Path]]:
    """Each command that writes a file, with the file it writes in `folder`."""
    table = folder / "out.tsv"
    return {
        "score": (["score", "-c", texts["cands"], "-r", texts["refs"], "-o", str(table)], table),
        "pairwise": (["pairwise", "-c", texts["cands"], "-r", texts["refs"], "-o", str(table)], table),
        "baseline": (["baseline", "--corpus", texts["corpus"], "--pairs", "2", "-o", str(table)], table),
        "show": (["show", "-c", CANDS[0], "-r", REFS[0], "-f", str(folder / "out.png")], folder / "out.png"),
    }


def one_line_error(capsys: pytest.CaptureFixture[str], args: list[str]) -> str:
    """The one `bertscore-tm: error: ...` line of a user error (exit code 2, nothing on stdout)."""
    rc = main([*args, "-m", MINILM])
    out, err = capsys.readouterr()
    assert rc == 2, (rc, out, err)
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("bertscore-tm: error: "), err
    return err.strip()


def listing(folder: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in folder.iterdir()}


@pytest.fixture()
def no_model(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if the command builds a metric (so loads a model): its checks must come first."""

    def refuse(*args: object, **kwargs: object) -> None:
        pytest.fail("a metric was built (a model loaded) before the mistake was reported")

    monkeypatch.setattr("bertscore_tm.metric.bertscore.BERTScore.from_config", classmethod(refuse))


@pytest.fixture()
def unwritable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder that holds the results of an earlier run but takes no new files. Root ignores permission bits:
    there, creating a file in the folder is refused as the system refuses it without the permission."""
    folder = tmp_path / "read-only"
    folder.mkdir()
    for name in ("out.tsv", "out.png"):
        (folder / name).write_bytes(OLD)
    if os.geteuid() != 0:
        folder.chmod(0o555)
        yield folder
        folder.chmod(0o755)
        return

    def refusing(original: Callable[..., object]) -> Callable[..., object]:
        def create(*args: object, dir: object = None, **kwargs: object) -> object:
            if dir is not None and Path(str(dir)).resolve() == folder.resolve():
                raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))
            return original(*args, dir=dir, **kwargs)

        return create

    for name in ("mkstemp", "TemporaryFile", "NamedTemporaryFile"):
        monkeypatch.setattr(tempfile, name, refusing(getattr(tempfile, name)))
    yield folder


@pytest.mark.parametrize("command", ["score", "pairwise", "baseline", "show"])
def test_an_unwritable_folder_is_one_line_before_any_model_and_the_old_file_stays(
    capsys, no_model, texts: dict[str, str], unwritable: Path, command: str
) -> None:
    """The existing file could be written in place, but the new results go to a temporary file beside it, so a
    folder that takes no new files is refused, and before the model loads, not after the scoring."""
    if command == "show":
        pytest.importorskip("matplotlib")
    args, target = commands(texts, unwritable)[command]
    before = listing(unwritable)
    line = one_line_error(capsys, args)
    assert line.startswith(f"bertscore-tm: error: cannot write {target}: Permission denied"), line
    assert f"temporary file in {unwritable}" in line, line
    assert listing(unwritable) == before


class FullDisk(io.RawIOBase):
    """A file on a full disk: the first `room` bytes are written, then ENOSPC."""

    def __init__(self, raw: io.FileIO, room: int) -> None:
        self.raw, self.room = raw, room

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        if self.room <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        n = self.raw.write(bytes(data[: self.room]))
        self.room -= n
        return n

    def close(self) -> None:
        self.raw.close()
        super().close()


def fail_fsync(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    """The disk fills up when the data reaches it: os.fsync says ENOSPC."""

    def fsync(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", fsync)


def fail_writes(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    """The disk fills up while the file is written: 10 bytes go through, then ENOSPC (files opened by path in
    `folder` for writing, as pathlib opens them)."""
    original = io.open

    def open_(file, mode="r", buffering=-1, encoding=None, errors=None, newline=None, *args, **kwargs):
        if "w" not in mode or Path(str(file)).parent.resolve() != folder.resolve():
            return original(file, mode, buffering, encoding, errors, newline, *args, **kwargs)
        buffered = io.BufferedWriter(FullDisk(io.FileIO(str(file), "w"), room=10))
        return buffered if "b" in mode else io.TextIOWrapper(buffered, encoding or "utf-8", errors, newline)

    monkeypatch.setattr(io, "open", open_)


FAILURES = [
    pytest.param(fail_fsync, command, id=f"fsync-{command}") for command in ("score", "pairwise", "baseline", "show")
] + [pytest.param(fail_writes, command, id=f"write-{command}") for command in ("score", "pairwise", "baseline")]


@pytest.mark.parametrize(("fail", "command"), FAILURES)
def test_a_full_disk_leaves_the_old_file_byte_identical_and_no_temporary_file(
    capsys, monkeypatch, tmp_path: Path, texts: dict[str, str], fail, command: str
) -> None:
    if command == "show":
        pytest.importorskip("matplotlib")
    folder = tmp_path / "results"
    folder.mkdir()
    args, target = commands(texts, folder)[command]
    target.write_bytes(OLD)
    fail(monkeypatch, folder)
    line = one_line_error(capsys, args)
    assert line == f"bertscore-tm: error: cannot write {target}: No space left on device", line
    assert listing(folder) == {target.name: OLD}


def test_a_picture_is_compared_with_the_other_outputs_as_the_file_it_writes(
    capsys, no_model, tmp_path: Path, texts: dict[str, str]
) -> None:
    """`--plot fig` writes fig.png: `-o fig.png` beside it would be overwritten by it (or it by -o)."""
    judged = tmp_path / "judged.tsv"
    judged.write_text("candidate\treference\thuman\na\tb\t1\nc\td\t2\ne\tf\t3\n", encoding="utf-8")
    figure = tmp_path / "fig"
    args = ["tune-layers", "--data", str(judged), "-o", f"{figure}.png", "--plot", str(figure)]
    assert f"-o and --plot name the same file {figure}.png" in one_line_error(capsys, args)
    assert not (tmp_path / "fig.png").exists()


def test_a_successful_write_replaces_the_file_whole(capsys, tmp_path: Path, texts: dict[str, str]) -> None:
    """The new file takes the old one's place in one step: a reader that opened the old file still reads all of
    it (it was not truncated and rewritten), a link stays a link to the file it names, and the mode stays."""
    folder = tmp_path / "results"
    folder.mkdir()
    target = folder / "scores.txt"
    target.write_bytes(OLD)
    target.chmod(0o640)
    link = tmp_path / "link.txt"
    link.symlink_to(target)
    with target.open("rb") as reader:
        assert main(["score", "-c", texts["cands"], "-r", texts["refs"], "-m", MINILM, "-o", str(link)]) == 0
        assert reader.read() == OLD
    assert capsys.readouterr().out == ""
    assert link.is_symlink() and link.resolve() == target
    assert target.read_text(encoding="utf-8").startswith(f"{MINILM}_L5_no-idf_version=")
    assert (target.stat().st_mode & 0o777) == 0o640
    assert sorted(p.name for p in folder.iterdir()) == ["scores.txt"]


@pytest.mark.parametrize(
    ("command", "name", "fmt"),
    [
        ("score", "s.json", "text"),
        ("score", "s.JSONL", "text"),
        ("explain", "why.json", "text"),
        ("pairwise", "m.json", "tsv"),
    ],
)
@pytest.mark.usefixtures("no_model")
def test_an_output_named_as_json_that_would_hold_text_is_refused_before_any_model(
    capsys, tmp_path: Path, texts: dict[str, str], command: str, name: str, fmt: str
) -> None:
    """`-o scores.json` without `--format json` would be text lines in a file every JSON reader fails on."""
    inputs = (
        ["-i", texts["cands"], "--group-size", "2"] if command == "mbr" else ["-c", texts["cands"], "-r", texts["refs"]]
    )
    target = tmp_path / name
    line = one_line_error(capsys, [command, *inputs, "-o", str(target)])
    assert line == (
        f"bertscore-tm: error: -o {target}: a {target.suffix.lower()} file would hold {fmt}, not JSON "
        f"(--format {fmt}): give --format json where the command has it, or another file name"
    )
    assert not target.exists()


def test_an_output_named_as_json_is_written_as_json_or_as_the_data_file_names(
    capsys, tmp_path: Path, texts: dict[str, str]
) -> None:
    """The check leaves alone what is JSON: `--format json`, and `score --data`, whose output's name picks it."""
    import json

    target = tmp_path / "scores.json"
    args = ["score", "-c", texts["cands"], "-r", texts["refs"], "-m", MINILM, "--format", "json", "-o", str(target)]
    assert main(args) == 0
    assert "f1" in json.dumps(json.loads(target.read_text(encoding="utf-8")))
    capsys.readouterr()


def test_an_interrupted_write_leaves_nothing(tmp_path: Path) -> None:
    """SIGTERM (or anything else) while the new content is being written: the temporary file is removed and
    the target left as it was; an OSError becomes a one-line UsageError naming the output."""
    target = tmp_path / "out.tsv"
    target.write_bytes(OLD)
    with pytest.raises(Terminated), outputs.replacing(target, "out.tsv") as temp:
        temp.write_text("half of the new")
        raise Terminated
    with pytest.raises(UsageError, match=r"^cannot write out.tsv: No space left on device$"):
        outputs.write_text(target, "out.tsv", iter_then_fail(["a\n", "b\n"]))
    assert listing(tmp_path) == {"out.tsv": OLD}


def iter_then_fail(lines: list[str]) -> Iterator[str]:
    yield from lines
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_a_target_that_is_no_regular_file_is_written_in_place(tmp_path: Path) -> None:
    """A named pipe (as /dev/stdout) cannot be replaced: it is written to, and stays a pipe."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        outputs.write_text(fifo, str(fifo), ["through the pipe\n"])
        assert os.read(reader, 100) == b"through the pipe\n"
    finally:
        os.close(reader)
    assert fifo.is_fifo() and [p.name for p in tmp_path.iterdir()] == ["pipe"]


# -- SIGTERM -------------------------------------------------------------------------------------------------


def _env() -> dict[str, str]:
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    package_root = str(Path(bertscore_tm.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH", "")) if p)
    for name in ("WORLD_SIZE", "RANK", "LOCAL_RANK"):
        env.pop(name, None)
    return env


class RaisesInFinaliser:
    """An object whose finaliser makes `signum` arrive: its handler runs there, where Python cannot raise."""

    def __init__(self, signum: int) -> None:
        self.signum = signum

    def __del__(self) -> None:
        signal.raise_signal(self.signum)


@pytest.mark.parametrize(("signum", "raised"), [(signal.SIGTERM, Terminated), (signal.SIGINT, KeyboardInterrupt)])
def test_an_interrupt_that_lands_in_a_finaliser_is_raised_again_outside(signum: int, raised: type) -> None:
    """Python prints ``Exception ignored in ...`` for an exception raised in a finaliser (or in a weakref callback,
    as importlib's module locks have) and goes on: a SIGTERM or SIGINT landing there would be lost, and the command
    would run to the end. Inside `terminable` it is raised again, outside, and nothing is printed; afterwards
    every hook is as it was."""
    # a process started in the background by a shell without job control ignores SIGINT, and terminable then
    # leaves SIGINT alone (as it should): give this test the handler a foreground process has
    interrupt = signal.signal(signal.SIGINT, signal.default_int_handler)
    hook, alarm = sys.unraisablehook, signal.getsignal(signal.SIGALRM)
    reached = []
    try:
        with pytest.raises(raised) as caught, terminable():
            RaisesInFinaliser(signum)  # dropped at once: the finaliser runs here, and its interrupt is lost
            reached.append("after the finaliser")
            time.sleep(5)  # the interrupt comes again, a millisecond later
            reached.append("after the sleep")
    finally:
        signal.signal(signal.SIGINT, interrupt)
    assert caught.type is raised and reached == ["after the finaliser"]
    assert (sys.unraisablehook, signal.getsignal(signal.SIGALRM)) == (hook, alarm)


@pytest.fixture()
def module_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str, str], None]]:
    """Writes a module for the test to import (`module_file(name, source)`); it is forgotten afterwards."""
    monkeypatch.syspath_prepend(str(tmp_path))
    names: list[str] = []

    def write(name: str, source: str) -> None:
        (tmp_path / f"{name}.py").write_text(source, encoding="utf-8")
        names.append(name)

    yield write
    for name in names:
        sys.modules.pop(name, None)


def test_an_interrupt_that_lands_in_an_import_waits_for_its_end(module_file: Callable[[str, str], None]) -> None:
    """Raised inside an import, an interrupt would leave the module half set up; it is held until the import is
    over, then raised from the code that imported."""
    module_file("interrupted_module", "import signal\nsignal.raise_signal(signal.SIGTERM)\nWHOLE = True\n")
    reached = []
    with pytest.raises(Terminated), terminable():
        import interrupted_module  # type: ignore[import-not-found]

        reached.append(interrupted_module.WHOLE)
        time.sleep(5)
    assert reached == [True] and sys.modules["interrupted_module"].WHOLE


def test_a_signal_still_held_when_the_command_ends_is_raised_as_it_ends(
    module_file: Callable[[str, str], None],
) -> None:
    module_file("interrupted_last", "import signal\nsignal.raise_signal(signal.SIGTERM)\n")
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(Terminated), terminable():
        import interrupted_last  # type: ignore[import-not-found]  # noqa: F401  # the command's last step
    assert signal.getsignal(signal.SIGTERM) == before  # put back before the signal was raised


def test_a_command_run_from_inside_an_import_is_not_held_for_it(module_file: Callable[[str, str], None]) -> None:
    """Only imports begun inside `terminable` hold a signal: a module that runs a command as it is imported
    still stops at once."""
    module_file(
        "runs_a_command",
        "import signal, time\nfrom bertscore_tm.cli.signals import terminable\n"
        "with terminable():\n    signal.raise_signal(signal.SIGTERM)\n    time.sleep(5)\n",
    )
    start = time.perf_counter()
    with pytest.raises(Terminated):
        import runs_a_command  # type: ignore[import-not-found]  # noqa: F401
    assert time.perf_counter() - start < 4


def test_other_unraisable_exceptions_still_reach_the_previous_hook(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[BaseException | None] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda info: seen.append(info.exc_value))

    class FailsInFinaliser:
        def __del__(self) -> None:
            raise ValueError("from a finaliser")

    with terminable():
        FailsInFinaliser()
        time.sleep(0.01)
    assert [type(err) for err in seen] == [ValueError]


@pytest.mark.slow
@pytest.mark.parametrize("when", ["reading its input", "loading and scoring"])
def test_sigterm_is_one_line_and_exit_code_143(tmp_path: Path, when: str) -> None:
    """`bertscore-tm score` reads its candidates from standard input. Once more than a pipe holds (64 KiB) has
    gone in, the command is running (its SIGTERM handler set); SIGTERM then, while it waits for the rest of its
    input, or a moment after the input ended, while it loads torch and the model and scores 20,000 pairs.
    (Python runs a signal's handler between bytecodes: one that arrives just before a blocking read starts
    waits for the read to end, which is why the input is closed right after the signal.)"""
    lines = 20_000
    refs = tmp_path / "refs.txt"
    refs.write_text("A reference sentence to score against.\n" * lines, encoding="utf-8")
    command = [sys.executable, "-m", "bertscore_tm", "score", "-c", "-", "-r", str(refs), "-m", MINILM]
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env())
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    try:
        proc.stdin.write(b"A candidate sentence.\n" * lines)  # 440 kB: returns once all but 64 KiB were read
        proc.stdin.flush()
        if when == "loading and scoring":
            proc.stdin.close()
            time.sleep(1.5)
        proc.send_signal(signal.SIGTERM)
        proc.stdin.close()  # a read that the signal did not interrupt ends here, and the handler runs after it
        proc.wait(timeout=120)
        out, err = proc.stdout.read(), proc.stderr.read()  # a few bytes: the pipes never filled up
    finally:
        proc.kill()
        proc.wait()
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            stream.close()
    assert (proc.returncode, err, out) == (143, b"bertscore-tm: terminated\n", b"")
