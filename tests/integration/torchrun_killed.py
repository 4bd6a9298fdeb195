"""One process of a torchrun job killed part way: ``python -m torch.distributed.run --nproc-per-node 2
tests/integration/torchrun_killed.py RANK SHARDS SIGNAL -- bertscore-tm arguments...`` runs the command line in each
process; the process of rank RANK sends itself SIGNAL (KILL or TERM) when it starts its shard number SHARDS + 1
(after SHARDS finished), a kill at a chosen point. RANK -1 kills none (the run to resume)."""

from __future__ import annotations

import os
import signal
import sys

from bertscore_tm.cli import main
from bertscore_tm.corpus import resumable


def kill_at(shards: int, signum: int) -> None:
    real, started = resumable._score_tokens, []

    def scoring(*args, **kwargs):  # type: ignore[no-untyped-def]
        started.append(1)
        if len(started) > shards:
            os.kill(os.getpid(), signum)
        return real(*args, **kwargs)

    resumable._score_tokens = scoring


if __name__ == "__main__":
    rank, shards, name = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    assert sys.argv[4] == "--"
    if rank == int(os.environ["RANK"]):
        kill_at(shards, getattr(signal, f"SIG{name}"))
    sys.exit(main(sys.argv[5:]))
