"""torchmetrics' spellings of our settings, taken with their meaning (docs/migrating.md) or refused saying what
to pass instead, before the settings are checked."""

from __future__ import annotations

import os
import tempfile
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from typing import Any

from bertscore_tm.errors import ArgumentValueError
from bertscore_tm.settings.rules import boolean, wrong_type

#: torchmetrics' argument names that are not ours, each with what it becomes.
TORCHMETRICS = ("user_tokenizer", "user_forward_fn", "baseline_url", "truncation")


def from_torchmetrics(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """`arguments` with torchmetrics' spellings turned into ours: ``user_tokenizer``, ``user_forward_fn(model,
    batch)``, ``baseline_url`` (downloaded only where downloads are allowed) and ``truncation``."""
    out = {k: v for k, v in arguments.items() if k not in TORCHMETRICS}
    given = {k: arguments[k] for k in TORCHMETRICS if k in arguments}
    tokenizer = given.get("user_tokenizer")
    if tokenizer is not None:
        _not_both(out, "user_tokenizer", "tokenizer")
        out["tokenizer"] = tokenizer
    forward = given.get("user_forward_fn")
    if forward is not None:
        _not_both(out, "user_forward_fn", "forward_fn")
        if not callable(forward):
            raise wrong_type("user_forward_fn", "a function (model, batch) -> [B, T, D]", "callable", forward)
        out["forward_fn"] = _BatchForward(forward)
    if given.get("baseline_url") is not None:
        _not_both(out, "baseline_url", "baseline_path")
        out["baseline_path"] = _baseline_file(given["baseline_url"], bool(out.get("local_files_only")))
    truncation = given.get("truncation")
    if truncation is not None:
        boolean("truncation", truncation)
        if truncation is False:  # never cut a text: longer ones run in windows (torchmetrics fails on them)
            _not_both(out, "truncation", "long_texts")
            out["long_texts"] = "window"
    return out


def _not_both(arguments: Mapping[str, Any], theirs: str, ours: str) -> None:
    if arguments.get(ours) is not None:
        raise ArgumentValueError(
            f"{theirs} (torchmetrics' name) and {ours} say the same thing: pass one of them",
            argument=theirs,
            allowed=f"None when {ours} is given",
            value=arguments[ours],
            others=(ours,),
        )


class _BatchForward:
    """torchmetrics' ``user_forward_fn(model, {"input_ids", "attention_mask"})`` as our ``forward_fn(model,
    input_ids, attention_mask)``; a class, so that a metric holding it pickles."""

    def __init__(self, forward: Callable[[Any, dict[str, Any]], Any]) -> None:
        self.forward = forward

    def __call__(self, model: Any, input_ids: Any, attention_mask: Any) -> Any:
        return self.forward(model, {"input_ids": input_ids, "attention_mask": attention_mask})


def _baseline_file(url: object, offline: bool) -> str:
    """A ``file://`` URL's path, or an ``http(s)://`` one downloaded to a temporary file unless downloads are off."""
    if not isinstance(url, str) or not url.strip():
        raise wrong_type("baseline_url", "a URL (file://, https://)", "str", url)
    parts = urllib.parse.urlparse(url)
    if parts.scheme == "file":
        return urllib.request.url2pathname(parts.path)
    if parts.scheme not in ("http", "https"):
        raise ArgumentValueError(
            f"baseline_url={url!r}: a file:// or https:// URL (a local file: pass baseline_path instead)",
            argument="baseline_url",
            allowed="a file:// or https:// URL",
            value=url,
        )
    switched_off = offline or any(os.environ.get(v, "").strip() not in ("", "0") for v in _OFFLINE)
    if switched_off:
        raise ArgumentValueError(
            f"baseline_url={url!r} needs a download, and downloads are off (local_files_only or HF_HUB_OFFLINE): "
            "fetch the file where there is network and pass baseline_path",
            argument="baseline_url",
            allowed="a file:// URL while offline",
            value=url,
        )
    handle, path = tempfile.mkstemp(prefix="bertscore-tm-baseline-", suffix=".csv")
    try:
        with os.fdopen(handle, "wb") as out, urllib.request.urlopen(url, timeout=60) as response:
            out.write(response.read())
    except OSError as err:
        os.unlink(path)
        raise ArgumentValueError(
            f"baseline_url={url!r} could not be downloaded ({err}): pass a local file as baseline_path",
            argument="baseline_url",
            allowed="a URL that can be read",
            value=url,
        ) from None
    return path


_OFFLINE = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
