"""Run several command lines in each process torchrun starts, in one process group (set up here once, so a
test pays for one launch): ``python -m torch.distributed.run --nproc-per-node 2 tests/integration/torchrun_jobs.py OUT
JOBS.json``, JOBS.json a list of argument lists. Rank 0's standard output of job i goes to OUT/i.out, every
rank's exit code to OUT/i.rank<r>.rc."""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path

import torch.distributed as dist

from bertscore_tm.cli import main


def run(out: Path, jobs: list[list[str]]) -> None:
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
        dist.barrier()  # as bertscore_tm.launch does: every process done before any tears down
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    run(Path(sys.argv[1]), json.loads(Path(sys.argv[2]).read_text(encoding="utf-8")))
