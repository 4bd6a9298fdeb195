"""Today's scores, pinned across settings (recorded before the scoring core was restructured): plain, IDF
(counted and from texts), rescaled, all layers, a chosen layer, several references, max_length, windows,
bfloat16, the `score()` drop-in, all pairs and MBR. They must hold to 1e-6 whatever moves behind them, except
bfloat16's: its products run in oneDNN's bfloat16 kernels, which differ from CPU to CPU (native AVX512-BF16 dot
products where the CPU has them), so its scores move by up to 3.5e-4 between machines (seen on an AMD EPYC
against the recording machine) and are held to 1e-3, within the mode's own error of about 1.4e-3 against
float32 (docs/performance.md); that the packed path gives the very same bits as the plain one is checked on one
machine by tests/unit/embedding/test_packing.py."""

from __future__ import annotations

import json
import math

import pytest

from tests.parity import pinned

RECORDED = json.loads(pinned.PINNED.read_text(encoding="utf-8"))
#: How far a case's scores may move from the recorded ones (1e-6 unless named here; why: the module's docstring).
TOLERANCE = {"bfloat16": 1e-3}


def _flat(x: object) -> list[float]:
    if isinstance(x, list):
        return [v for item in x for v in _flat(item)]
    return [float(x)]  # type: ignore[arg-type]


def test_every_case_is_recorded():
    assert sorted(RECORDED) == sorted(pinned.names())


@pytest.mark.parametrize("name", pinned.names())
def test_scores_are_unchanged(name: str):
    now, then = pinned.compute(name), RECORDED[name]
    assert sorted(now) == sorted(then)
    for key in then:
        if key == "chosen":
            assert now[key] == then[key]
            continue
        got, want = _flat(now[key]), _flat(then[key])
        assert len(got) == len(want), key
        for g, w in zip(got, want, strict=True):
            assert (math.isnan(g) and math.isnan(w)) or abs(g - w) <= TOLERANCE.get(name, 1e-6), (key, g, w)
