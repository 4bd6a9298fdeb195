"""Models from the Hugging Face Hub, fetched into the standard cache as ``from_pretrained`` fetches them, but only
what scoring reads. A download cut short is rolled back (`_rolled_back`) and a cached snapshot is used only when
complete (`missing_parts`), so that a later offline run never takes half a model for the model."""

from __future__ import annotations

import contextlib
import functools
import inspect
import json
import os
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from huggingface_hub import HfApi, constants, hf_hub_download, try_to_load_from_cache
from huggingface_hub.utils import (
    GatedRepoError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
    are_progress_bars_disabled,
    disable_progress_bars,
    enable_progress_bars,
)
from tqdm.auto import tqdm

from bertscore_tm.errors import ModelDownloadError, ModelNotFoundError, ModelSetupError

#: What transformers reads for the weights, in its order of preference: one file, or an index of shards.
WEIGHTS = (
    ("model.safetensors", "model.safetensors.index.json"),
    ("pytorch_model.bin", "pytorch_model.bin.index.json"),
)
#: Files at the top of a repo that configure the model or its tokenizer (settings, vocabularies, merges,
#: SentencePiece models): fetched with the weights; other weights formats, folders and model cards are not.
_SMALL_FILES = (".json", ".txt", ".model", ".spm", ".codes", ".tiktoken")
#: A tokenizer's vocabulary: without one transformers builds a tokenizer of the special tokens alone.
_VOCABULARIES = ("tokenizer.json", "vocab.txt", "vocab.json", "bpe.codes")
_VOCABULARY_SUFFIXES = (".model", ".spm")
_TRUE = frozenset({"1", "ON", "YES", "TRUE"})
_COMMIT = re.compile(r"[0-9a-f]{40}")
#: Whether hf_hub_download takes the class of its progress bars (huggingface_hub 1.1 on).
_TAKES_BARS = "tqdm_class" in inspect.signature(hf_hub_download).parameters


def offline_reason(local_files_only: bool) -> str | None:
    """Why this call may not download (the switch that says so), or None where it may."""
    if local_files_only:
        return "local_files_only=True"
    for variable in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        if os.environ.get(variable, "").strip().upper() in _TRUE:
            return f"{variable}={os.environ[variable]}"
    if constants.HF_HUB_OFFLINE:  # set when huggingface_hub was imported and unset since: it still refuses
        return "HF_HUB_OFFLINE was set when huggingface_hub was imported"
    return None


def hub_snapshot(
    repo_id: str,
    *,
    revision: str | None,
    local_files_only: bool,
    trust_remote_code: bool,
    progress: bool,
    before_weights: Callable[[Path], None],
    hint: str = "",
) -> tuple[Path, str]:
    """The complete snapshot folder of `repo_id` and its commit; `before_weights` may refuse it before the weights."""
    reason = offline_reason(local_files_only)
    if reason is not None or (revision is not None and _COMMIT.fullmatch(revision)):
        cached = cached_snapshot(repo_id, revision)  # (a commit never changes: no need to ask the Hub)
        if cached is not None:
            return cached
        if reason is not None:
            raise _not_on_this_machine(repo_id, revision, reason, hint)
    try:
        info = HfApi().model_info(repo_id, revision=revision or constants.DEFAULT_REVISION)
    except (RepositoryNotFoundError, RevisionNotFoundError) as err:
        raise _not_found(repo_id, revision, err) from None
    except Exception as err:  # the Hub unreachable or failing: a complete cached copy serves, as in transformers
        cached = cached_snapshot(repo_id, revision)
        if cached is None:
            raise ModelDownloadError(
                f"Model '{repo_id}'{_at(revision)} is not in the Hugging Face cache and the Hub "
                f"({constants.ENDPOINT}) could not be asked for it: {_said(err)}. Check the network (and "
                f"HF_ENDPOINT), or download the model where there is network (`{_command(repo_id, revision)}`) "
                "and pass its folder.",
                model=repo_id,
                revision=revision,
            ) from err
        return cached
    commit = str(info.sha)
    top = [sibling.rfilename for sibling in info.siblings or () if "/" not in sibling.rfilename]
    index, files = _plan(repo_id, commit, top, trust_remote_code)
    with _rolled_back(_repo_folder(repo_id)), _progress_bars(progress) as bars:
        fetch = functools.partial(_fetch, repo_id, asked=revision, bars=bars)
        # the config by the revision's name (refs/ records it, as transformers does), the rest by the commit
        folder = fetch("config.json", revision or constants.DEFAULT_REVISION).parent
        if folder.name != commit:
            raise ModelDownloadError(
                f"The Hugging Face Hub gave commit {commit} for '{repo_id}'{_at(revision)} and then {folder.name} "
                "for its config.json: the model changed during the download (or the connection failed); run it "
                "again.",
                model=repo_id,
                revision=revision,
            )
        if index is not None:
            fetch(index, commit)
        before_weights(folder)
        for name in files + _shards(repo_id, folder, index, top):
            fetch(name, commit)
    return folder, commit


