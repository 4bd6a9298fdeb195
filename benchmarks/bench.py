"""Speed and memory of BERTScore implementations, measured in one run on one machine.

Every configuration scores the same pairs with the same model (the packaged MiniLM cut to 5 layers) and
is timed against "the limit": the bare forward pass of the cut model over the unique sentences,
length-sorted and batched, with no scoring at all. Each configuration runs in its own subprocess so that
its peak memory (VmHWM, reset after the model is loaded) is its own. Results go to benchmarks/RESULTS.md.

    make bench                       # 1000 WMT pairs, 2 threads
    make bench BENCH_ARGS="--pairs 200 --repeats 1"
    make bench BENCH_ARGS="--shape roberta-large --device cuda"   # on a GPU: RESULTS-roberta-large-cuda.md

`--shape roberta-large` scores with a randomly initialised model of roberta-large's shape (24 blocks of
1024, cut to its tuned layer 17), built once from its config with the packaged MiniLM's tokenizer: its
scores mean nothing, its cost is roberta-large's. On CUDA the float16 mode is timed too and memory is
CUDA's own peak of allocated bytes.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DEFAULT_DATA = REPO / "tests" / "data" / "wmt"
MINILM = "sentence-transformers/all-MiniLM-L6-v2"
BATCH = 64
#: oneDNN's primitive cache in the timing process (its default holds 1024). oneDNN makes a kernel per matrix shape
#: for bfloat16 on a CPU (about 300 for the metric's 1000 pairs, 430 for the bare bfloat16 pass) and keeps the
#: last 1024; the five bfloat16 configurations taking turns in one process would evict each other's kernels,
#: and each would make them again in every round (three of them lost 11% to 22% of their time so in a scratch
#: run), which a configuration running alone in a process never pays. A larger cache lets each keep its own.
PRIMITIVE_CACHE = 16384
#: roberta-large's shape (transformers' RobertaConfig fields) and its tuned layer
ROBERTA_LARGE = dict(
    hidden_size=1024,
    num_hidden_layers=24,
    num_attention_heads=16,
    intermediate_size=4096,
    max_position_embeddings=514,
    type_vocab_size=1,
    vocab_size=50265,
)


def _model(shape: str) -> tuple[str, int, str]:
    """(model directory, layer, description) of a benchmark shape."""
    from bertscore_tm.models.loading import resolve_model_path
    from bertscore_tm.models.registry import default_num_layers

    minilm = str(resolve_model_path(MINILM))
    if shape == "minilm":
        return minilm, default_num_layers(MINILM), f"{MINILM} cut to {default_num_layers(MINILM)} layers"
    layers = default_num_layers("roberta-large")
    folder = Path(tempfile.gettempdir()) / "bertscore-tm-bench" / "roberta-large-shape"
    if not (folder / "done").exists():
        import torch
        from transformers import AutoTokenizer, RobertaConfig, RobertaModel

        tokenizer = AutoTokenizer.from_pretrained(minilm)
        config = RobertaConfig(
            **ROBERTA_LARGE,
            pad_token_id=tokenizer.pad_token_id,
            bos_token_id=tokenizer.cls_token_id,
            eos_token_id=tokenizer.sep_token_id,
        )
        torch.manual_seed(0)
        RobertaModel(config, add_pooling_layer=False).save_pretrained(folder)
        tokenizer.save_pretrained(folder)
        (folder / "done").write_text("ok")
    return (
        str(folder),
        layers,
        f"random roberta-large-shaped model (no download; MiniLM's tokenizer) cut to {layers} layers",
    )


# --------------------------------------------------------------------------- helpers run in subprocesses
def _rss_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def _reset_peak() -> int:
    """Reset the peak-RSS counter and return the current RSS (KiB)."""
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")
    return _rss_kib("VmRSS")


def _tensor_peak(fn, device: str = "cpu"):
    """Run fn() and return (its result, the peak of live tensor MiB during it, tensors alive before the
    call such as the model's weights not counted). On the CPU, torch's profiler records every allocation
    and free, so unlike resident sizes this is free of the C allocator's caching; on CUDA, CUDA's own peak."""
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()
        before = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        result = fn()
        torch.cuda.synchronize()
        return result, (torch.cuda.max_memory_allocated() - before) / 2**20
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        result = fn()
    events = sorted((e.start_ns(), e.nbytes()) for e in prof.profiler.kineto_results.events() if e.name() == "[memory]")
    live = peak = 0
    for _, nbytes in events:
        live += nbytes
        peak = max(peak, live)
    return result, peak / 2**20


def _forward_peak(cands: list[str], refs: list[str], shape: str = "minilm", device: str = "cpu") -> float:
    """The peak of live tensor MiB of the limit (the bare forward pass of the texts, in the metric's batches):
    its activations grow with how full the batches are (how many texts share a length), which more texts
    change too, so the metric's peak is read against it."""
    return _tensor_peak(_runner("limit", cands, refs, shape, device), device)[1]


def _pairs(data: Path, n: int, offset: int = 0) -> tuple[list[str], list[str]]:
    hyps = (data / "hyps_long.txt").read_text(encoding="utf-8").splitlines()
    refs = (data / "refs_long.txt").read_text(encoding="utf-8").splitlines()
    if offset + n > len(hyps):
        raise SystemExit(f"only {len(hyps)} pairs in {data}; asked for {n} from {offset}")
    return hyps[offset : offset + n], refs[offset : offset + n]


def _state_bytes(metric) -> int:
    import torch

    total = 0
    for name in metric._defaults:  # torchmetrics' registry of states
        value = getattr(metric, name)
        for t in value if isinstance(value, list) else [value]:
            if isinstance(t, torch.Tensor):
                total += t.numel() * t.element_size()
    return total


def _padded_batches(lengths: list[int], max_tokens: int):
    """The batching before issue 13: length-sorted, padded to the longest text of the batch (an informational
    limit: batches of one length, the metric's now, are also faster for the bare forward pass on a CPU)."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    batch: list[int] = []
    for i in order:
        longest = lengths[batch[0]] if batch else lengths[i]
        n = len(batch) + 1
        if batch and (n * longest > max_tokens or n * longest * longest > max_tokens * 32):
            yield batch
            batch = []
        batch.append(i)
    if batch:
        yield batch


def _runner(kind: str, cands: list[str], refs: list[str], shape: str, device: str):
    """Set up one configuration (model loaded once) and return a function that scores the pairs once and
    returns what it measured besides time (F1 per pair, state bytes per pair)."""
    import torch

    path, layers, _ = _model(shape)
    n = len(cands)
    if kind in ("limit", "limit-padded", "limit-bf16"):
        from transformers import AutoTokenizer

        from bertscore_tm.embedding.batches import length_batches
        from bertscore_tm.embedding.embedder import Embedder
        from bertscore_tm.models.loading import load_encoder

        model, _ = load_encoder(Path(path), layers, all_layers=False)
        model.to(device)
        # the same batching as the metric's (token budget); for limit-bf16 the embedder also casts the model
        # once and picks the attention the metric's bfloat16 mode runs: the model's own bfloat16 forward pass
        dtype = torch.bfloat16 if kind == "limit-bf16" else torch.float32
        batching = Embedder(model, 0, all_layers=False, model_dtype=dtype)
        unique = list(dict.fromkeys(s.strip() for s in cands + refs))
        ids = AutoTokenizer.from_pretrained(path)(unique, truncation=True, max_length=512)["input_ids"]

        def run() -> dict:
            with torch.inference_mode():
                lengths = [len(x) for x in ids]
                if kind != "limit-padded":
                    batches = length_batches(lengths, batching.batch_size, batching.max_tokens)
                else:
                    batches = _padded_batches(lengths, batching.max_tokens)
                for batch in batches:
                    longest = max(len(ids[i]) for i in batch)
                    inp = torch.zeros((len(batch), longest), dtype=torch.long)
                    mask = torch.zeros((len(batch), longest), dtype=torch.long)
                    for row, i in enumerate(batch):
                        inp[row, : len(ids[i])] = torch.tensor(ids[i])
                        mask[row, : len(ids[i])] = 1
                    model(input_ids=inp.to(device), attention_mask=mask.to(device))
            if device.startswith("cuda"):
                torch.cuda.synchronize()
            return {"unique_sentences": len(unique)}

        return run
    if kind in (
        "ours-fp32",
        "ours-bf16",
        "ours-bf16-unpacked",
        "ours-fp16",
        "ours-bf16-compiled",
    ):
        from bertscore_tm import BERTScore

        dtype = torch.float32 if kind == "ours-fp32" else torch.float16 if kind == "ours-fp16" else torch.bfloat16
        compiled = kind.endswith("-compiled")
        metric = BERTScore(path, num_layers=layers, model_dtype=dtype, device=device, compile_model=compiled)
        if kind == "ours-bf16-unpacked":  # for comparison: bfloat16 in batches of one length, as before packing
            metric.embedder._batching = "one-length"

        def run() -> dict:
            metric.reset()
            for i in range(0, n, BATCH):  # as a validation loop feeds it
                metric.update(cands[i : i + BATCH], refs[i : i + BATCH])
            state = _state_bytes(metric) / n
            return {"f1": metric.compute()["f1"].tolist(), "state_bytes_per_pair": state, **extra}

        extra: dict = {}
        if compiled:  # compile before anything is timed: the first run waits for it, once per process
            start = time.perf_counter()
            run()
            extra["compile_run_seconds"] = time.perf_counter() - start
        return run
    if kind == "bert-score":
        from bert_score import BERTScorer

        scorer = BERTScorer(model_type=path, num_layers=layers, batch_size=BATCH, device=device, nthreads=0)

        def run() -> dict:
            return {"f1": scorer.score(cands, refs)[2].tolist()}

        return run
    if kind == "torchmetrics":
        from torchmetrics.text.bert import BERTScore as TMBERTScore

        tm = TMBERTScore(model_name_or_path=path, num_layers=layers, batch_size=BATCH, device=device, max_length=512)

        def run() -> dict:
            tm.reset()
            for i in range(0, n, BATCH):
                tm.update(cands[i : i + BATCH], refs[i : i + BATCH])
            state = _state_bytes(tm) / n
            return {"f1": tm.compute()["f1"].tolist(), "state_bytes_per_pair": state}

        return run
    raise SystemExit(f"unknown kind {kind}")


#: configurations a run may leave out (`--skip`): the opt-in ones the issues set no target for
SKIPPABLE = ("ours-bf16-compiled", "ours-bf16-unpacked", "limit-padded")


def _timed(device: str, skip: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The configurations of a run: float16 only where autocast has fast float16 kernels (CUDA)."""
    fp16 = ("ours-fp16",) if device.startswith("cuda") else ()
    ours = ("ours-fp32", "ours-bf16", "ours-bf16-unpacked", "ours-bf16-compiled", *fp16)
    every = ("limit", "limit-padded", "limit-bf16", *ours, "bert-score", "torchmetrics")
    return tuple(k for k in every if k not in skip)


def _worker(
    kind: str,
    data: Path,
    n: int,
    offset: int,
    threads: int,
    repeats: int,
    tm_pairs: int,
    shape: str,
    device: str,
    skip: tuple[str, ...] = (),
) -> dict:
    import torch

    warnings.filterwarnings("ignore")
    torch.set_num_threads(threads)
    cands, refs = _pairs(data, n, offset)
    out: dict = {"kind": kind, "pairs": n}

    if kind == "timing":
        # every configuration in one process, taking turns round after round: each round's times are
        # divided by that round's limit, so the machine's drift (often 10-20% here) cancels out
        runners = {
            k: _runner(
                k,
                cands[:tm_pairs] if k == "torchmetrics" else cands,
                refs[:tm_pairs] if k == "torchmetrics" else refs,
                shape,
                device,
            )
            for k in _timed(device, skip)
        }
        rounds: list[dict[str, float]] = []
        for _ in range(repeats):
            seconds = {}
            for k, run in runners.items():
                start = time.perf_counter()
                run()
                seconds[k] = time.perf_counter() - start
            rounds.append(seconds)
        out["rounds"] = rounds
        return out
    if kind == "ours-memory":
        from bertscore_tm import BERTScore

        path, layers, _ = _model(shape)
        metric = BERTScore(path, num_layers=layers, device=device)

        def score() -> None:
            for i in range(0, n, BATCH):
                metric.update(cands[i : i + BATCH], refs[i : i + BATCH])
            out["state_bytes_per_pair"] = _state_bytes(metric) / n
            metric.compute()

        _, out["tensor_peak_mib"] = _tensor_peak(score, device)
        out["state_bytes_per_pair_after_compute"] = _state_bytes(metric) / n
        out["forward_peak_mib"] = _forward_peak(cands, refs, shape, device)
        return out
    # one configuration alone in its process, scored once: its scores, state size and peak memory
    run = _runner(kind, cands, refs, shape, device)
    base = _reset_peak()
    out.update(run())
    out["peak_mib"] = max(0, _rss_kib("VmHWM") - base) / 1024
    _, out["tensor_peak_mib"] = _tensor_peak(run, device)  # a second run, under torch's allocation record
    return out


# --------------------------------------------------------------------------- driver
def _run(kind: str, args: argparse.Namespace, n: int | None = None, offset: int = 0) -> dict:
    cmd = [
        sys.executable,
        __file__,
        "--worker",
        kind,
        "--pairs",
        str(n or args.pairs),
        "--offset",
        str(offset),
        "--threads",
        str(args.threads),
        "--repeats",
        str(args.repeats),
        "--data",
        str(args.data),
        "--tm-pairs",
        str(args.tm_pairs),
        "--shape",
        args.shape,
        "--device",
        args.device,
        *(f"--skip={k}" for k in args.skip),
    ]
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    if kind == "timing":
        env.setdefault("ONEDNN_PRIMITIVE_CACHE_CAPACITY", str(PRIMITIVE_CACHE))
    print(f"  running {kind} on {n or args.pairs} pairs ...", file=sys.stderr, flush=True)
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if done.returncode != 0:  # the worker's own traceback, not just its exit status
        raise SystemExit(f"the {kind} worker failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _kept_sections(path: Path) -> str:
    """The sections other benchmarks keep in the same file (between `<!-- NAME: begin -->` and
    `<!-- NAME: end -->` lines, e.g. bench_pairwise.py's), carried over as they are."""
    if not path.exists():
        return ""
    import re

    blocks = re.findall(r"<!-- [\w-]+: begin -->.*?<!-- [\w-]+: end -->", path.read_text(encoding="utf-8"), flags=re.S)
    return "".join("\n" + block + "\n" for block in blocks)


def _max_err(a: list[float], b: list[float]) -> float:
    return max(abs(x - y) for x, y in zip(a, b, strict=False))


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=1000)
    parser.add_argument("--tm-pairs", type=int, default=200, help="pairs for torchmetrics (it pads to 512 tokens)")
    parser.add_argument("--scale-pairs", type=int, default=3000, help="the larger size of the 4x memory check")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=5, help="timing rounds (each runs every configuration once)")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument(
        "--shape",
        choices=("minilm", "roberta-large"),
        default="minilm",
        help="the packaged MiniLM (default) or a random model of roberta-large's shape",
    )
    parser.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="default: benchmarks/RESULTS.md for MiniLM on the CPU, else RESULTS-<shape>-<device>.md",
    )
    parser.add_argument(
        "--skip",
        action="append",
        default=[],
        choices=SKIPPABLE,
        help="leave out a comparison-only configuration (repeatable; e.g. the compiled one where compiling is slow)",
    )
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--offset", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        result = _worker(
            args.worker,
            args.data,
            args.pairs,
            args.offset,
            args.threads,
            args.repeats,
            args.tm_pairs,
            args.shape,
            args.device,
            tuple(args.skip),
        )
        print(json.dumps(result))
        return

    import torch
    import torchmetrics
    import transformers

    load_start = os.getloadavg()
    timed = _timed(args.device, tuple(args.skip))
    out_path = args.out or HERE / (
        "RESULTS.md" if (args.shape, args.device) == ("minilm", "cpu") else f"RESULTS-{args.shape}-{args.device}.md"
    )
    _, _, model_text = _model(args.shape)  # built once here, before the workers need it
    timing = _run("timing", args)["rounds"]
    # per-pair time over the limit's per-pair time, round by round; the median round is reported
    nan = float("nan")
    ratio: dict[str, float] = dict.fromkeys(SKIPPABLE, nan)  # a skipped configuration reads as nan
    ratio |= {
        k: _median(
            [r[k] / (args.tm_pairs if k == "torchmetrics" else args.pairs) / (r["limit"] / args.pairs) for r in timing]
        )
        for k in timed
    }
    limit_pps = _median([args.pairs / r["limit"] for r in timing])
    runs = {kind: _run(kind, args) for kind in timed if kind != "torchmetrics"}
    runs["torchmetrics"] = _run("torchmetrics", args, n=args.tm_pairs)
    small = _run("ours-memory", args, n=args.scale_pairs // 4)
    large = _run("ours-memory", args, n=args.scale_pairs)
    ref_f1 = runs["bert-score"]["f1"]

    rows = []
    for name, kind in (
        ("limit: bare forward pass of the unique sentences", "limit"),
        ("(the bare forward pass in padded batches, as batched before issue 13)", "limit-padded"),
        ("(the bare forward pass in bfloat16: the model cast once, the metric's bfloat16 attention)", "limit-bf16"),
        ("bertscore-tm, float32 (updates + compute)", "ours-fp32"),
        ("bertscore-tm, bfloat16 (`model_dtype=torch.bfloat16`; packed on a CPU)", "ours-bf16"),
        ("(bertscore-tm, bfloat16 in batches of one length: packing switched off)", "ours-bf16-unpacked"),
        ("bertscore-tm, bfloat16, compiled (`compile_model=True`, opt-in)", "ours-bf16-compiled"),
        ("bertscore-tm, float16 (`model_dtype=torch.float16`)", "ours-fp16"),
        ("bert-score 0.3.13 `BERTScorer` (model loaded once)", "bert-score"),
        ("torchmetrics 1.9 `BERTScore`", "torchmetrics"),
    ):
        if kind not in runs:
            continue
        r = runs[kind]
        if kind in ("limit", "limit-padded", "limit-bf16"):
            right = "-"
        elif kind == "torchmetrics":
            err = _max_err(r["f1"], ref_f1[: r["pairs"]])
            mean_ours, mean_ref = sum(r["f1"]) / len(r["f1"]), sum(ref_f1[: r["pairs"]]) / r["pairs"]
            right = f"no: max F1 error {err:.3f}, mean F1 {mean_ours:.3f} vs {mean_ref:.3f}" if err > 1e-5 else "yes"
        elif kind == "bert-score":
            right = "the reference"
        elif kind in ("ours-bf16", "ours-bf16-unpacked", "ours-fp16", "ours-bf16-compiled"):
            right = f"max F1 error vs float32 {_max_err(r['f1'], runs['ours-fp32']['f1']):.1e}"
            if "compile_run_seconds" in r:
                right += f"; first run (compiling) {r['compile_run_seconds']:.0f} s, once per process, not timed"
        else:
            err = _max_err(r["f1"], ref_f1)
            right = f"yes (max F1 error {err:.1e})" if err <= 1e-5 else f"NO (max F1 error {err:.1e})"
        state = r.get("state_bytes_per_pair")
        rows.append(
            f"| {name} | {r['pairs']} | {limit_pps / ratio[kind]:.1f} | {ratio[kind]:.2f}x | "
            f"{r['tensor_peak_mib']:.0f} | {r['peak_mib']:.0f} | {'-' if state is None else f'{state:.0f}'} | {right} |"
        )

    targets = [
        ("fp32 within 1.10x the limit", ratio["ours-fp32"], 1.10),
        ("fp32 at most 0.80x bert-score's time", ratio["ours-fp32"] / ratio["bert-score"], 0.80),
        ("bf16 at most 0.55x the limit (issue 13)", ratio["ours-bf16"], 0.55),
        (
            "bf16 with `compile_model=True` (opt-in; issue 13 sets it no target) at most 0.55x the limit",
            ratio["ours-bf16-compiled"],
            0.55,
        ),
        (
            "bf16 with `compile_model=True`: F1 within 0.01 of fp32",
            _max_err(runs["ours-bf16-compiled"]["f1"], runs["ours-fp32"]["f1"])
            if "ours-bf16-compiled" in runs
            else nan,
            0.01,
        ),
        ("bf16 F1 within 0.01 of fp32", _max_err(runs["ours-bf16"]["f1"], runs["ours-fp32"]["f1"]), 0.01),
        ("state bytes per pair at most 500", runs["ours-fp32"]["state_bytes_per_pair"], 500),
    ]

    def extra(key: str) -> float:
        return (large[key] * large["pairs"] - small[key] * small["pairs"]) / 2**20

    growth = large["tensor_peak_mib"] - small["tensor_peak_mib"]
    forward = large["forward_peak_mib"] - small["forward_peak_mib"]
    target_lines = [
        f"| {name} | {value:#.4g} | {'met' if value <= bound else 'skipped' if value != value else 'NOT met'} |"
        for name, value, bound in targets
    ]
    target_lines.append(
        f"| 4x the pairs ({small['pairs']} -> {large['pairs']}): growth of the peak of live tensor memory over updates "
        f"and compute ({small['tensor_peak_mib']:.1f} -> {large['tensor_peak_mib']:.1f} MiB), less the growth of the "
        f"bare forward pass's own peak over the same texts ({small['forward_peak_mib']:.1f} -> "
        f"{large['forward_peak_mib']:.1f} MiB: fuller one-length batches), vs the extra state after the updates "
        f"({extra('state_bytes_per_pair'):.2f} MiB) and after compute, which keeps per-token best similarities "
        f"({extra('state_bytes_per_pair_after_compute'):.2f} MiB) | {growth - forward:+.2f} MiB ({growth:+.2f} "
        f"all told) | {'met' if growth - forward <= extra('state_bytes_per_pair_after_compute') else 'NOT met'} "
        f"({'met' if growth <= extra('state_bytes_per_pair_after_compute') else 'NOT met'} all told) |"
    )
    spread = {
        k: (min(r.get(k, nan) / r["limit"] for r in timing), max(r.get(k, nan) / r["limit"] for r in timing))
        for k in (
            "ours-fp32",
            "limit-bf16",
            "ours-bf16",
            "ours-bf16-unpacked",
            "ours-bf16-compiled",
        )
    }
    # what bfloat16 costs beyond the model's own bfloat16 forward pass, round by round
    over_bf16 = {
        k: _median([r.get(k, nan) / r["limit-bf16"] for r in timing])
        for k in ("ours-bf16", "ours-bf16-unpacked", "ours-bf16-compiled")
    }

    load_end = os.getloadavg()
    cpu = "unknown"
    with contextlib.suppress(OSError, StopIteration):
        cpu = next(
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        )
    import bert_score

    on_cuda = args.device.startswith("cuda")
    gpu = torch.cuda.get_device_name(torch.device(args.device)) if on_cuda else "no GPU used"
    peak_text = (
        "- peak tensors = CUDA's peak of allocated bytes while scoring (the model's weights excluded)"
        if on_cuda
        else "- peak tensors = the peak of live tensor memory while scoring, recorded by torch's profiler (the "
        "model's weights excluded)"
    ) + (
        ", each configuration alone in its own process; peak RSS = growth of peak resident memory over the "
        "loaded model in the same process's first run (noisy: the C allocator's caching and the model's pages "
        "first touched, +-60 MiB from run to run here with MiniLM); state = metric state bytes per pair after "
        "the updates"
    )
    other = HERE / "RESULTS-roberta-large-cuda.md"
    gpu_text = (
        f"- a roberta-large-shaped model on a GPU: see `{other.name}`"
        if other.exists()
        else "- a roberta-large-shaped model on a GPU: not measured yet; on a CUDA machine "
        '`make bench BENCH_ARGS="--shape roberta-large --device cuda"` writes `RESULTS-roberta-large-cuda.md`'
    )
    budget = "16384 padded tokens on an accelerator" if on_cuda else "2048 padded tokens on a CPU"
    if (args.shape, args.device) == ("minilm", "cpu"):
        target_head = ["## Targets", "", "| target | measured | |", "| --- | ---: | --- |"]
    else:  # the targets are set for MiniLM on the CPU; elsewhere they are figures to read, not pass
        target_head = [
            "## The CPU targets' figures here (informational)",
            "",
            "| figure | measured | vs the CPU target |",
            "| --- | ---: | --- |",
        ]

    text = "\n".join(
        [
            "# Benchmark results",
            "",
            f"Measured {dt.date.today().isoformat()} by `make bench` (`python benchmarks/bench.py "
            f"--pairs {args.pairs} --threads {args.threads} --repeats {args.repeats} --shape {args.shape} "
            f"--device {args.device}{''.join(f' --skip {k}' for k in args.skip)}`), all in one run.",
            "",
            f"- machine: {platform.machine()}, {cpu}, {os.cpu_count()} cores, torch threads {args.threads}, {gpu}",
            f"- load average (1 / 5 / 15 min) {load_start[0]:.1f} / {load_start[1]:.1f} / {load_start[2]:.1f} at the "
            f"start, {load_end[0]:.1f} / {load_end[1]:.1f} / {load_end[2]:.1f} at the end, on {os.cpu_count()} cores "
            "(other jobs shared the machine where it is above the thread count: ratios are taken round by round "
            "against the limit of the same round, which absorbs part of that)",
            "- the limit runs the metric's batching: texts of one length per batch, never padded (since issue 13: "
            "what makes a text's vectors independent of the texts it runs with); the padded row is the batching "
            "before, for comparison",
            f"- versions: python {platform.python_version()}, torch {torch.__version__}, transformers "
            f"{transformers.__version__}, torchmetrics {torchmetrics.__version__}, "
            f"bert-score {bert_score.__version__} (0.3.13 wheel)",
            f"- model: {model_text}; pairs: the first WMT pairs of `tests/data/wmt/*_long.txt`, "
            f"fed in updates of {BATCH}; forward batches: ours and the limit by the metric's default token budget "
            f"({budget}), bert-score and torchmetrics {BATCH} texts (their default)",
            "- time ratio = seconds per pair / the limit's seconds per pair (lower is better), measured in one "
            f"process where every configuration takes its turn, {args.repeats} rounds, median round reported "
            f"(fp32 rounds ranged {spread['ours-fp32'][0]:.2f}x-{spread['ours-fp32'][1]:.2f}x, bf16 "
            f"{spread['ours-bf16'][0]:.2f}x-{spread['ours-bf16'][1]:.2f}x, bf16 unpacked "
            f"{spread['ours-bf16-unpacked'][0]:.2f}x-{spread['ours-bf16-unpacked'][1]:.2f}x, bf16 compiled "
            f"{spread['ours-bf16-compiled'][0]:.2f}x-{spread['ours-bf16-compiled'][1]:.2f}x); pairs/s = the limit's "
            "median pairs/s over the ratio",
            f"- the timing process holds {os.environ.get('ONEDNN_PRIMITIVE_CACHE_CAPACITY', PRIMITIVE_CACHE)} "
            "oneDNN kernels (`ONEDNN_PRIMITIVE_CACHE_CAPACITY`; oneDNN's default: 1024): in bfloat16 on a CPU "
            "oneDNN makes a kernel per matrix shape, and with the default the bfloat16 configurations evict "
            "each other's and make them again every round (in a scratch run three of them lost 11% to 22% of "
            "their time so), which none pays alone in a process; float32 multiplies through MKL and is "
            "unaffected",
            f"- bfloat16's floor: the bare bfloat16 forward pass of the same texts and batches took "
            f"{ratio['limit-bf16']:.2f}x the float32 one (rounds {spread['limit-bf16'][0]:.2f}x-"
            f"{spread['limit-bf16'][1]:.2f}x); the metric in bfloat16 took {over_bf16['ours-bf16']:.2f}x that bare "
            f"bfloat16 pass, packed (its forward passes run many lengths as one stream: "
            f"`bertscore_tm.embedding.attention`; the same vectors bit for bit), "
            f"{over_bf16['ours-bf16-unpacked']:.2f}x in batches of one length and "
            f"{over_bf16['ours-bf16-compiled']:.2f}x compiled (in batches of one length: a compiled model does not "
            "pack); beyond the forward pass it tokenises, normalises, copies vectors and matches",
            peak_text,
            "- torchmetrics pads every text to 512 tokens and runs every layer, "
            f"so it is timed on {args.tm_pairs} pairs",
            "- 4x check: peak tensors over the updates and compute() for the first N/4 and the first N pairs, "
            "each in its own process",
            *([gpu_text] if not on_cuda else []),
            "",
            "| configuration | pairs | pairs/s | time ratio to the limit | peak tensors MiB | peak RSS MiB | "
            "state B/pair | scores right? |",
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
            *rows,
            "",
            *target_head,
            *target_lines,
            "",
        ]
    )
    out_path.write_text(text + _kept_sections(out_path), encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
