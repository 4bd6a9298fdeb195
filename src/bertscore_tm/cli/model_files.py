"""A model folder's weights files, checked to be whole before the model loads: a cut-short or empty file is
found from its structure, without reading the tensors, and named instead of a loader's traceback."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

from bertscore_tm.cli.errors import UsageError, one_line


def weights_files(folder: Path) -> list[Path]:
    """The weights files transformers will read from `folder` (none: transformers says what is missing)."""
    from bertscore_tm.models.hub import WEIGHTS  # the files it reads, in its order of preference

    for single, index in WEIGHTS:
        if (folder / single).is_file():
            return [folder / single]
        if (folder / index).is_file():
            try:
                shards = json.loads((folder / index).read_text(encoding="utf-8"))["weight_map"].values()
                return [folder / str(shard) for shard in sorted(set(shards))]
            except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
                raise UsageError(
                    f"the weights index {folder / index} is damaged ({one_line(err)}): download the model again"
                ) from None
    return []


def check_weights(folder: Path) -> None:
    for file in weights_files(folder):
        problem = weights_problem(file)
        if problem is not None:
            raise UsageError(
                f"the weights file {file} {problem}: the model folder is damaged or incomplete; "
                "download the model again"
            )


def weights_problem(file: Path) -> str | None:
    """What is wrong with a weights file, for a message; None when it looks whole."""
    if not file.is_file():
        return "is missing"
    size = file.stat().st_size
    if size == 0:
        return "is empty"
    if file.name.endswith(".safetensors"):
        return _safetensors_problem(file, size)
    return _torch_zip_problem(file)


def _safetensors_problem(file: Path, size: int) -> str | None:
    """An 8-byte header length, a JSON header, then the tensors at the offsets it gives."""
    with file.open("rb") as fh:
        head = fh.read(8)
        header_size = int.from_bytes(head, "little") if len(head) == 8 else -1
        if not 0 < header_size <= size - 8:
            return f"is cut short or not a safetensors file (its header does not fit in its {size} bytes)"
        try:
            header = json.loads(fh.read(header_size))
            end = max((int(t["data_offsets"][1]) for k, t in header.items() if k != "__metadata__"), default=0)
        except (ValueError, KeyError, TypeError, IndexError, AttributeError):
            return "has a damaged header"
    if 8 + header_size + end > size:
        return f"is cut short: it has {size} bytes, its header describes {8 + header_size + end}"
    return None


def _torch_zip_problem(file: Path) -> str | None:
    """torch.save writes a zip archive, whose directory is at its end: a cut-short file has none."""
    with file.open("rb") as fh:
        magic = fh.read(4)
    if magic == b"PK\x03\x04" and not zipfile.is_zipfile(file):
        return "is cut short (its zip directory is missing)"
    return None


def weights_read_errors() -> tuple[type[BaseException], ...]:
    """What the weights readers raise for a damaged file that passed the structural check."""
    import pickle

    errors: list[type[BaseException]] = [pickle.UnpicklingError, EOFError, zipfile.BadZipFile]
    try:
        from safetensors import SafetensorError
    except ImportError:
        pass
    else:
        errors.append(SafetensorError)
    return tuple(errors)
