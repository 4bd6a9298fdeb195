"""Prepacked linear layers: a bfloat16 model's linear weights put in the CPU matrix library's layout once.

In bfloat16 on a CPU, torch multiplies every linear layer through oneDNN, which first copies the weight into
its own blocked layout, again in every call, for every batch. Doing that once per model
(`torch.ops.mkldnn._reorder_linear_weight`) and calling oneDNN's product on the reordered weight
(`torch.ops.mkldnn._linear_pointwise`, the operator torch's own compiler uses for frozen CPU graphs) skips the
copy (what that saves is measured in docs/performance.md, from `make bench`).

It is the same oneDNN kernel on the same numbers, so the outputs are the bits of torch's `F.linear`, whatever
the number of rows. That is checked, not assumed: when a model's weights are prepacked, every layer multiplies
a random probe both ways, and if any bit differs (another CPU, another torch) or the operators are missing,
the model runs as it is. Float32 is never prepacked: there torch multiplies through another library, whose
bits oneDNN's do not reproduce.

The cost is a second copy of the linear weights in bfloat16, for as long as the embedder lives: 2 bytes per
parameter of the cut model's linear layers (docs/performance.md gives it for MiniLM and roberta-large).

>>> prepackable(torch.device("cpu"), torch.float32)
False
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial

import torch
from torch import Tensor, nn

#: The rows per product the reordered weights are laid out for (a CPU pack holds 2048 tokens).
ROWS_HINT = 2048
#: The probe each layer multiplies both ways before it is used: [2, 37, in features] (odd row counts).
PROBE_SHAPE = (2, 37)


def prepackable(device: torch.device, dtype: torch.dtype) -> bool:
    """Whether linear layers of `dtype` on `device` can run prepacked: bfloat16 on a CPU whose oneDNN has
    bfloat16 kernels, in a torch that has the operators."""
    if dtype != torch.bfloat16 or device.type != "cpu" or not torch.backends.mkldnn.is_available():
        return False
    ops = torch.ops.mkldnn
    try:
        return (
            hasattr(ops, "_reorder_linear_weight")
            and hasattr(ops, "_linear_pointwise")
            and bool(ops._is_mkldnn_bf16_supported())
        )
    except (AttributeError, RuntimeError):
        return False


def _product(weight: Tensor, bias: Tensor | None, x: Tensor) -> Tensor:
    return torch.ops.mkldnn._linear_pointwise(x, weight, bias, "none", [], "")


class PrepackedLinears:
    """The plain `nn.Linear` layers of a model with their reordered weights; `active()` makes the layers
    multiply with them for the duration of a forward pass (reentrant), then puts the layers back as they were.
    """

    def __init__(self, layers: list[tuple[nn.Linear, Tensor]]) -> None:
        self.layers = layers
        self._depth = 0
        self._sources = [self._source(m) for m, _ in layers]

    @staticmethod
    def _source(m: nn.Linear) -> tuple[int, torch.dtype, torch.device]:
        return m.weight.data_ptr(), m.weight.dtype, m.weight.device

    def current(self) -> bool:
        """Whether every layer still holds the weights that were prepacked (not moved, cast or replaced since)."""
        return all(self._source(m) == source for (m, _), source in zip(self.layers, self._sources, strict=True))

    @classmethod
    def of(cls, model: nn.Module) -> PrepackedLinears | None:
        """Prepack `model`'s bfloat16 CPU linear layers; None where there are none, the operators are missing,
        or a layer's probe does not give the bits of `F.linear`."""
        found = [
            m
            for m in model.modules()
            if type(m) is nn.Linear and "forward" not in m.__dict__  # subclasses and patched layers run their own
        ]
        if not found or not all(prepackable(m.weight.device, m.weight.dtype) for m in found):
            return None
        probes = torch.Generator().manual_seed(0)
        layers = []
        try:
            with torch.inference_mode():
                for m in found:
                    weight = torch.ops.mkldnn._reorder_linear_weight(m.weight.detach(), ROWS_HINT)
                    probe = torch.randn((*PROBE_SHAPE, m.in_features), generator=probes).to(m.weight.dtype)
                    if not torch.equal(_product(weight, m.bias, probe), nn.functional.linear(probe, m.weight, m.bias)):
                        return None
                    layers.append((m, weight))
        except RuntimeError:  # an operator this build cannot run for these shapes or this CPU
            return None
        return cls(layers)

    @contextmanager
    def active(self) -> Iterator[None]:
        """The layers multiply with their reordered weights inside the block (which must run under
        `torch.inference_mode`: the reordered product has no gradient)."""
        if self._depth == 0:
            for m, weight in self.layers:
                m.forward = partial(_product, weight, m.bias)  # type: ignore[method-assign]
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1
            if self._depth == 0:
                for m, _ in self.layers:
                    del m.forward
