"""benchmarks/gpu_suite.py --dry: every step of the device suite runs at tiny sizes on the CPU and writes its
report, so that a broken script never costs a lent GPU's minutes. The figures themselves mean nothing here."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SUITE = REPO / "benchmarks" / "gpu_suite.py"


def _report_module():
    spec = importlib.util.spec_from_file_location("gpu_suite_report", SUITE.with_name("gpu_suite_report.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_the_dry_run_runs_every_step_and_writes_its_report(tmp_path: Path) -> None:
    out = tmp_path / "RESULTS-gpu.md"
    env = dict(os.environ, HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false", OMP_NUM_THREADS="1")
    done = subprocess.run(
        [sys.executable, str(SUITE), "--dry", "--out", str(out)], capture_output=True, text=True, env=env, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(out.with_suffix(".json").read_text(encoding="utf-8"))
    steps = ("bare", "pack_exactness", "metric_float32", "metric_bfloat16_25k", "metric_bfloat16_100k", "oracle")
    for step in (*steps, "metric_one_length", "bert_score", "lightning", "module_device", "cli", "out_of_memory"):
        assert step in results and "error" not in results[step], (step, results.get(step))
    assert len([k for k in results["bare"] if k.startswith(("one-length", "padded", "packed"))]) == 6
    assert results["oracle"]["max_prf_diff_vs_float64 cpu"] < 1e-6  # the oracle agrees with the metric
    assert results["cli"]["score"]["rc"] == 0
    assert results["metric_one_length"]["float32"]["batching"] == "one-length"
    assert results["pack_exactness"]["max_vector_diff_accelerator_vs_one_length float32"] < 1e-6
    text = out.read_text(encoding="utf-8")
    assert "| metric (update + compute), float32 |" in text and "## Targets" in text


def test_peaks_are_found_by_the_cards_name_and_targets_read_the_results() -> None:
    suite = _report_module()
    assert suite.peaks_of("NVIDIA H100 80GB HBM3") == {"bfloat16": 989.0, "float32": 67.0}
    assert suite.peaks_of("NVIDIA H100 PCIe")["bfloat16"] == 756.0
    assert suite.peaks_of("NVIDIA H200")["float32"] == 67.0
    assert suite.peaks_of(None) is None and suite.peaks_of("NVIDIA A100-SXM4-80GB") is None
    results = {
        "bare": {"packed bfloat16": {"pairs_per_s": 12_000.0}, "one-length float32": {"pairs_per_s": 2_000.0}},
        "metric_bfloat16_100k": {"pairs_per_s": 11_000.0, "peak_ratio_to_25k": 1.2},
        "metric_float32": {"pairs_per_s": 1_900.0},
        "oracle": {"max_prf_diff_vs_float64 cuda": 4e-7, "max_prf_diff_vs_float64 cpu": 1e-7},
    }
    met = {name: ok for name, _, ok in suite.targets(results)}
    assert met["bfloat16 metric at 100,000 pairs >= 10,000 pairs/s"] is True
    assert met["float32 metric >= 2,000 pairs/s"] is False
    assert met["bfloat16 metric >= 0.9x the fastest bare bfloat16 pass"] is True  # 11,000 / 12,000
    assert met["float32 metric >= 0.9x the fastest bare float32 pass"] is True  # 1,900 / 2,000
    assert met["float32 scores on the device within 1e-6 of the float64 oracle"] is True
    assert met["peak memory at 100,000 pairs <= 1.05x that at 25,000"] is False
