"""Public names imported on first use, for the root package and for each folder's `__init__`.

A package lists its public names (a literal `__all__`, which linters and type checkers read) and where each one
lives; `exports` gives it the module-level `__getattr__` (PEP 562) that imports the defining module only when a
name is first asked for. So `import bertscore_tm` and `import bertscore_tm.tuning.correlation` load neither torch
nor transformers, and the command line answers `--help` at once.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def exports(package: str, where: Mapping[str, str]) -> Callable[[str], Any]:
    """The `__getattr__` of `package`: each name of `where` is imported from the module it maps to (a dotted
    name relative to `package`, as ``"engines.functional"``) and kept, so the import runs once."""

    def __getattr__(name: str) -> Any:
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{where[name]}"), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
