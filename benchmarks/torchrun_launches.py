"""Launch the corpus job under torchrun many times in a row and count how each launch ended (issue 26, item 3:
a process once died now and then with SIGABRT, "terminate called without an active exception").

Each launch is ``torchrun --standalone --nproc-per-node 2 -m bertscore_tm score ... --idf -s`` on CPU (gloo), as
`tests/integration/test_launch.py` runs it, with Python's faulthandler on so that an abort prints every thread's
stack. The output of every launch is checked against the first one's (the same bytes); the stderr of any launch that
fails is kept in the --keep folder. Prints one line per launch and a summary for benchmarks/RESULTS.md.

    python benchmarks/torchrun_launches.py                 # 50 launches
    python benchmarks/torchrun_launches.py --launches 5    # a quick look
"""

from __future__ import annotations

import argparse
import collections
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--launches", type=int, default=50, help="launches in a row (default: 50)")
    parser.add_argument("--lines", type=int, default=11, help="pairs scored per launch (default: 11)")
    parser.add_argument("--keep", default=None, help="folder for the stderr of failed launches (default: a temp one)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="torchrun_launches."))
    keep = Path(args.keep) if args.keep else work
    keep.mkdir(parents=True, exist_ok=True)
    for name in ("hyps_long", "refs_long"):
        lines = (WMT / f"{name}.txt").read_text(encoding="utf-8").splitlines()[: args.lines]
        (work / f"{name}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"]
    command += ["-m", "bertscore_tm", "score", "-c", str(work / "hyps_long.txt"), "-r", str(work / "refs_long.txt")]
    command += ["-m", MINILM, "--idf", "-s", "--no-progress"]
    ends: collections.Counter[str] = collections.Counter()
    first, seconds = None, []
    for i in range(1, args.launches + 1):
        start = time.perf_counter()
        proc = subprocess.run(command, capture_output=True, text=True, env=environment(), timeout=600, check=False)
        seconds.append(time.perf_counter() - start)
        end = how_it_ended(proc)
        if end == "ok":
            first = proc.stdout if first is None else first
            end = "ok" if proc.stdout == first else "ok, other output"
        else:
            (keep / f"launch{i}.stderr").write_text(proc.stderr, encoding="utf-8")
        ends[end] += 1
        print(f"launch {i}: {end} ({seconds[-1]:.1f} s)", flush=True)
    summary = ", ".join(f"{k}: {v}" for k, v in ends.most_common())
    print(f"\n{args.launches} launches of 2 processes ({args.lines} pairs, IDF): {summary}")
    print(f"seconds per launch: min {min(seconds):.1f}, max {max(seconds):.1f}; failed launches' stderr in {keep}")
    print(f"load average at the end: {' / '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