def cached_snapshot(repo_id: str, revision: str | None) -> tuple[Path, str] | None:
    """The complete cached snapshot of `repo_id` at `revision` and its commit, or None."""
    folder = _cached_folder(repo_id, revision)
    if folder is None or missing_parts(folder):
        return None
    return folder, folder.name


def missing_parts(folder: Path) -> list[str]:
    """What `folder` lacks of a model bertscore-tm can load: its config, a tokenizer vocabulary, whole weights."""
    missing = []
    if not (folder / "config.json").is_file():
        missing.append("config.json")
    files = [path.name for path in folder.iterdir() if path.is_file()] if folder.is_dir() else []
    if not any(_is_vocabulary(name) for name in files):
        missing.append("tokenizer files")
    if not _has_weights(folder):
        missing.append("weights (model.safetensors or pytorch_model.bin, or all the shards of their index)")
    return missing


def _cached_folder(repo_id: str, revision: str | None) -> Path | None:
    found = try_to_load_from_cache(repo_id, "config.json", revision=revision or constants.DEFAULT_REVISION)
    return Path(found).parent if isinstance(found, str) else None


def _is_vocabulary(name: str) -> bool:
    return name in _VOCABULARIES or name.endswith(_VOCABULARY_SUFFIXES)


def _has_weights(folder: Path) -> bool:
    for single, index in WEIGHTS:
        if (folder / single).is_file():
            return True
        if (folder / index).is_file():
            shards = _index_shards(folder / index)
            return shards is not None and all((folder / shard).is_file() for shard in shards)
    return False


def _index_shards(index: Path) -> list[str] | None:
    """The shard files a weights index names, or None where it cannot be read."""
    try:
        return sorted({str(shard) for shard in json.loads(index.read_text(encoding="utf-8"))["weight_map"].values()})
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _plan(repo_id: str, commit: str, top: list[str], trust_remote_code: bool) -> tuple[str | None, list[str]]:
    """The weights index to fetch before the check of `hub_snapshot`'s `before_weights` (None: the weights are one
    file), and the files to fetch after it; a repo lacking a part is refused up front, before any download."""
    weights = next(((single, index) for single, index in WEIGHTS if single in top or index in top), None)
    problem = ""
    if "config.json" not in top:
        problem = "no config.json (it is not a transformers model)"
    elif weights is None:
        problem = "no weights transformers loads (model.safetensors or pytorch_model.bin, or their sharded index)"
    elif not any(_is_vocabulary(name) for name in top):
        problem = "no tokenizer files (tokenizer.json, vocab.txt, vocab.json, a SentencePiece model...)"
    if problem or weights is None:
        raise ModelSetupError(
            f"The model '{repo_id}' on the Hugging Face Hub (commit {commit}) has {problem}, so bertscore-tm cannot "
            "score with it. Pass another model, or a local folder with config.json, the tokenizer files and weights.",
            argument="model_name_or_path",
        )
    single, index = weights
    indexes = {name for pair in WEIGHTS for name in pair if name.endswith(".json")}
    files = sorted(
        name for name in top if name.endswith(_SMALL_FILES) and name not in indexes and name != "config.json"
    )
    if trust_remote_code:
        files += sorted(name for name in top if name.endswith(".py"))
    return (None, [*files, single]) if single in top else (index, files)


def _shards(repo_id: str, folder: Path, index: str | None, top: list[str]) -> list[str]:
    """The shards the fetched weights index names (none without an index); all must be in the repo."""
    if index is None:
        return []
    shards = _index_shards(folder / index)
    if shards is None or not all(shard in top for shard in shards):
        raise ModelSetupError(
            f"The weights index {index} of '{repo_id}' on the Hugging Face Hub cannot be read or names shards the "
            "repo does not have, so its weights cannot be fetched whole.",
            argument="model_name_or_path",
        )
    return shards


def _fetch(repo_id: str, filename: str, revision: str, asked: str | None, bars: dict[str, Any]) -> Path:
    """One file into the cache (nothing is fetched when the snapshot has it); the Hub's errors said as ours."""
    try:
        return Path(hf_hub_download(repo_id, filename, revision=revision, **bars))
    except (RepositoryNotFoundError, RevisionNotFoundError) as err:
        raise _not_found(repo_id, asked, err) from None
    except Exception as err:
        raise ModelDownloadError(
            f"Downloading {filename} of '{repo_id}'{_at(asked)} from the Hugging Face Hub ({constants.ENDPOINT}) "
            f"failed: {_said(err)}. What this attempt had written to the cache was removed again; run it again (a "
            f"dropped connection or a server error often passes), or download the model where the network is "
            f"better (`{_command(repo_id, asked)}`) and pass its folder.",
            model=repo_id,
            revision=asked,
        ) from err


