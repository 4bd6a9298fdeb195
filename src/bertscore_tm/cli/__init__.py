"""The `bertscore-tm` command line (also `python -m bertscore_tm`): one module per command under
`commands`, the parts they share once each (`inputs`, `outputs`, `options`, `metrics`, `devices`, `errors`).

A user error prints one line, ``bertscore-tm: error: ...``, and exits with 2; inputs, outputs, the device, the
model and the baseline are checked before any model loads, and output files appear whole or not at all.
Nothing here imports torch until a command runs, so ``--help`` answers at once. Guide: docs/cli.md.
"""

from __future__ import annotations

from bertscore_tm.cli.app import build_parser, main
from bertscore_tm.cli.devices import process_device as _process_device  # noqa: F401 (tests/integration/test_launch.py)
from bertscore_tm.cli.errors import PROG, UsageError
from bertscore_tm.cli.inputs import STDIN, read_lines

__all__ = ["PROG", "STDIN", "UsageError", "build_parser", "main", "read_lines"]
