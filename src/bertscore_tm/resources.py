"""Where `configs/` (layer and language tables) and `baselines/` live: inside the package when installed, at the
repository root in a checkout. They are data files, not code, so users can read, diff and extend them."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

_PACKAGE_DIR = Path(__file__).resolve().parent


def data_dir(name: str) -> Path:
    """The directory `name` (``"configs"`` or ``"baselines"``), packaged or in the source tree."""
    for candidate in (_PACKAGE_DIR / name, _PACKAGE_DIR.parents[1] / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(
        f"bertscore-tm's data folder '{name}' is missing (looked in {_PACKAGE_DIR} and the source tree): "
        "reinstall the package"
    )


@cache
def load_config(name: str) -> dict[str, Any]:
    """A JSON file from `configs/`, parsed once."""
    return json.loads((data_dir("configs") / name).read_text(encoding="utf-8"))
