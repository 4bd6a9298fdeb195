"""The device suite's checks of what only a GPU shows: compute() on the module's device after `.to(device)`, the
command line with `--device`, and the out-of-memory back-off against real CUDA out-of-memory errors under a capped
memory. Each takes `gpu_suite.Suite` (its device, model, layer and helpers)."""

from __future__ import annotations

import sys
import time
import warnings
from typing import Any

import harness
import knobs


def step_module_device(suite: Any) -> dict:
    """A metric built on the CPU and moved with .to(device), as Lightning moves a module's metrics: where its
    model and compute()'s results live, and that its scores equal a metric built on the device."""
    from bertscore_tm import BERTScore

    cands, refs = suite.pairs(64 if not suite.dry else 8)
    moved = BERTScore(suite.path, num_layers=suite.layers).to(suite.device)
    moved.update(cands, refs)
    got = moved.compute()
    built = BERTScore(suite.path, num_layers=suite.layers, device=suite.device)
    built.update(cands, refs)
    want = built.compute()
    return {
        "model_device_after_to": knobs.facts(moved)["model_device"],
        "result_device": str(got["f1"].device),  # type: ignore[union-attr]
        "max_diff_vs_built_on_device": max(
            float((got[k] - want[k]).abs().max())
            for k in ("precision", "recall", "f1")  # type: ignore[operator]
        ),
    }


def step_cli(suite: Any) -> dict:
    """`score` and `explain --worst 3` with `--device`: exit codes, seconds and the first lines."""
    import subprocess

    cands, refs = suite.pairs(100 if not suite.dry else 4)
    c, r = suite.out_dir / "cands.txt", suite.out_dir / "refs.txt"
    c.write_text("\n".join(cands) + "\n", encoding="utf-8")
    r.write_text("\n".join(refs) + "\n", encoding="utf-8")
    common = ["-c", str(c), "-r", str(r), "-m", suite.path, "--num-layers", str(suite.layers), "--device", suite.device]
    env = harness.child_env()
    out = {}
    commands = {"score": ["score"], "explain": ["explain", "--worst", "3", "--format", "json"]}
    for name, argv in list(commands.items())[: 1 if suite.dry else 2]:  # the dry run: one start of the CLI
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "bertscore_tm", *argv, *common],
            capture_output=True,
            text=True,
            env=env,
            timeout=suite.cap("cli") * (1 if suite.dry else 0.5) + 60,
        )
        out[name] = {
            "rc": done.returncode,
            "seconds": round(time.perf_counter() - start, 1),
            "stdout_head": done.stdout[:200],
            "stderr_tail": done.stderr[-400:],
        }
    return out


def _one_length(path: str, n: int, words: int) -> tuple[list[str], list[str]]:
    """n pairs of distinct texts of `words` whole-word vocabulary entries each: every text the same number of
    tokens, so that forward batches hold as many texts as the token budget allows."""
    import random

    from transformers import AutoTokenizer

    vocab = sorted(AutoTokenizer.from_pretrained(path).get_vocab())
    plain = [w for w in vocab if w.isascii() and w.isalpha() and w.islower() and len(w) > 2]
    rng = random.Random(0)
    texts = [" ".join(rng.choice(plain) for _ in range(words)) for _ in range(2 * n)]
    return texts[:n], texts[n:]


def _capped_run(metric: Any, cands: list[str], refs: list[str], free_run: dict, cap: int) -> dict:
    """One update + compute under a cap on the process's CUDA memory: warnings, the budget after, the scores
    against the uncapped run, or the error a user would see."""
    import torch

    torch.cuda.set_per_process_memory_fraction(cap / torch.cuda.get_device_properties(0).total_memory)
    row: dict = {}
    try:
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            if cands:  # else the metric was fed before the cap
                metric.update(cands, refs)
            capped = metric.compute()
        row["warnings"] = [str(w.message)[:300] for w in seen]
        row["budget_after"] = knobs.pack_budget(metric)
        keys = ("precision", "recall", "f1")
        if free_run:
            row["max_diff_vs_uncapped"] = max(float((capped[k] - free_run[k]).abs().max()) for k in keys)
        else:
            row["result"] = "no error (it fit)"
    except Exception as err:  # what a user would see, whatever it is
        row["error"] = f"{type(err).__module__}.{type(err).__name__}: {err}"[:600]
    finally:
        torch.cuda.set_per_process_memory_fraction(1.0)
    return row


def step_out_of_memory(suite: Any) -> dict:
    """Real CUDA out-of-memory errors: the process's memory capped between what it holds and the uncapped
    peak, so a full forward batch does not fit and a smaller one does (one warning, the same scores), then
    so little that one long text does not fit alone (a clear error naming its length)."""
    if not suite.device.startswith("cuda"):
        return {"skipped": "CUDA only"}
    import torch

    from bertscore_tm import BERTScore

    cands, refs = _one_length(suite.path, 200, 400)  # one length: the forward batches are full
    metric = BERTScore(suite.path, num_layers=suite.layers, device=suite.device)
    base = suite.peak_start()
    metric.update(cands, refs)
    free_run = metric.compute()
    peak = (suite.peak_mib(base) or 0) * 2**20
    budget = knobs.pack_budget(metric)
    out: dict = {"pairs": len(cands), "budget_before": budget, "peak_mib_uncapped": round(peak / 2**20, 1), "caps": []}
    for share in (0.9, 0.7, 0.5, 0.4):
        metric.reset()
        knobs.set_pack_budget(metric, budget)
        torch.cuda.empty_cache()
        cap = torch.cuda.memory_reserved() + int(peak * share)
        out["caps"].append({"cap_share_of_peak": share, **_capped_run(metric, cands, refs, free_run, cap)})
    long = " ".join(suite.pairs(12)[0])
    one = BERTScore(suite.path, num_layers=suite.layers, device=suite.device)
    one.update([long], [long])
    torch.cuda.empty_cache()
    out["one_text_alone"] = _capped_run(one, [], [], {}, torch.cuda.memory_reserved() + 24 * 2**20)
    return out
