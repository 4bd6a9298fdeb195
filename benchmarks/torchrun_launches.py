"""Launch the corpus job under torchrun many times in a row and count how each launch ended (issue 26, item 3:
a process once died now and then with SIGABRT, "terminate called without an active exception").

Each launch is ``torchrun --standalone --nproc-per-node 2 -m bertscore_tm score ... --idf -s`` on CPU (gloo), as
`tests/integration/test_launch.py` runs it, with Python's faulthandler on so that an abort prints every thread's
stack. With ``--jobs``, each launch is instead the launch that aborted: `tests/integration/torchrun_jobs.py` running
score, compare (200 resamples) and pairwise in one process group, as the first test of that file runs them. The
output of every launch is checked against the first one's (the same bytes); the stderr of any launch that fails is
kept in the --keep folder. Prints one line per launch and a summary for benchmarks/RESULTS.md.

    python benchmarks/torchrun_launches.py                 # 50 launches
    python benchmarks/torchrun_launches.py --launches 5    # a quick look
    python benchmarks/torchrun_launches.py --jobs          # the three jobs in one group, 50 launches
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
WMT = REPO / "tests" / "data" / "wmt"
MINILM = "sentence-transformers/all-MiniLM-L6-v2"


def environment() -> dict[str, str]:
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    env.update(OMP_NUM_THREADS="1", GLOO_SOCKET_IFNAME="lo", PYTHONFAULTHANDLER="1")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO / "src"), env.get("PYTHONPATH", "")) if p)
    for name in ("WORLD_SIZE", "RANK", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(name, None)
    return env


def how_it_ended(proc: subprocess.CompletedProcess[str]) -> str:
    """'ok', or what the launcher reported: a signal that killed a process, else the exit code."""
    if proc.returncode == 0:
        return "ok"
    for name in ("SIGABRT", "SIGSEGV", "SIGKILL", "SIGTERM"):
        if f"({name})" in proc.stderr or f"Signal {name}" in proc.stderr:
            return name
    return f"exit {proc.returncode}"


def texts(work: Path, names: dict[str, tuple[str, int]], lines: int) -> dict[str, str]:
    """Write `lines` lines of each WMT file (name: (WMT file, first line)) into `work`; their paths."""
    paths = {}
    for name, (source, start) in names.items():
        chosen = (WMT / f"{source}.txt").read_text(encoding="utf-8").splitlines()[start : start + lines]
        (work / f"{name}.txt").write_text("\n".join(chosen) + "\n", encoding="utf-8")
        paths[name] = str(work / f"{name}.txt")
    return paths


def score_arguments(work: Path, lines: int) -> list[str]:
    """`-m bertscore_tm score ...` on `lines` long WMT pairs."""
    p = texts(work, {"c": ("hyps_long", 0), "r": ("refs_long", 0)}, lines)
    return ["-m", "bertscore_tm", "score", "-c", p["c"], "-r", p["r"], "-m", MINILM, "--idf", "-s", "--no-progress"]


def job_arguments(work: Path, lines: int) -> list[str]:
    """The tests' job runner with the three jobs of test_launch's first test (the launch that aborted)."""
    p = texts(
        work, {"c": ("hyps_long", 0), "c2": ("hyps_long", 200), "r1": ("refs_long", 0), "r2": ("refs_long", 100)}, lines
    )
    common = ["-m", MINILM, "--idf", "--format", "json", "--no-progress"]
    jobs = [
        ["score", "-c", p["c"], "-r", p["r1"], p["r2"], *common, "-s"],
        ["compare", "-c", p["c"], p["c2"], "-r", p["r1"], *common, "--bootstrap", "200"],
        ["pairwise", "-c", p["c"], "-r", p["r1"], *common],
    ]
    (work / "jobs.json").write_text(json.dumps(jobs), encoding="utf-8")
    (work / "out").mkdir(exist_ok=True)
    return [str(REPO / "tests" / "integration" / "torchrun_jobs.py"), str(work / "out"), str(work / "jobs.json")]


def outputs(work: Path) -> str:
    """What a job-runner launch wrote (every job's output and every rank's exit code), to compare launches."""
    return "".join(f.name + f.read_text(encoding="utf-8") for f in sorted((work / "out").iterdir()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--launches", type=int, default=50, help="launches in a row (default: 50)")
    parser.add_argument("--lines", type=int, default=11, help="pairs scored per launch (default: 11)")
    parser.add_argument("--keep", default=None, help="folder for the stderr of failed launches (default: a temp one)")
    parser.add_argument("--jobs", action="store_true", help="score, compare and pairwise in one group per launch")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="torchrun_launches."))
    keep = Path(args.keep) if args.keep else work
    keep.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"]
    command += job_arguments(work, args.lines) if args.jobs else score_arguments(work, args.lines)
    ends: collections.Counter[str] = collections.Counter()
    first, seconds = None, []
    for i in range(1, args.launches + 1):
        start = time.perf_counter()
        proc = subprocess.run(command, capture_output=True, text=True, env=environment(), timeout=600, check=False)
        seconds.append(time.perf_counter() - start)
        end = how_it_ended(proc)
        if end == "ok":
            output = outputs(work) if args.jobs else proc.stdout
            first = output if first is None else first
            end = "ok" if output == first else "ok, other output"
        else:
            (keep / f"launch{i}.stderr").write_text(proc.stderr, encoding="utf-8")
        ends[end] += 1
        print(f"launch {i}: {end} ({seconds[-1]:.1f} s)", flush=True)
    summary = ", ".join(f"{k}: {v}" for k, v in ends.most_common())
    what = "score, compare and pairwise in one group" if args.jobs else "score"
    print(f"\n{args.launches} launches of 2 processes ({what}; {args.lines} pairs, IDF): {summary}")
    print(f"seconds per launch: min {min(seconds):.1f}, max {max(seconds):.1f}; failed launches' stderr in {keep}")
    print(f"load average at the end: {' / '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
