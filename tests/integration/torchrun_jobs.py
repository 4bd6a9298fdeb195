"""Run several command lines in each process torchrun starts, in one process group (set up here once, so a
test pays for one launch): ``python -m torch.distributed.run --nproc-per-node 2 tests/integration/torchrun_jobs.py OUT
JOBS.json``, JOBS.json a list of argument lists. Rank 0's standard output of job i goes to OUT/i.out, every
rank's exit code to OUT/i.rank<r>.rc, and the names of the process group's threads still running after the
group was destroyed to OUT/threads.rank<r> (none, one per line)."""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path

import torch.distributed as dist

from bertscore_tm.cli import main
from bertscore_tm.distributed.launch import import_collectives_first


def group_threads() -> list[str]:
    """The names of this process's gloo threads (Linux; none where /proc is not there)."""
    names = []
    for task in Path("/proc/self/task").glob("*"):
        with contextlib.suppress(OSError):
            names.append((task / "comm").read_text().strip())
    return sorted(name for name in names if "gloo" in name)


def run(out: Path, jobs: list[list[str]]) -> None:
    import_collectives_first()  # as importing the Metric or the functions before setting up a group does
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    try:
        for i, argv in enumerate(jobs):
            buffer = io.StringIO()
            with contextlib.redirect_stdout(buffer):
                code = main(argv)
            (out / f"{i}.rank{rank}.rc").write_text(str(code))
            if rank == 0:
                (out / f"{i}.out").write_text(buffer.getvalue(), encoding="utf-8")
            else:
                assert buffer.getvalue() == "", "only rank 0 writes"
        dist.barrier()  # as bertscore_tm.distributed.launch does: every process done before any tears down
    finally:
        dist.destroy_process_group()
    (out / f"threads.rank{rank}").write_text("\n".join(group_threads()))  # none: the group really ended


if __name__ == "__main__":
    run(Path(sys.argv[1]), json.loads(Path(sys.argv[2]).read_text(encoding="utf-8")))
