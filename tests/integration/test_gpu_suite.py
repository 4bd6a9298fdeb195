"""benchmarks/gpu_suite.py --dry: every step of the device suite runs at tiny sizes on the CPU and writes its
report, so that a broken script never costs a lent GPU's minutes. The figures themselves mean nothing here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import traceback
import warnings
from pathlib import Path
from types import SimpleNamespace

import pytest

REPO = Path(__file__).resolve().parents[2]
SUITE = REPO / "benchmarks" / "gpu_suite.py"
sys.path.insert(0, str(SUITE.parent))

import gpu_suite  # noqa: E402
import gpu_suite_diagnosis as diagnosis  # noqa: E402


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
    assert results["metric_bfloat16_100k"]["scorings"] == 1 and results["tokenize_workers"]["scorings"] == 1
    assert results["metric_one_length"]["float32"]["batching"] == "one-length"
    assert results["pack_exactness"]["max_vector_diff_accelerator_vs_one_length float32"] < 1e-6
    for step in ("pack_budgets", "gather_budgets", "tokenize_workers"):  # the defaults' alternatives
        assert step in results and "error" not in results[step], (step, results.get(step))
    assert [k for k in results["gather_budgets"] if k.startswith("metric bfloat16, gather")]
    for step in ("syncs", "profile", "tokenise"):  # the diagnosis (gpu_suite_diagnosis.py)
        assert step in results and "error" not in results[step], (step, results.get(step))
    assert results["syncs"]["syncs"] == 0 and results["syncs"]["note"] == "sync debug mode reports CUDA only"
    assert (tmp_path / "profile-bf16.txt").read_text(encoding="utf-8").startswith("# sorted by self CPU time")
    assert results["profile"]["busy_share"] is None and results["profile"]["top_cpu_ops"]
    for part in ("tokenizer chunk 128", "tokenizer chunk 2048", "tokenizer chunk all", "update"):
        assert results["tokenise"][part]["seconds"] > 0 and results["tokenise"][part]["done"] > 0, part
    text = out.read_text(encoding="utf-8")
    assert "| metric (update + compute), float32 |" in text and "## Targets" in text
    assert "## Diagnosis" in text and "| tokenizer chunk all |" in text


def test_peaks_are_found_by_the_cards_name_and_targets_read_the_results() -> None:
    suite = gpu_suite
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


def _waits_for_the_device() -> None:
    warnings.warn("called a synchronizing CUDA operation", UserWarning, stacklevel=1)


def test_the_sync_recorder_counts_each_wait_by_the_line_that_asked_and_restores_the_warnings() -> None:
    hook = warnings.showwarning
    with diagnosis.SyncRecorder(marker="integration") as recorder:
        recorder.phase = "update"
        for _ in range(3):
            _waits_for_the_device()
        recorder.phase = "compute"
        _waits_for_the_device()
        warnings.warn("not a wait", UserWarning, stacklevel=1)
    assert warnings.showwarning is hook
    summary = recorder.summary()
    assert summary["syncs"] == 4 and summary["by_phase"] == {"update": 3, "compute": 1}
    line = _waits_for_the_device.__code__.co_firstlineno + 1
    assert summary["sites"] == [
        {
            "ours": f"test_gpu_suite.py:{line} _waits_for_the_device",
            "innermost": f"integration/test_gpu_suite.py:{line} _waits_for_the_device",
            "count": 4,
        }
    ]
    assert summary["other_warnings"] == {"UserWarning: not a wait": 1}


def test_a_sync_site_is_our_innermost_line_and_the_innermost_line_of_all() -> None:
    frame = lambda path, line, name: traceback.FrameSummary(path, line, name, lookup_line=False)  # noqa: E731
    stack = [
        frame("/work/src/bertscore_tm/metric/bertscore.py", 300, "compute"),
        frame("/work/src/bertscore_tm/scoring/matching.py", 42, "match_pairs"),
        frame("/venv/lib/site-packages/torch/functional.py", 99, "unique"),
    ]
    assert diagnosis.sync_site(stack) == ("scoring/matching.py:42 match_pairs", "torch/functional.py:99 unique")
    assert diagnosis.sync_site(stack[2:]) == ("-", "torch/functional.py:99 unique")


def test_profile_figures_sum_the_device_s_own_events_and_count_runtime_calls() -> None:
    event = lambda key, count, cpu, device, kind="DeviceType.CPU": SimpleNamespace(  # noqa: E731
        key=key, count=count, self_cpu_time_total=cpu, self_device_time_total=device, device_type=kind
    )
    averages = [
        event("aten::mm", 10, 2_000.0, 500_000.0),  # a CPU op carries its kernels' time: not counted again
        event("sm90_gemm_kernel", 10, 0.0, 500_000.0, "DeviceType.CUDA"),
        event("cudaLaunchKernel", 30, 9_000.0, 0.0),
        event("cudaStreamSynchronize", 4, 1_000_000.0, 0.0),
        event("cudaLaunchKernelExC", 7, 100.0, 0.0),
        event("Memcpy DtoH (Device -> Pageable)", 4, 0.0, 4_000.0, "DeviceType.CUDA"),
    ]
    figures = diagnosis.profile_figures(averages, wall=2.0, cuda=True)
    assert figures["device_seconds"] == 0.504 and figures["busy_share"] == 0.252
    assert figures["device_copies"] == {"Memcpy DtoH (Device -> Pageable)": 4}
    assert figures["runtime_calls"]["cudaLaunchKernel"] == 30 and figures["runtime_calls"]["cudaMemcpy"] == 0
    assert figures["other_runtime_calls"] == {"cudaLaunchKernelExC": 7}
    assert figures["top_cpu_ops"][0] == {"name": "cudaStreamSynchronize", "self_cpu_ms": 1000.0, "calls": 4}
    old_torch = SimpleNamespace(key="k", count=1, self_cpu_time_total=0.0, device_type="DeviceType.CUDA")
    old_torch.self_cuda_time_total = 1e6
    assert diagnosis.profile_figures([old_torch], wall=1.0, cuda=True)["busy_share"] == 1.0
    assert diagnosis.profile_figures(averages, wall=2.0, cuda=False)["busy_share"] is None