@contextlib.contextmanager
def _rolled_back(folder: Path) -> Iterator[None]:
    """On any failure of the block, an interrupt included, take out what it added to the cache `folder` and put
    back the refs it rewrote (a fetch by a branch's name rewrites them)."""
    before = _paths(folder)
    refs = {}
    for path in (folder / "refs").rglob("*"):
        with contextlib.suppress(OSError):  # unreadable, or gone since listed: nothing to put back
            refs[path] = path.read_bytes()
    try:
        yield
    except BaseException:
        for path in sorted(_paths(folder) - before, reverse=True):  # a folder after its files
            with contextlib.suppress(OSError):
                if path.is_dir() and not path.is_symlink():
                    path.rmdir()  # only when empty: another process's files stay
                else:
                    path.unlink()
        for path, content in refs.items():
            with contextlib.suppress(OSError):
                if path.read_bytes() != content:
                    path.write_bytes(content)
        raise


def _paths(folder: Path) -> set[Path]:
    return {folder, *folder.rglob("*")} if folder.is_dir() else set()


def _repo_folder(repo_id: str) -> Path:
    """The model's folder in the cache (huggingface_hub's documented layout: models--{org}--{name})."""
    return Path(constants.HF_HUB_CACHE).expanduser() / ("models--" + repo_id.replace("/", "--"))


@contextlib.contextmanager
def _progress_bars(progress: bool) -> Iterator[dict[str, Any]]:
    """hf_hub_download's keyword that shows its bars where asked, or on a terminal (unless
    HF_HUB_DISABLE_PROGRESS_BARS says no); where it has none, its global switch, put back after."""
    isatty = getattr(sys.stderr, "isatty", None)
    show = progress or (bool(callable(isatty) and isatty()) and not are_progress_bars_disabled())
    if _TAKES_BARS:
        yield {"tqdm_class": _ShownBars if show else _HiddenBars}
    elif show or are_progress_bars_disabled():
        yield {}
    else:
        disable_progress_bars()
        try:
            yield {}
        finally:
            enable_progress_bars()


class _ShownBars(tqdm):
    """tqdm's bar on stderr, shown also away from a terminal (where verbose asks for it)."""

    hidden = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.pop("name", None)
        kwargs["disable"] = self.hidden
        super().__init__(*args, **kwargs)


class _HiddenBars(_ShownBars):
    hidden = True


def _not_found(repo_id: str, revision: str | None, err: Exception) -> ModelNotFoundError:
    if isinstance(err, RevisionNotFoundError):
        return ModelNotFoundError(
            f"The Hugging Face Hub ({constants.ENDPOINT}) has the model '{repo_id}' but no revision "
            f"'{revision or constants.DEFAULT_REVISION}': "
            "revision= takes a branch, a tag or a full commit hash of the model.",
            model=repo_id,
            argument="revision",
        )
    if isinstance(err, GatedRepoError):
        return ModelNotFoundError(
            f"The model '{repo_id}' on the Hugging Face Hub is gated: accept its conditions on its page and log in "
            "(`hf auth login`), then run again.",
            model=repo_id,
        )
    return ModelNotFoundError(
        f"Model '{repo_id}' is not a local directory, and the Hugging Face Hub ({constants.ENDPOINT}) has no model "
        "of that name (none this machine may see: a private model needs `hf auth login`). Check the name, or pass "
        "model_name_or_path='/path/to/local/model'.",
        model=repo_id,
    )


def _not_on_this_machine(repo_id: str, revision: str | None, reason: str, hint: str) -> ModelNotFoundError:
    folder = _cached_folder(repo_id, revision)
    where = (
        f"it is in the Hugging Face cache ({folder}) but incomplete, without {', '.join(missing_parts(folder))}"
        if folder is not None
        else f"it is not a local directory and not in the Hugging Face cache ({constants.HF_HUB_CACHE})"
    )
    return ModelNotFoundError(
        f"Model '{repo_id}'{_at(revision)} is not on this machine: {where}, and downloads are off ({reason}), so the "
        f"hub was not contacted.{hint} Download it once where there is network (`{_command(repo_id, revision)}`), "
        "or pass model_name_or_path='/path/to/local/model' (a directory with config.json and the tokenizer files).",
        model=repo_id,
    )


def _at(revision: str | None) -> str:
    return "" if revision is None else f" at revision '{revision}'"


def _command(repo_id: str, revision: str | None) -> str:
    return f"hf download {repo_id}" + ("" if revision is None else f" --revision {revision}")


def _said(err: BaseException) -> str:
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    text = lines[0].rstrip(".") if lines else ""
    return f"{type(err).__name__}: {text[:300]}" if text else type(err).__name__
