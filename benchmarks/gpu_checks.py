"""What only a GPU can show: exactness on the accelerator, compute() on the module's device, the command line
with `--device cuda`, and the out-of-memory back-off against real CUDA out-of-memory errors.

    python benchmarks/gpu_checks.py --device cuda            # writes a JSON report (stdout and --out)

It uses bench.py's random roberta-large-shaped model (built once, no download) so that it needs nothing but
this repository on the GPU machine. Each check is reported as it ran, with the figures it saw; one failing
check does not stop the others. The out-of-memory checks cap the process's CUDA memory with
`torch.cuda.set_per_process_memory_fraction` just above what is in use, so that a batch at the default token
budget does not fit and a smaller one does, then so little that one text alone does not fit.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import traceback
import warnings
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "src"))
DATA = HERE.parent / "tests" / "data" / "wmt"


def _texts(n: int, join: int = 1) -> tuple[list[str], list[str]]:
    """n WMT pairs; with join > 1 each text is `join` consecutive lines (long texts, a few hundred tokens)."""
    hyps = (DATA / "hyps_long.txt").read_text(encoding="utf-8").splitlines()
    refs = (DATA / "refs_long.txt").read_text(encoding="utf-8").splitlines()
    glue = lambda lines, i: " ".join(lines[i * join : (i + 1) * join])  # noqa: E731
    return [glue(hyps, i) for i in range(n)], [glue(refs, i) for i in range(n)]


def _max_diff(a: Any, b: Any) -> float:
    import torch

    pairs = zip(a, b, strict=True)
    return max(
        float((torch.as_tensor(x).double().cpu() - torch.as_tensor(y).double().cpu()).abs().max()) for x, y in pairs
    )


def check_exact(path: str, layers: int, device: str) -> dict:
    """The same model's P/R/F on the GPU and on the CPU (float32, exact matrix products), plain and IDF."""
    import torch

    from bertscore_tm import score

    cands, refs = _texts(300)
    out: dict = {"pairs": len(cands)}
    for idf in (False, True):
        on = {d: score(cands, refs, model_type=path, num_layers=layers, idf=idf, device=d) for d in ("cpu", device)}
        out[f"max_prf_diff_gpu_vs_cpu{'_idf' if idf else ''}"] = _max_diff(on["cpu"], on[device])
    out["float32_matmul_precision"] = torch.get_float32_matmul_precision()
    return out


def check_module_device(path: str, layers: int, device: str) -> dict:
    """A metric built on the CPU and moved with .to(device), as Lightning moves a module's metrics: where
    its model and compute()'s results live, and that its scores equal a metric built on the device."""
    from bertscore_tm import BERTScore

    cands, refs = _texts(64)
    moved = BERTScore(path, num_layers=layers).to(device)
    moved.update(cands, refs)
    got = moved.compute()
    built = BERTScore(path, num_layers=layers, device=device)
    built.update(cands, refs)
    want = built.compute()
    return {
        "model_device_after_to": str(next(moved.scorer.embedder.model.parameters()).device),
        "result_device": str(got["f1"].device),
        "max_diff_vs_built_on_device": _max_diff(
            [got[k] for k in ("precision", "recall", "f1")], [want[k] for k in ("precision", "recall", "f1")]
        ),
    }


def check_cli(path: str, layers: int, device: str, out_dir: Path) -> dict:
    """`score`, `explain --worst 3` and `pairwise` with `--device cuda`: exit codes and the first lines."""
    cands, refs = _texts(100)
    c, r = out_dir / "cands.txt", out_dir / "refs.txt"
    c.write_text("\n".join(cands) + "\n", encoding="utf-8")
    r.write_text("\n".join(refs) + "\n", encoding="utf-8")
    common = ["-m", path, "--num-layers", str(layers), "--device", device]
    runs = {
        "score": ["score", "-c", str(c), "-r", str(r), *common],
        "explain": ["explain", "-c", str(c), "-r", str(r), "--worst", "3", "--format", "json", *common],
        "pairwise": ["pairwise", "-c", str(c), "-r", str(r), *common],
    }
    result = {}
    for name, argv in runs.items():
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "bertscore_tm", *argv], capture_output=True, text=True)
        result[name] = {
            "rc": done.returncode,
            "seconds": round(time.perf_counter() - start, 1),
            "stdout_head": done.stdout[:300],
            "stderr_tail": done.stderr[-600:],
        }
    return result


def _one_length(path: str, n: int, words: int) -> tuple[list[str], list[str]]:
    """n pairs of distinct texts of `words` whole-word vocabulary entries each: every text the same number of
    tokens, so that batches hold as many texts as the token budget allows (WMT texts differ in length, and the
    metric's batches hold texts of one length)."""
    import random

    from transformers import AutoTokenizer

    vocab = sorted(AutoTokenizer.from_pretrained(path).get_vocab())
    plain = [w for w in vocab if w.isascii() and w.isalpha() and w.islower() and len(w) > 2]
    rng = random.Random(0)
    texts = [" ".join(rng.choice(plain) for _ in range(words)) for _ in range(2 * n)]
    return texts[:n], texts[n:]


