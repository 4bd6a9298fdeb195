"""What the doors share: the peers' ``nthreads`` argument as torch threads for one call, and the error a door gives
where its peer library is not installed.

A door's classes subclass its peer's, so they can only be defined where the peer imports; the module itself
imports without it (the package's own checks import every module), and asking for such a class then names the
package to install rather than failing with a bare ``AttributeError``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, NoReturn

import torch

from bertscore_tm.settings.rules import integer


@contextmanager
def torch_threads(nthreads: int) -> Iterator[None]:
    """Run the block on `nthreads` torch threads and restore the process's own afterwards; ``0`` leaves them as
    they are (bert-score's 0: no pool of its own). Anything but an int >= 0 is an error naming ``nthreads``."""
    integer(0)("nthreads", nthreads)
    before = torch.get_num_threads()
    if nthreads:
        torch.set_num_threads(nthreads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def missing_peer(module: str, peer: str, requirement: str, names: tuple[str, ...]) -> Callable[[str], Any]:
    """The module-level `__getattr__` (PEP 562) of door `module` where `peer` is not installed: each of `names`
    raises ModuleNotFoundError saying what to install; any other name is the usual AttributeError."""

    def __getattr__(name: str) -> NoReturn:
        if name in names:
            raise ModuleNotFoundError(
                f"{module}.{name} needs {peer}, which is not installed here: pip install '{requirement}'",
                name=peer,
            )
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    return __getattr__
