"""The public API is fixed at the root: `bertscore_tm.__all__` is the list below, every name in it imports from
`bertscore_tm` itself and is documented in docs/api.md. A name added or dropped is a decision, made here."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

import bertscore_tm

REPO = Path(__file__).resolve().parents[2]
PACKAGE = Path(bertscore_tm.__file__).parent

EXPORTED = [
    "PACKAGED_MINILM",
    "ArgumentTypeError",
    "ArgumentValueError",
    "BERTScore",
    "BERTScoreError",
    "BERTScorer",
    "BaselineFileError",
    "BaselineNotFoundError",
    "BatchScorer",
    "CheckpointMismatchError",
    "ColumnDataError",
    "DeviceMemoryError",
    "InputFileError",
    "Judgements",
    "LayerTuning",
    "ModelDownloadError",
    "ModelNotFoundError",
    "ModelSetupError",
    "PairExplanation",
    "RelativeRankings",
    "Scores",
    "SettingsMismatchError",
    "__version__",
    "add_to_layer_table",
    "bert_score",
    "bootstrap_interval",
    "corpus_idf",
    "explain",
    "mbr_select",
    "paired_test",
    "pairwise_bert_score",
    "pairwise_resumable",
    "read_judgements",
    "read_relative_rankings",
    "score",
    "score_resumable",
    "score_stream",
    "tune_from_scores",
    "tune_layers",
    "tune_layers_on_rankings",
]


def test_the_exported_names_are_the_public_api() -> None:
    assert sorted(bertscore_tm.__all__) == sorted(EXPORTED)


def test_every_exported_name_imports_from_the_root_and_is_the_defining_object() -> None:
    for name in bertscore_tm.__all__:
        value = getattr(bertscore_tm, name)
        if callable(value) and hasattr(value, "__module__"):
            module = importlib.import_module(value.__module__)
            assert getattr(module, name) is value, name


def _documented() -> set[str]:
    """`module.name` for every name docs/api.md renders: a `::: module.name` line, or a `::: module` line (all of
    its public members, or those its `members:` option lists)."""
    lines = (REPO / "docs" / "api.md").read_text(encoding="utf-8").splitlines()
    documented: set[str] = set()
    for i, line in enumerate(lines):
        match = re.fullmatch(r"::: ([\w.]+)", line)
        if not match:
            continue
        target = match.group(1)
        members = []
        for follow in lines[i + 1 :]:
            if not follow.startswith(" "):
                break
            if re.fullmatch(r"\s+- \w+", follow):
                members.append(follow.split("- ")[1])
        try:
            module = importlib.import_module(target)
        except ModuleNotFoundError:
            documented.add(target)
            continue
        names = members or [n for n in vars(module) if not n.startswith("_")]
        documented.update(f"{target}.{n}" for n in names)
    return documented


def test_every_exported_name_is_documented_in_the_api_reference() -> None:
    documented = _documented()
    missing = []
    for name in bertscore_tm.__all__:
        if name == "__version__":
            continue
        value = getattr(bertscore_tm, name)
        module = getattr(value, "__module__", None) if callable(value) else None
        homes = {f"{module}.{name}"} if module else {f"{m}.{name}" for m in _defining_modules(name)}
        if not homes & documented:
            missing.append(name)
    assert missing == []


def _defining_modules(name: str) -> list[str]:
    """The modules whose source assigns `name` at the top level (for constants, which carry no __module__)."""
    found = []
    for path in PACKAGE.rglob("*.py"):
        if re.search(rf"^{re.escape(name)}\b.*=", path.read_text(encoding="utf-8"), re.M):
            dotted = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
            found.append(dotted)
    return found


def _folders() -> list[str]:
    return sorted(
        ".".join(path.parent.relative_to(PACKAGE.parent).parts)
        for path in PACKAGE.rglob("__init__.py")
        if path.parent != PACKAGE
    )


@pytest.mark.parametrize("folder", _folders())
def test_each_folder_exports_what_its_all_lists(folder: str) -> None:
    package = importlib.import_module(folder)
    for name in getattr(package, "__all__", []):
        assert getattr(package, name) is not None, f"{folder}.{name}"


@pytest.mark.parametrize("folder", [f for f in _folders() if not f.startswith("bertscore_tm.cli")])
def test_no_folder_exports_a_name_that_is_also_one_of_its_modules(folder: str) -> None:
    # importing a submodule binds it on its package: a module named like a lazy export would replace it
    directory = PACKAGE.parent.joinpath(*folder.split("."))
    modules = {p.stem for p in directory.glob("*.py")} | {p.name for p in directory.iterdir() if p.is_dir()}
    assert sorted(set(importlib.import_module(folder).__all__) & modules) == []


def test_importing_the_package_and_the_correlations_loads_neither_torch_nor_transformers() -> None:
    code = (
        "import sys, bertscore_tm, bertscore_tm.tuning, bertscore_tm.tuning.correlation, "
        "bertscore_tm.tuning.judgements\n"
        "print(sorted(m for m in ('torch', 'transformers', 'numpy') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['numpy']"
