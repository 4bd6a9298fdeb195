"""The precision of the metric's own arithmetic (bertscore_tm.embedding.precision): a lower precision asked for on
a CPU without native instructions for it is said once, naming the lack (the CPU's flags faked here); float32
products set to TF32 on CUDA (readable without a GPU) are honoured with a warning, never switched on or off."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
import torch

from bertscore_tm import BERTScore
from bertscore_tm.embedding import precision
from tests.conftest import MINILM

PAIRS = (["The cat sat on the mat."], ["A cat was sitting on the mat."])
WITHOUT = "flags\t\t: fpu vme sse sse2 avx avx2 avx512f avx512bw avx512vl\n"
WITH_BF16 = "flags\t\t: fpu sse2 avx2 avx512f avx512_bf16\n"


@pytest.fixture
def cpuinfo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """`cpuinfo(text)`: /proc/cpuinfo as this text (None: no such file); the once-per-process warning reset."""

    def fake(text: str | None) -> None:
        path = tmp_path / "cpuinfo"
        if text is None:
            path.unlink(missing_ok=True)
        else:
            path.write_text(text, encoding="utf-8")
        monkeypatch.setattr(precision, "CPUINFO", path)
        precision._warn_emulated.cache_clear()

    yield fake
    precision._warn_emulated.cache_clear()


def test_the_cpus_flags_are_read_on_x86_and_arm(cpuinfo) -> None:
    cpuinfo(WITHOUT + "\n" + WITHOUT)  # a line per core
    assert precision.native_low_precision(torch.bfloat16) is False
    assert precision.native_low_precision(torch.float16) is False
    cpuinfo(WITH_BF16)
    assert precision.native_low_precision(torch.bfloat16) is True
    cpuinfo("processor\t: 0\nFeatures\t: fp asimd fphp asimdhp bf16 i8mm\n")  # Arm names them so
    assert precision.native_low_precision(torch.bfloat16) is precision.native_low_precision(torch.float16) is True
    cpuinfo(None)  # macOS, Windows: unknown, so nothing is said
    assert precision.native_low_precision(torch.bfloat16) is None
    assert precision.native_low_precision(torch.float32) is None


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_a_lower_precision_on_a_cpu_that_emulates_it_is_said_once_naming_the_lack(cpuinfo, dtype) -> None:
    cpuinfo(WITHOUT)
    metric = BERTScore(MINILM, model_dtype=dtype)
    name = str(dtype).removeprefix("torch.")
    with pytest.warns(UserWarning, match=rf"model_dtype={name} on this CPU, which has no {name} instructions") as said:
        for _ in range(2):
            metric.update(*PAIRS)
            metric.compute()
            metric.reset()
    warned = [w for w in said if "instructions" in str(w.message)]
    assert len(warned) == 1 and ("AVX512-BF16" if dtype == torch.bfloat16 else "AVX512-FP16") in str(warned[0].message)
    assert warned[0].filename == __file__  # names the caller's line


def test_nothing_is_said_for_float32_or_where_the_cpu_has_the_instructions(cpuinfo) -> None:
    cpuinfo(WITHOUT)
    plain = BERTScore(MINILM)
    cpuinfo(WITH_BF16)
    fast = BERTScore(MINILM, model_dtype=torch.bfloat16)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for metric in (plain, fast):
            metric.update(*PAIRS)
            metric.compute()


def test_tf32_set_for_cuda_is_read_without_a_gpu_and_left_as_the_user_set_it() -> None:
    """The legacy flag and the precision setting both count; the metric reads them and changes neither."""
    before = torch.backends.cuda.matmul.allow_tf32
    try:
        torch.backends.cuda.matmul.allow_tf32 = True
        assert precision.reduced_float32_products("cuda") == "tf32"
        assert torch.backends.cuda.matmul.allow_tf32  # read, not changed
        torch.backends.cuda.matmul.allow_tf32 = False
        assert precision.reduced_float32_products("cuda") is None
        torch.set_float32_matmul_precision("high")
        assert precision.reduced_float32_products("cuda") == "tf32"
    finally:
        torch.set_float32_matmul_precision("highest")
        torch.backends.cuda.matmul.allow_tf32 = before
    assert precision.reduced_float32_products("cuda") is None


def test_tf32_on_cuda_is_warned_once_when_a_cuda_metric_computes(monkeypatch: pytest.MonkeyPatch) -> None:
    """What compute() on a GPU says under a user's TF32 (own_precision for "cuda", run here without a GPU)."""
    precision._warn_reduced_products.cache_clear()
    torch.set_float32_matmul_precision("high")
    try:
        with pytest.warns(UserWarning, match=r"float32 matrix products on cuda are set to run in tf32") as said:
            for _ in range(3):
                with precision.own_precision("cuda"):
                    pass
        assert len([w for w in said if "tf32" in str(w.message)]) == 1
        assert torch.get_float32_matmul_precision() == "high"  # honoured: the user's setting stays
    finally:
        torch.set_float32_matmul_precision("highest")
        precision._warn_reduced_products.cache_clear()
