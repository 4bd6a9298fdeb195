"""SIGINT and SIGTERM as exceptions that are never lost and never leave a module half imported.

Python raises a signal's exception wherever the main thread is. Inside an import it leaves a module half set up,
and cleanup on the way out may fail oddly; inside a finaliser it cannot be raised at all (``Exception ignored``),
and the command runs on. Inside `terminable` a signal landing in an import is held until the import is over, and
one lost in a finaliser is raised again a moment later."""

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
    """While inside, SIGTERM raises `Terminated` and SIGINT KeyboardInterrupt (where Python's own handler
    had it), in the main thread only; every handler and `sys.unraisablehook` are put back afterwards."""
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
    """How many frames from `frame` down are importlib's own."""
    count = 0
    while frame is not None:
        count += frame.f_code.co_filename.startswith(_IMPORTLIB)
        frame = frame.f_back
    return count
