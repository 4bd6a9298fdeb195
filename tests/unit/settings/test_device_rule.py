"""A device that does not exist on this machine is one line naming the argument, before any model loads (issue
37's bad input), in the Python API as on the command line (tests/cli/test_cli.py)."""

from __future__ import annotations

import pytest
import torch

import bertscore_tm.models.loading
from bertscore_tm import BERTScore
from bertscore_tm.errors import ArgumentValueError
from tests.conftest import MINILM


@pytest.mark.parametrize("device", ["cuda", "cuda:7", torch.device("cuda", 3)])
def test_a_cuda_device_this_machine_lacks_is_refused_before_the_model_loads(monkeypatch, device) -> None:
    if torch.cuda.is_available() and torch.cuda.device_count() > (torch.device(device).index or 0):
        pytest.skip(f"{device} exists here")
    loaded = []
    monkeypatch.setattr(bertscore_tm.models.loading, "load_encoder", lambda *a, **k: loaded.append(a))
    with pytest.raises(ArgumentValueError, match=r"device=.*(CUDA is not available|CUDA device)") as err:
        BERTScore(MINILM, device=device)
    assert "\n" not in str(err.value) and err.value.argument == "device"
    assert not loaded


def test_the_cpu_and_devices_that_follow_the_metric_pass() -> None:
    from bertscore_tm.settings.rules import device as device_rule

    for ok in (None, "cpu", torch.device("cpu")):
        device_rule("device", ok)
    with pytest.raises(ArgumentValueError, match="is not a torch device"):
        device_rule("device", "cdua")
