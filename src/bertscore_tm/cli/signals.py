"""SIGINT and SIGTERM as exceptions that are never lost and never leave a module half imported.

Python runs a signal's handler between two bytecodes, wherever the main thread then is, and an exception raised
there unwinds from that point. Two such points do harm:

- inside an import, the exception leaves a module behind in `sys.modules` but not on its package, and whatever
  cleans up on the way out may then fail in odd ways (seen: a RecursionError out of numpy's lazy attributes, in
  place of the one line the user should get);
- inside a finaliser or a weakref callback (importlib's module locks have one), Python cannot raise at all: it
  prints ``Exception ignored in ...`` and goes on, and the command runs to its end as if no signal had come.

Inside `terminable`, a signal that lands in an import is held until the import is over, and one lost in a finaliser
is raised again a moment later; both then unwind from ordinary code (temporary files removed, one line, exit code
130 or 143). Holding lasts as long as the import, a few seconds at most while torch loads.
"""

from __future__ import annotations

import contextlib
import signal
import sys
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

from bertscore_tm.cli.errors import Terminated

#: How often a held signal looks again whether it may be raised.
RETRY_S = 0.005
_IMPORTLIB = "<frozen importlib._bootstrap"
_Handler = Callable[[int, FrameType | None], None]


@contextlib.contextmanager
def terminable() -> Iterator[None]:
    """While inside, SIGTERM raises `Terminated` and SIGINT KeyboardInterrupt (where Python's own handler had it),
    as described above, in the main thread: the only one that can set a handler (elsewhere nothing changes).
    Every handler and `sys.unraisablehook` are put back afterwards."""
    held: list[type[BaseException]] = []
    in_hook = False
    outer_imports = imports_under_way(sys._getframe())  # a command run from inside an import is not held for it

    def raising(kind: type[BaseException]) -> _Handler:
        def handler(signum: int, frame: FrameType | None) -> None:
            held.append(kind)
            raise_held(signum, frame)

        return handler

    def raise_held(signum: int, frame: FrameType | None) -> None:
        if not held:
            return
        if in_hook or imports_under_way(frame) > outer_imports:
            signal.setitimer(signal.ITIMER_REAL, RETRY_S)
            return
        kind = held[0]
        held.clear()
        raise kind

    def unraisable(info: sys.UnraisableHookArgs) -> None:
        nonlocal in_hook
        if not isinstance(info.exc_value, KeyboardInterrupt):
            previous_hook(info)
            return
        in_hook = True
        held.append(type(info.exc_value))
        signal.setitimer(signal.ITIMER_REAL, RETRY_S)
        in_hook = False

    handlers = {signal.SIGTERM: raising(Terminated), signal.SIGALRM: raise_held}
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # not where SIGINT is ignored (`nohup`, `&`)
        handlers[signal.SIGINT] = raising(KeyboardInterrupt)
    previous: dict[signal.Signals, Any] = {}  # what signal.signal gave back: a handler, SIG_DFL, SIG_IGN or None
    previous_hook = sys.unraisablehook
    try:
        for signum, handler in handlers.items():
            previous[signum] = signal.signal(signum, handler)
    except ValueError:  # not the main thread: nothing was set
        yield
        return
    sys.unraisablehook = unraisable
    try:
        yield
    finally:
        pending = held[:1]  # a signal still held as the command ends is raised as it ends, never dropped
        if pending:
            signal.setitimer(signal.ITIMER_REAL, 0)  # the retry armed for it (only then: a caller's alarm stays)
        sys.unraisablehook = previous_hook
        for signum, former in previous.items():
            signal.signal(signum, former)
        if pending:
            raise pending[0]


def imports_under_way(frame: FrameType | None) -> int:
    """How many of the frames from `frame` down its stack are importlib's own: more than at the start of
    `terminable` means an import begun since is still running."""
    count = 0
    while frame is not None:
        count += frame.f_code.co_filename.startswith(_IMPORTLIB)
        frame = frame.f_back
    return count
