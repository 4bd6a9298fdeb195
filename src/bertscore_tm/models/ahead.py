"""Tokenising ahead: a Metric's update() hands its texts to one background thread and returns at once.

On an accelerator the update() of a validation loop holds the Python thread while the Rust tokenizer runs
(2.4 ms for 64 pairs on the device suite's H100 host, 3.7 s of a 13 s run over 100,000 pairs), and the device
waits for the loop's next step. Here the texts go to a thread of the process's own, the Rust tokenizer
releases the interpreter while it encodes, and the loop goes on. Jobs that wait while the thread is busy are
encoded together, one call for many update()s, which gives the tokenizer's own threads (one per core) batches
large enough to share.

The thread is one per process, started on the first job and left to end with the process (a daemon); a
forked child starts its own. What a job computes is `TextEncoder`'s own: the same ids and truncation flags as a
call in the caller's thread (`bertscore_tm.models.tokenizing`), so scores cannot change.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from itertools import groupby
from typing import Any

#: The most texts one call of the tokenizer takes, however many jobs wait: a job's result waits for the whole
#: call, so a cap keeps the first ones prompt.
MOST_TEXTS = 4096

Encode = Callable[[list[str]], tuple[list[list[int]], list[bool]]]
#: What a job's share of a call becomes on the thread before it is handed over (compact tensors, say).
Finish = Callable[[list[list[int]], list[bool]], Any]


def _as_is(ids: list[list[int]], cut: list[bool]) -> tuple[list[list[int]], list[bool]]:
    return ids, cut


@dataclass
class _Job:
    encode: Encode
    texts: list[str]
    finish: Finish = _as_is
    future: Future = field(default_factory=Future)


class _Worker:
    """The process's tokenising thread and its queue of jobs."""

    def __init__(self) -> None:
        self.jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self.thread: threading.Thread | None = None
        self.lock = threading.Lock()

    def submit(self, encode: Encode, texts: Sequence[str], finish: Finish = _as_is) -> Future:
        job = _Job(encode, list(texts), finish)
        with self.lock:
            if self.thread is None:
                self.thread = threading.Thread(target=self._run, name="bertscore-tm-tokenise", daemon=True)
                self.thread.start()
        self.jobs.put(job)
        return job.future

    def _waiting(self, first: _Job) -> list[_Job]:
        """`first` and the jobs queued behind it, up to `MOST_TEXTS` texts (the rest wait for the next call)."""
        jobs, texts = [first], len(first.texts)
        while texts < MOST_TEXTS:
            try:
                job = self.jobs.get_nowait()
            except queue.Empty:
                break
            jobs.append(job)
            texts += len(job.texts)
        return jobs

    def _run(self) -> None:
        while True:
            for encode, same in groupby(self._waiting(self.jobs.get()), key=lambda job: job.encode):
                _encode_together(encode, list(same))


def _encode_together(encode: Encode, jobs: list[_Job]) -> None:
    """One call of `encode` for the texts of `jobs` (which share it), each job's share of the result set on its
    future; an error is each job's error, raised where its result is asked for."""
    try:
        ids, cut = encode([text for job in jobs for text in job.texts])
    except BaseException as err:  # handed to each caller, whose result() raises it
        for job in jobs:
            job.future.set_exception(err)
        return
    start = 0
    for job in jobs:
        end = start + len(job.texts)
        try:
            job.future.set_result(job.finish(ids[start:end], cut[start:end]))
        except BaseException as err:  # this job's alone
            job.future.set_exception(err)
        start = end


_WORKER = _Worker()


def _after_fork_in_child() -> None:
    global _WORKER
    _WORKER = _Worker()  # the parent's thread does not exist in a child


os.register_at_fork(after_in_child=_after_fork_in_child)


def tokenise_ahead(encode: Encode, texts: Sequence[str], finish: Finish = _as_is) -> Future[Any]:
    """`encode(texts)` run on the process's tokenising thread: its (ids, truncated) once done, or what `finish`
    makes of them there (so that Python's lists of ids need not wait for the caller: a ready result waits as
    the caller will keep it)."""
    return _WORKER.submit(encode, texts, finish)
