"""torchrun launches in a row, counting how each ended: `torchrun --standalone --nproc-per-node 2 -m bertscore_tm
score ... --idf -s` on the CPU (gloo), as tests/integration/test_launch.py runs it, Python's faulthandler on so that
an abort prints every thread's stack; with `--jobs`, the test's job runner (tests/integration/torchrun_jobs.py)
running score, compare and pairwise in one process group instead. Every launch's output is compared with the
first's; the stderr of a launch that failed is kept in `--keep`.

    python benchmarks/studies/torchrun_launches.py                 # 50 launches
    python benchmarks/studies/torchrun_launches.py --jobs --launches 2 --out /tmp/smoke
"""

from __future__ import annotations

import collections
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import harness

SIGNALS = ("SIGABRT", "SIGSEGV", "SIGKILL", "SIGTERM")


def how_it_ended(done: dict) -> str:
    """'ok', or what the launcher reported: a signal that killed a process, else the exit code."""
    if done["rc"] == 0:
        return "ok"
    return next(
        (s for s in SIGNALS if f"({s})" in done["stderr"] or f"Signal {s}" in done["stderr"]), f"exit {done['rc']}"
    )


def arguments(work: Path, lines: int, jobs: bool) -> list[str]:
    """The launched program's arguments: `-m bertscore_tm score`, or the job runner with its three jobs."""
    paths = {}
    for name, (source, start) in {
        "c": ("hyps_long", 0),
        "c2": ("hyps_long", 200),
        "r": ("refs_long", 0),
        "r2": ("refs_long", 100),
    }.items():
        paths[name] = str(work / f"{name}.txt")
        Path(paths[name]).write_text("\n".join(harness.lines(source)[start : start + lines]) + "\n", encoding="utf-8")
    common = ["-m", harness.MINILM, "--idf", "--no-progress"]
    if not jobs:
        return ["-m", "bertscore_tm", "score", "-c", paths["c"], "-r", paths["r"], *common, "-s"]
    common += ["--format", "json"]
    runs = [
        ["score", "-c", paths["c"], "-r", paths["r"], paths["r2"], *common, "-s"],
        ["compare", "-c", paths["c"], paths["c2"], "-r", paths["r"], *common, "--bootstrap", "200"],
        ["pairwise", "-c", paths["c"], "-r", paths["r"], *common],
    ]
    (work / "jobs.json").write_text(json.dumps(runs), encoding="utf-8")
    (work / "out").mkdir(exist_ok=True)
    return [
        str(harness.REPO / "tests" / "integration" / "torchrun_jobs.py"),
        str(work / "out"),
        str(work / "jobs.json"),
    ]


def run(args: Any) -> dict:
    work = Path(tempfile.mkdtemp(prefix="torchrun-launches."))
    keep = Path(args.keep) if args.keep else work
    keep.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"]
    command += arguments(work, args.lines, args.jobs)
    env = harness.child_env(1, GLOO_SOCKET_IFNAME="lo", PYTHONFAULTHANDLER="1")
    ends: collections.Counter[str] = collections.Counter()
    first, seconds, cpu = None, [], []
    for i in range(1, args.launches + 1):
        done = harness.run_command(command, env, timeout=600)
        seconds.append(done["seconds"]), cpu.append(done["cpu_seconds"])
        end = how_it_ended(done)
        if end == "ok":
            output = (
                "".join(f.name + f.read_text() for f in sorted((work / "out").iterdir()))
                if args.jobs
                else done["stdout"]
            )
            first = output if first is None else first
            end = "ok" if output == first else "ok, other output"
        else:
            (keep / f"launch{i}.stderr").write_text(done["stderr"], encoding="utf-8")
        ends[end] += 1
        print(f"launch {i}: {end} ({seconds[-1]:.1f} s)", file=sys.stderr, flush=True)
    p = {"launches": args.launches, "lines": args.lines, "jobs": args.jobs}
    timing = {"seconds": {"launches": seconds}, "cpu_seconds": {"launches": cpu}, "results": {"launches": dict(ends)}}
    what = "score, compare and pairwise in one group" if args.jobs else "score"
    rows = [harness.row("launches", f"2 processes, {what}", p, timing, None, args.launches, key="launches")]
    check = harness.check(
        "launches that ended otherwise than ok with the first's output", float(args.launches - ends["ok"]), 0
    )
    notes = [f"failed launches' stderr in {keep}", "seconds: each launch's (two processes loading the model each time)"]
    return {
        "suite": "torchrun-launches",
        "title": "torchrun launches in a row",
        "rows": rows,
        "checks": [check],
        "notes": notes,
    }


ARGUMENTS = (
    (("--launches",), dict(type=int, default=50)),
    (("--lines",), dict(type=int, default=11, help="pairs scored per launch (default 11)")),
    (("--keep",), dict(default=None, help="folder for the stderr of failed launches (default: a temporary one)")),
    (("--jobs",), dict(action="store_true", help="score, compare and pairwise in one group per launch")),
)

if __name__ == "__main__":
    sys.exit(harness.main(__doc__, ARGUMENTS, run))