def check_out_of_memory(path: str, layers: int, device: str) -> dict:
    """Real CUDA out-of-memory errors: the back-off (one warning, the budget that worked, the same scores)
    and one text that does not fit even alone (a clear error naming its length)."""
    import torch

    from bertscore_tm import BERTScore

    device = str(torch.device(device, torch.cuda.current_device()) if device == "cuda" else device)  # an index
    cands, refs = _one_length(path, 200, 400)  # one length: the metric's batches are full (16384 tokens)
    metric = BERTScore(path, num_layers=layers, device=device)
    total = torch.cuda.get_device_properties(device).total_memory
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    base = torch.cuda.memory_allocated(device)
    torch.cuda.reset_peak_memory_stats(device)
    metric.update(cands, refs)
    free_run = metric.compute()
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated(device) - base
    budget = metric.scorer.embedder.max_tokens
    out: dict = {"pairs": len(cands), "budget_before": budget, "peak_mib_uncapped": round(peak / 2**20, 1)}

    # caps between what is held and the uncapped peak: the table of token vectors fits, a full batch does not
    keys = ("precision", "recall", "f1")
    out["caps"] = []
    for share in (0.9, 0.85, 0.8, 0.7, 0.6, 0.5, 0.4):
        metric.reset()
        metric.scorer.embedder.max_tokens = budget
        torch.cuda.empty_cache()
        cap = torch.cuda.memory_reserved(device) + int(peak * share)
        torch.cuda.set_per_process_memory_fraction(cap / total, device)
        row: dict = {"cap_share_of_peak": share}
        try:
            with warnings.catch_warnings(record=True) as seen:
                warnings.simplefilter("always")
                metric.update(cands, refs)
                capped = metric.compute()
            row["warnings"] = [str(w.message) for w in seen]
            row["budget_after"] = metric.scorer.embedder.max_tokens
            row["max_diff_vs_uncapped"] = _max_diff([capped[k] for k in keys], [free_run[k] for k in keys])
            row["equal_bit_for_bit"] = all(torch.equal(capped[k].cpu(), free_run[k].cpu()) for k in keys)
        except Exception as err:  # what a user would see, whatever it is
            row["error"] = f"{type(err).__module__}.{type(err).__name__}: {err}"[:300]
            row["where"] = traceback.format_exc().splitlines()[-4:-1]
        finally:
            torch.cuda.set_per_process_memory_fraction(1.0, device)
        out["caps"].append(row)

    # so little room that one long text cannot run alone
    torch.cuda.empty_cache()
    one = BERTScore(path, num_layers=layers, device=device)
    one.update(_texts(1, join=12)[0], _texts(1, join=12)[1])
    torch.cuda.empty_cache()
    torch.cuda.set_per_process_memory_fraction((torch.cuda.memory_reserved(device) + 24 * 2**20) / total, device)
    try:
        one.compute()
        out["one_text_alone"] = "no error (it fit)"
    except Exception as err:  # what a user would see, whatever it is
        out["one_text_alone"] = f"{type(err).__module__}.{type(err).__name__}: {err}"[:1500]
        out["one_text_alone_where"] = traceback.format_exc().splitlines()[-4:-1]
    finally:
        torch.cuda.set_per_process_memory_fraction(1.0, device)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--shape", default="roberta-large", choices=("minilm", "roberta-large"))
    parser.add_argument("--only", action="append", default=[], help="run only this check (repeatable)")
    parser.add_argument("--out", type=Path, default=None, help="also write the JSON report here")
    args = parser.parse_args()
    warnings.filterwarnings("ignore", category=FutureWarning)
    import torch
    import transformers

    from bench import _model

    report: dict = {
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "gpu": torch.cuda.get_device_name(args.device) if args.device.startswith("cuda") else None,
    }
    start = time.perf_counter()
    path, layers, text = _model(args.shape)
    report["model"] = text
    report["model_build_seconds"] = round(time.perf_counter() - start, 1)
    out_dir = args.out.parent if args.out else Path(".")
    checks = {
        "exact": lambda: check_exact(path, layers, args.device),
        "module_device": lambda: check_module_device(path, layers, args.device),
        "cli": lambda: check_cli(path, layers, args.device, out_dir),
    }
    if args.device.startswith("cuda"):
        checks["out_of_memory"] = lambda: check_out_of_memory(path, layers, args.device)
    for name, check in checks.items():
        if args.only and name not in args.only:
            continue
        start = time.perf_counter()
        try:
            report[name] = check()
        except Exception:
            report[name] = {"error": traceback.format_exc()[-2000:]}
        report[name]["seconds"] = round(time.perf_counter() - start, 1)
        print(f"{name}: {json.dumps(report[name])[:2000]}", file=sys.stderr, flush=True)
    text = json.dumps(report, indent=1)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
