"""Building a scorer is one pass down the folders (docs/architecture.md, "One way in"): the settings are checked,
the models folder's one entry (`load_model`) turns a name or an object into a loaded, checked encoder, the
embedder is made, and the scorer is assembled from them, with no folder entered twice on the way."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

import bertscore_tm
from bertscore_tm.scoring.scorer import build_scorer
from tests.conftest import MINILM

PACKAGE = str(Path(bertscore_tm.__file__).parent)


def _folder(frame: FrameType | None) -> str | None:
    """The package folder (or root module) of the nearest frame of the package's own code, up from `frame`."""
    while frame is not None:
        path = frame.f_code.co_filename
        if path.startswith(PACKAGE + os.sep):
            return os.path.relpath(path, PACKAGE).split(os.sep)[0].removesuffix(".py")
        frame = frame.f_back
    return None


def folders_entered(build: Callable[[], Any]) -> list[str]:
    """The folders `build()` enters, in order: a call into the package's code from another folder (or from outside)."""
    entered: list[str] = []

    def profile(frame: FrameType, event: str, arg: object) -> None:
        if event != "call" or not frame.f_code.co_filename.startswith(PACKAGE + os.sep):
            return
        here, caller = _folder(frame), _folder(frame.f_back)
        if here != caller:
            entered.append(str(here))

    build()  # imports and caches warmed: only the build itself is followed
    sys.setprofile(profile)
    try:
        build()
    finally:
        sys.setprofile(None)
    return entered


def test_a_model_name_goes_down_the_folders_once() -> None:
    entered = folders_entered(lambda: build_scorer({"model_name_or_path": MINILM}))
    # the embedder reads the family's facts from models/ as it installs the model: the folders first entered
    assert list(dict.fromkeys(entered)) == ["scoring", "settings", "models", "embedding"]
    assert set(entered[entered.index("embedding") :]) <= {"embedding", "models"}


def test_a_model_object_goes_down_the_folders_once(minilm_path: str) -> None:
    from transformers import AutoModel, AutoTokenizer

    model, tokenizer = AutoModel.from_pretrained(minilm_path), AutoTokenizer.from_pretrained(minilm_path)
    entered = folders_entered(lambda: build_scorer({"model": model, "tokenizer": tokenizer, "num_layers": 3}))
    assert entered == ["scoring", "settings", "models", "embedding"]
