"""The precision of the metric's own arithmetic: float32 stays float32 under a caller's autocast; reduced float32
products and emulated low precision on a CPU are the process's settings, honoured and said once, never changed."""

from __future__ import annotations

from contextlib import ExitStack
from functools import cache
from pathlib import Path

import torch

from bertscore_tm.errors import warn_user


def own_precision(device: torch.device | str) -> ExitStack:
    """A context with the caller's autocast off, so float32 stays float32 as the hash code says;
    reduced float32 products get a warning.

    >>> with torch.autocast("cpu", dtype=torch.bfloat16), own_precision("cpu"):
    ...     (torch.ones(2, 2) @ torch.ones(2, 2)).dtype
    torch.float32
    """
    own = torch.device(device).type
    stack = ExitStack()
    for kind in dict.fromkeys(("cpu", "cuda", own)):
        if _autocast_enabled(kind):
            stack.enter_context(torch.autocast(kind, enabled=False))
    reduced = reduced_float32_products(own)
    if reduced is not None:
        _warn_reduced_products(own, reduced)
    return stack


def _autocast_enabled(kind: str) -> bool:
    try:
        return torch.amp.is_autocast_available(kind) and torch.is_autocast_enabled(kind)
    except (AttributeError, TypeError):  # torch before 2.4: one query per device type, CPU and CUDA only
        query = {"cpu": torch.is_autocast_cpu_enabled, "cuda": torch.is_autocast_enabled}.get(kind)
        return query is not None and query()


def reduced_float32_products(kind: str) -> str | None:
    """The reduced precision ("tf32", "bf16") of float32 products on `kind`; None if full.

    >>> reduced_float32_products("cpu") is None  # torch's default
    True
    """
    backends = {"cpu": torch.backends.mkldnn, "cuda": torch.backends.cuda}
    if kind not in backends:
        return None
    try:  # torch's newer settings (readable whichever API set them); older torch has only the legacy one
        own = backends[kind].matmul.fp32_precision
        setting = own if own != "none" else torch.backends.fp32_precision  # type: ignore[attr-defined]
    except (AttributeError, RuntimeError):
        try:
            setting = {"highest": "ieee", "high": "tf32", "medium": "bf16"}[torch.get_float32_matmul_precision()]
        except (AttributeError, RuntimeError, KeyError):
            return None
    return None if setting in ("none", "ieee") else str(setting)


@cache
def _warn_reduced_products(kind: str, reduced: str) -> None:
    warn_user(
        f"float32 matrix products on {kind} are set to run in {reduced} (torch.set_float32_matmul_precision or "
        "torch.backends' fp32_precision), so BERTScore's similarities are not exact float32 and its scores move "
        'from the exact ones. For exact scores call torch.set_float32_matmul_precision("highest") before '
        "scoring."
    )


#: The /proc/cpuinfo flags of native instructions per lower precision (x86 AVX-512/AMX, Arm "bf16"/"fphp"):
#: without them torch emulates the type, slower than float32 (docs/metric.md, Precision).
NATIVE_FLAGS = {
    torch.bfloat16: ("avx512_bf16", "amx_bf16", "bf16"),
    torch.float16: ("avx512_fp16", "amx_fp16", "fphp"),
}
CPUINFO = Path("/proc/cpuinfo")


def cpu_flags() -> frozenset[str] | None:
    """The CPU's instruction-set flags from /proc/cpuinfo; None where unreadable (then nothing is said)."""
    try:
        text = CPUINFO.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    flags: set[str] = set()
    for line in text.splitlines():
        name, _, value = line.partition(":")
        if name.strip().lower() in ("flags", "features"):
            flags.update(value.split())
    return frozenset(flags) if flags else None


def native_low_precision(dtype: torch.dtype) -> bool | None:
    """Whether this CPU has native instructions for `dtype`; None where unknown."""
    flags = cpu_flags()
    if flags is None or dtype not in NATIVE_FLAGS:
        return None
    return any(flag in flags for flag in NATIVE_FLAGS[dtype])


def warn_emulated_precision(dtype: torch.dtype, device: torch.device) -> None:
    """Say once that a low precision the CPU lacks instructions for runs emulated and slow."""
    if device.type == "cpu" and dtype in NATIVE_FLAGS and native_low_precision(dtype) is False:
        _warn_emulated(dtype)


@cache
def _warn_emulated(dtype: torch.dtype) -> None:
    name = str(dtype).removeprefix("torch.")
    lacks = "AVX512-BF16 or AMX-BF16" if dtype == torch.bfloat16 else "AVX512-FP16 or AMX-FP16"
    warn_user(
        f"model_dtype={name} on this CPU, which has no {name} instructions (no {lacks} in /proc/cpuinfo's flags): "
        f"torch emulates {name} here, which is usually slower than float32 (6.65x float32's time in one "
        "measurement), and float32 is exact. Use float32 on this CPU, or bfloat16 on a CPU or GPU that has it."
    )
