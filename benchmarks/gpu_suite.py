"""The device suite: what a lent GPU's minutes are for, in one run of at most 8 minutes on an H100.

    python benchmarks/gpu_suite.py --dry                  # every step at tiny sizes on the CPU (a test runs it)

On the GPU machine (no network, no `make setup`): the package runs from `src/`, the tokenizer (the packaged
MiniLM's, whose weights are too large to carry) from a folder `--prepare` writes, and bert-score from a carried
wheel; a step whose package is missing says so and the others run. Here, before the lease:

    echo /.gpu/ >> .git/info/exclude
    python benchmarks/gpu_suite.py --prepare .gpu
    python3 -m pip download --no-deps --only-binary=:all: -d .gpu/whl bert-score==0.3.13

and on the machine (carry [".gpu"], timeout_s 600):

    pip install -q --no-index --no-deps --target /tmp/site .gpu/whl/*.whl; export PYTHONPATH=/tmp/site:src
    HF_HUB_OFFLINE=1 python3 benchmarks/gpu_suite.py --tokenizer .gpu/tokenizer --out $OUT/RESULTS-gpu.md

The model is roberta-large's shape cut at its tuned layer 17 (`harness.SHAPES`: random weights, MiniLM's
tokenizer; its cost is roberta-large's, its scores mean nothing). The pairs are the 3,003 vendored WMT pairs
repeated, each copy made distinct (`harness.repeated_pairs`). Each step has a time cap (`CAPS`) and stops feeding
work when it is reached, reporting what it did; a step that fails is reported with its error and the others
still run. Results: `RESULTS-gpu.md` (`render.gpu_page`: the device, its clocks, versions, and for each step its
pairs/s and share of the card's dense peak, `PEAKS`) and the same as JSON.

Steps, in order: the bare forward pass (batches of one length, padded, packed; float32 and bfloat16); a text's
vectors alone and in a pack; the whole metric (update + compute) on 10,000 pairs in float32 and on 25,000 and
100,000 in bfloat16 (peak memory of each); the diagnosis of the bfloat16 metric's time beyond the bare pass
(`gpu_suite_diagnosis.py`: where update() and compute() make the host wait for the device, a torch profile, what
tokenising costs); update() fed batches a DataLoader's workers tokenised (`metric.tokenize` as its collate_fn:
`tokenize_workers`), batches of one length (`metric_one_length`);
bert-score on the same 10,000; float32 scores on the device against a float64 CPU oracle (300 pairs); a Lightning
`val_metric` epoch; what only a GPU shows (`gpu_suite_checks.py`); last, the packed bfloat16 pass at larger token
budgets and the metric with the fastest (`pack_budgets`), and matching batches that gather more (`gather_budgets`).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gpu_suite_checks as checks
import gpu_suite_diagnosis as diagnosis
import harness
import knobs
import render
from harness import UPDATE

#: Seconds each step may take (it stops feeding work past it). The caps add up to 13 minutes, but steps mostly
#: end well before them and no step starts past the suite's budget (`--budget`), so the whole stays under 8 minutes.
CAPS = {
    "bare": 15.0,  # each of six passes
    "pack_exactness": 15.0,
    "metric_float32": 40.0,
    "bert_score": 40.0,
    "metric_bfloat16_25k": 40.0,
    "metric_bfloat16_100k": 90.0,
    "syncs": 20.0,
    "profile": 45.0,
    "tokenise": 25.0,
    "tokenize_workers": 30.0,
    "metric_one_length": 40.0,
    "oracle": 60.0,
    "lightning": 30.0,
    "module_device": 20.0,
    "cli": 40.0,
    "out_of_memory": 40.0,
    "pack_budgets": 60.0,
    "gather_budgets": 30.0,
}
#: Pairs of each step: the targets' sizes, and the dry run's.
SIZES = {
    False: {"bare": 10_000, "fp32": 10_000, "bf16_small": 25_000, "bf16": 100_000, "oracle": 300, "lightning": 3_003},
    True: {"bare": 24, "fp32": 24, "bf16_small": 12, "bf16": 48, "oracle": 6, "lightning": 16},
}
#: Token budgets of a pack `pack_budgets` tries beside the default, and the dry run's.
PACK_BUDGETS = {False: (32_768, 65_536, 131_072), True: (64, 128)}
#: Vector elements a matching batch may gather, beside the accelerator's default (2**22), and the dry run's.
GATHER_BUDGETS = {False: (1 << 24, 1 << 26), True: (1 << 12, 1 << 14)}
#: Dense (no sparsity) tensor-core bfloat16 and plain float32 TFLOP/s from NVIDIA's H100 and H200 datasheets,
#: matched against torch's device name (first match wins: the longer names first).
PEAKS: dict[str, dict[str, float]] = {
    "H100 NVL": {"bfloat16": 835.0, "float32": 60.0},
    "H100 PCIe": {"bfloat16": 756.0, "float32": 51.0},
    "H100": {"bfloat16": 989.0, "float32": 67.0},  # SXM5 ("NVIDIA H100 80GB HBM3")
    "H200 NVL": {"bfloat16": 835.0, "float32": 60.0},
    "H200": {"bfloat16": 989.0, "float32": 67.0},  # SXM5
}


def peaks_of(name: str | None) -> dict[str, float] | None:
    """The card's dense peaks (`PEAKS`), by its name; None for a CPU or a card not in the table."""
    return next((peak for key, peak in PEAKS.items() if name and key in name), None)


@dataclass
class Suite:
    """What every step shares: the device, the model folder, its layer, the sizes, the output folder and the
    results so far."""

    device: str
    dry: bool
    path: str
    layers: int
    flops_per_token: float
    peaks: dict[str, float] | None
    out_dir: Path  # where the report and the profile's tables go
    results: dict[str, Any] = field(default_factory=dict)

    def size(self, key: str) -> int:
        return SIZES[self.dry][key]

    def cap(self, step: str) -> float:
        return CAPS[step] / (10.0 if self.dry else 1.0)

    def share(self, tokens_per_s: float, dtype: str) -> float | None:
        """The share of the card's dense peak that `tokens_per_s` tokens a second make (linear layers only)."""
        return None if self.peaks is None else tokens_per_s * self.flops_per_token / (self.peaks[dtype] * 1e12)

    def sync(self) -> None:
        harness.sync(self.device)

    def peak_start(self) -> int:
        """Reset CUDA's peak counter; the bytes allocated now (the loaded model), which peaks leave out. An earlier
        step's objects are collected first: freed during the step, they would lower its peak below the base."""
        import gc

        import torch

        gc.collect()
        self.sync()
        if not self.device.startswith("cuda"):
            return 0
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
        return torch.cuda.memory_allocated()

    def peak_mib(self, base: int) -> float | None:
        """CUDA's peak of allocated MiB since `peak_start`, above `base`; None on a CPU."""
        import torch

        self.sync()
        return round((torch.cuda.max_memory_allocated() - base) / 2**20, 1) if self.device.startswith("cuda") else None

    @staticmethod
    def pairs(n: int) -> tuple[list[str], list[str]]:
        return harness.repeated_pairs(n)


def prepare(folder: Path) -> Path:
    """Save the packaged MiniLM's tokenizer into `folder`/tokenizer (what the GPU machine cannot install)."""
    from transformers import AutoTokenizer

    out = folder / "tokenizer"
    AutoTokenizer.from_pretrained(knobs.model_path(harness.MINILM)).save_pretrained(str(out))
    return out


# --------------------------------------------------------------------------------------------- the bare pass
def _bare_figures(
    suite: Suite, model: Any, ids: list, kind: str, budget: int, dtype: str, cap: float, pairs: int
) -> dict:
    """One bare pass over `ids` after a warm-up on a slice, stopped at `cap` seconds: its rates and share of peak."""
    harness.bare_pass(model, ids[: max(8, len(ids) // 50)], kind, budget, suite.device)
    start = time.perf_counter()
    texts, tokens = harness.bare_pass(model, ids, kind, budget, suite.device, deadline=start + cap)
    seconds = time.perf_counter() - start
    return {
        "texts": texts,
        "seconds": round(seconds, 3),
        "pairs_per_s": round(texts / seconds * pairs / len(ids), 1),
        "tokens_per_s": round(tokens / seconds, 1),
        "share_of_peak": suite.share(tokens / seconds, dtype),
        "budget_tokens": budget,
    }


def _distinct_ids(suite: Suite, pairs: int) -> tuple[int, list]:
    cands, refs = harness.repeated_pairs(pairs)
    return len(cands), knobs.token_ids(suite.path, harness.distinct(cands + refs))


def step_bare(suite: Suite) -> dict:
    """The bare forward pass of the distinct texts of `bare` pairs: batches of one length, padded batches and
    packs, each in float32 and bfloat16 (the model cast once), at the metric's token budget on the device."""
    pairs, ids = _distinct_ids(suite, suite.size("bare"))
    out: dict = {"pairs": pairs, "distinct_texts": len(ids), "tokens": sum(len(x) for x in ids)}
    for dtype in ("float32", "bfloat16"):
        model, budget, _ = knobs.load_encoder(suite.path, suite.layers, suite.device, dtype)
        for kind in ("one-length", "padded", "packed"):
            out[f"{kind} {dtype}"] = _bare_figures(suite, model, ids, kind, budget, dtype, suite.cap("bare"), pairs)
        del model
    return out


def step_pack_exactness(suite: Suite) -> dict:
    """A text's vectors alone and in a pack of others on the device, in accelerator batching (float32 and
    bfloat16), and float32's accelerator batching against batches of one length: the largest differences (the
    GPU's products pick kernels by the number of rows)."""
    import torch

    from bertscore_tm import BERTScore

    cands, refs = harness.repeated_pairs(256 if not suite.dry else 8)
    ids = knobs.token_ids(suite.path, cands + refs)
    out: dict = {"texts": len(ids)}
    for dtype in ("float32", "bfloat16"):
        metric = BERTScore(suite.path, num_layers=suite.layers, model_dtype=getattr(torch, dtype), device=suite.device)
        knobs.set_batching(metric, "accelerator")
        table, starts = knobs.embed(metric, ids)
        worst = 0.0
        for i, seq in enumerate(ids[:16]):
            alone = knobs.embed(metric, [seq])[0]
            worst = max(worst, float((alone - table[int(starts[i]) : int(starts[i]) + len(seq)]).abs().max()))
        out[f"max_vector_diff_alone_vs_in_a_pack {dtype}"] = worst
        out[f"packed {dtype}"] = knobs.facts(metric)["packed"]
        if dtype == "float32":
            knobs.set_batching(metric, "one-length")
            diff = (knobs.embed(metric, ids)[0] - table).abs().max()
            out["max_vector_diff_accelerator_vs_one_length float32"] = float(diff)
    return out


# ---------------------------------------------------------------------------------------------- the metric
def _metric_run(
    suite: Suite,
    dtype: str,
    pairs: int,
    cap: float,
    batching: str | None = None,
    budget: int | None = None,
    workers: int | None = None,
) -> dict:
    """update() in slices of `UPDATE` pairs until the pairs or the cap's first half run out, then compute():
    pairs/s of the whole, tokenisation and matching included; CUDA's peak memory above the loaded model. None
    for a setting: the device's default; `workers`: the slices tokenised by a DataLoader's workers
    (`metric.tokenize` as its collate_fn), not by update()."""
    import torch

    from bertscore_tm import BERTScore

    cands, refs = harness.repeated_pairs(pairs)
    metric = BERTScore(suite.path, num_layers=suite.layers, model_dtype=getattr(torch, dtype), device=suite.device)
    knobs.set_batching(metric, batching)
    knobs.set_pack_budget(metric, budget)
    metric.update(cands[:UPDATE], refs[:UPDATE])  # warm up: CUDA's handles and kernels, not timed
    metric.compute()
    metric.reset()
    base = suite.peak_start()
    with knobs.count_matchings() as matchings:
        start = time.perf_counter()
        if workers is None:
            done = harness.feed(metric, cands, refs, deadline=start + cap / 2)
        else:
            done = harness.feed_tokenized(metric, cands, refs, workers, deadline=start + cap / 2)
        updated = time.perf_counter()
        scores = metric.compute()
        suite.sync()
        end = time.perf_counter()
    tokens = sum(len(x) for x in knobs.token_ids(suite.path, list(dict.fromkeys(cands[:done] + refs[:done]))))
    facts = knobs.facts(metric)
    return {
        "pairs": done,
        "update_seconds": round(updated - start, 3),
        "compute_seconds": round(end - updated, 3),
        "pairs_per_s": round(done / (end - start), 1),
        "share_of_peak": suite.share(tokens / (end - start), dtype),
        "peak_mib": suite.peak_mib(base),
        **{k: facts[k] for k in ("budget_tokens", "batching", "packed")},
        "scorings": matchings.calls,  # compute()'s matchings: one
        "f1": scores["f1"].cpu(),  # type: ignore[union-attr]
    }


def _against_default(suite: Suite, run: dict, default_step: str) -> dict:
    """An alternative's metric run (its scores left out), with how much faster the default's step ran."""
    out = {k: v for k, v in run.items() if k != "f1"}
    default = suite.results.get(default_step, {})
    if default.get("pairs_per_s"):
        out["default_speedup"] = round(default["pairs_per_s"] / run["pairs_per_s"], 3)
    return out


def step_metric_float32(suite: Suite) -> dict:
    return _metric_run(suite, "float32", suite.size("fp32"), suite.cap("metric_float32"))


def step_metric_bfloat16_25k(suite: Suite) -> dict:
    return _metric_run(suite, "bfloat16", suite.size("bf16_small"), suite.cap("metric_bfloat16_25k"))


def step_metric_bfloat16_100k(suite: Suite) -> dict:
    """100,000 pairs in bfloat16, or as many as the 25,000 run's rate lets finish within the cap (compute()
    cannot stop half way); its peak memory against the 25,000 run's."""
    small = suite.results.get("metric_bfloat16_25k", {})
    pairs, cap = suite.size("bf16"), suite.cap("metric_bfloat16_100k")
    if small.get("pairs_per_s") and pairs / small["pairs_per_s"] > 0.8 * cap:
        pairs = min(pairs, max(UPDATE, int(small["pairs_per_s"] * 0.8 * cap) // UPDATE * UPDATE))
    out = _metric_run(suite, "bfloat16", pairs, cap)
    if out["peak_mib"] and small.get("peak_mib"):
        out["peak_ratio_to_25k"] = round(out["peak_mib"] / small["peak_mib"], 3)
    return out


def step_tokenize_workers(suite: Suite) -> dict:
    """The bfloat16 metric at 25,000 pairs fed batches that two DataLoader workers tokenised (`metric.tokenize`
    as its collate_fn), against the default step, whose update() tokenises in the loop's own thread."""
    run = _metric_run(suite, "bfloat16", suite.size("bf16_small"), suite.cap("tokenize_workers"), workers=2)
    return _against_default(suite, run, "metric_bfloat16_25k")


def step_metric_one_length(suite: Suite) -> dict:
    """The same 10,000 pairs in the CPU's batches of one length, in float32 and bfloat16: which batching is faster
    on this card, per dtype."""
    out: dict = {}
    for dtype in ("float32", "bfloat16"):
        run = _metric_run(suite, dtype, suite.size("fp32"), suite.cap("metric_one_length") / 2, "one-length")
        out[dtype] = {k: v for k, v in run.items() if k != "f1"}
        fast = suite.results.get("metric_float32" if dtype == "float32" else "metric_bfloat16_25k", {})
        if fast.get("pairs_per_s"):
            out[dtype]["accelerator_speedup"] = round(fast["pairs_per_s"] / run["pairs_per_s"], 3)
    return out


def step_pack_budgets(suite: Suite) -> dict:
    """The bare packed bfloat16 pass at larger token budgets than the default, and the whole metric at 25,000
    pairs with the fastest of them: the default changes only once this measures a faster one."""
    pairs, ids = _distinct_ids(suite, suite.size("bare"))
    model, _, _ = knobs.load_encoder(suite.path, suite.layers, suite.device, "bfloat16")
    out: dict = {}
    cap = suite.cap("pack_budgets") / (2 * len(PACK_BUDGETS[False]))
    for budget in PACK_BUDGETS[suite.dry]:
        figures = _bare_figures(suite, model, ids, "packed", budget, "bfloat16", cap, pairs)
        out[f"packed bfloat16, budget {budget}"] = {k: v for k, v in figures.items() if k != "tokens_per_s"}
    del model
    fastest = max(out.values(), key=lambda figures: figures["pairs_per_s"])["budget_tokens"]
    run = _metric_run(suite, "bfloat16", suite.size("bf16_small"), suite.cap("pack_budgets") / 2, budget=fastest)
    out[f"metric bfloat16, budget {fastest}"] = {k: v for k, v in run.items() if k != "f1"}
    return out


def step_gather_budgets(suite: Suite) -> dict:
    """The whole bfloat16 metric at 25,000 pairs with matching batches that gather more vectors than the default
    (at 2**22 elements a batch holds ~34 WMT pairs of roberta-large's width), at the cost of their memory."""
    out = {}
    for budget in GATHER_BUDGETS[suite.dry]:
        with knobs.gather_budget(budget):
            cap = suite.cap("gather_budgets") / len(GATHER_BUDGETS[False])
            run = _metric_run(suite, "bfloat16", suite.size("bf16_small"), cap)
        out[f"metric bfloat16, gather {budget}"] = {k: v for k, v in run.items() if k != "f1"}
    return out


def step_bert_score(suite: Suite) -> dict:
    """bert-score 0.3.13 (`BERTScorer`, batches of 64, padded) on the pairs the float32 metric scored."""
    from bert_score import BERTScorer

    ours = suite.results.get("metric_float32", {})
    pairs = int(ours.get("pairs") or suite.size("fp32"))
    cands, refs = harness.repeated_pairs(pairs)
    scorer = BERTScorer(model_type=suite.path, num_layers=suite.layers, batch_size=UPDATE, device=suite.device)
    scorer.score(cands[:UPDATE], refs[:UPDATE])  # warm up
    start = time.perf_counter()
    f1 = scorer.score(cands, refs)[2]
    suite.sync()
    seconds = time.perf_counter() - start
    out: dict = {"pairs": pairs, "seconds": round(seconds, 3), "pairs_per_s": round(pairs / seconds, 1)}
    if "f1" in ours:
        out["max_f1_diff_vs_ours_float32"] = float((f1.cpu().double() - ours["f1"].double()).abs().max())
    return out


# ---------------------------------------------------------------------------------------------- exactness
def _oracle_prf(suite: Suite, cands: list[str], refs: list[str], deadline: float) -> Any:
    """P, R, F of each pair as bert-score 0.3.13 defines them, unpadded, in float64 on the CPU: each text run
    alone through the cut model, its vectors normalised, every token matched greedily (the special tokens take
    part as matches but weigh nothing), F the harmonic mean. Written from the definition, sharing no code with
    the metric."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    model = AutoModel.from_pretrained(suite.path, dtype=torch.float64, attn_implementation="eager").eval()
    tok = AutoTokenizer.from_pretrained(suite.path)
    special = {tok.cls_token_id, tok.sep_token_id}

    def vectors(text: str) -> tuple[Any, Any]:
        ids = tok.encode(text.strip(), truncation=True, max_length=tok.model_max_length)
        with torch.inference_mode():
            hidden = model(torch.tensor([ids]), output_hidden_states=True).hidden_states[suite.layers][0]
        weight = torch.tensor([0.0 if i in special else 1.0 for i in ids], dtype=torch.float64)
        return hidden / hidden.norm(dim=-1, keepdim=True), weight

    rows = []
    for cand, ref in zip(cands, refs, strict=True):
        (c, wc), (r, wr) = vectors(cand), vectors(ref)
        sim = c @ r.T
        p = float((sim.max(dim=1).values * wc).sum() / wc.sum())
        rec = float((sim.max(dim=0).values * wr).sum() / wr.sum())
        rows.append((p, rec, 2 * p * rec / (p + rec)))
        if time.perf_counter() > deadline:
            break
    return torch.tensor(rows, dtype=torch.float64)


def step_oracle(suite: Suite) -> dict:
    """The float32 metric on the device (and on the CPU) against the float64 oracle, 300 pairs."""
    import torch

    from bertscore_tm import score

    cands, refs = harness.repeated_pairs(suite.size("oracle"))
    start = time.perf_counter()
    oracle = _oracle_prf(suite, cands, refs, start + suite.cap("oracle") * 0.7)
    cands, refs = cands[: len(oracle)], refs[: len(oracle)]
    out: dict = {"pairs": len(cands), "oracle_seconds": round(time.perf_counter() - start, 1)}
    for device in dict.fromkeys((suite.device, "cpu")):
        got = score(cands, refs, model_type=suite.path, num_layers=suite.layers, device=device)
        out[f"max_prf_diff_vs_float64 {device}"] = float(
            (torch.stack([x.cpu().double() for x in got], 1) - oracle).abs().max()
        )
    out["float32_matmul_precision"] = torch.get_float32_matmul_precision()
    return out


def step_lightning(suite: Suite) -> dict:
    """One validation epoch of a LightningModule whose `val_metric` is the metric (logged as an object, so
    Lightning calls compute() at the epoch's end), on the device: seconds and the logged F1."""
    try:
        import lightning as L
    except ImportError:
        import pytorch_lightning as L
    import torch
    from torch.utils.data import DataLoader

    from bertscore_tm import BERTScore

    path, layers = suite.path, suite.layers

    class Module(L.LightningModule):  # type: ignore[misc, name-defined]
        def __init__(self) -> None:
            super().__init__()
            self.layer = torch.nn.Linear(1, 1)
            self.val_metric = BERTScore(path, num_layers=layers, reduction="mean", output="f1")

        def validation_step(self, batch: dict, batch_idx: int) -> None:
            self.val_metric.update(batch["cand"], batch["ref"], indexes=batch["index"])
            self.log("val_f1", self.val_metric, on_step=False, on_epoch=True, batch_size=len(batch["cand"]))

    cands, refs = harness.repeated_pairs(suite.size("lightning"))
    rows = [{"cand": c, "ref": r, "index": i} for i, (c, r) in enumerate(zip(cands, refs, strict=True))]
    collate = lambda b: {k: [row[k] for row in b] for k in ("cand", "ref", "index")}  # noqa: E731
    trainer = L.Trainer(
        accelerator="gpu" if suite.device.startswith("cuda") else "cpu",
        devices=1,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    start = time.perf_counter()
    logged = trainer.validate(
        Module(), dataloaders=DataLoader(rows, batch_size=UPDATE, collate_fn=collate), verbose=False
    )
    seconds = time.perf_counter() - start
    return {
        "pairs": len(rows),
        "seconds": round(seconds, 2),
        "pairs_per_s": round(len(rows) / seconds, 1),
        "val_f1": logged[0]["val_f1"],
    }


# ------------------------------------------------------------------------------------------------ the run
def targets(results: dict) -> list[tuple[str, str, bool | None]]:
    """The device's targets: (target, measured, met)."""
    passes = [(k, v) for k, v in results.get("bare", {}).items() if isinstance(v, dict)]
    passes += [(k, v) for k, v in results.get("pack_budgets", {}).items() if k.startswith("packed")]
    best = {
        d: max((v["pairs_per_s"] for k, v in passes if d in k and "pairs_per_s" in v), default=0)
        for d in ("float32", "bfloat16")
    }
    bf16, fp32 = results.get("metric_bfloat16_100k", {}), results.get("metric_float32", {})
    diff = next(
        (v for k, v in results.get("oracle", {}).items() if k.startswith("max_prf_diff") and "cpu" not in k), None
    )
    out: list[tuple[str, str, bool | None]] = []
    for name, got, want in (
        ("bfloat16 metric at 100,000 pairs >= 10,000 pairs/s", bf16.get("pairs_per_s"), 10_000),
        ("float32 metric >= 2,000 pairs/s", fp32.get("pairs_per_s"), 2_000),
    ):
        out.append((name, str(got), None if got is None else got >= want))
    for dtype, run in (("bfloat16", bf16), ("float32", fp32)):
        ratio = run["pairs_per_s"] / best[dtype] if run.get("pairs_per_s") and best[dtype] else None
        shown = "-" if ratio is None else f"{ratio:.3f}x"
        out.append((f"{dtype} metric >= 0.9x the fastest bare {dtype} pass", shown, ratio and ratio >= 0.9))
    out.append(
        (
            "float32 scores on the device within 1e-6 of the float64 oracle",
            str(diff),
            None if diff is None else diff <= 1e-6,
        )
    )
    ratio = bf16.get("peak_ratio_to_25k")
    out.append(
        ("peak memory at 100,000 pairs <= 1.05x that at 25,000", str(ratio), None if ratio is None else ratio <= 1.05)
    )
    return out


def run_steps(suite: Suite, only: list[str], budget: float) -> None:
    """Every step in order (or those of `only`), each one's error kept and the next run; a step that would
    start past `budget` seconds is skipped (so the suite ends within its lease)."""
    # every step in CAPS's order: `step_<name>` here, in gpu_suite_checks or in gpu_suite_diagnosis
    found = lambda name: getattr(checks, name, None) or getattr(diagnosis, name, None) or globals()[name]  # noqa: E731
    steps = {name: found(f"step_{name}") for name in CAPS}
    began = time.perf_counter()
    for name, step in steps.items():
        if only and name not in only:
            continue
        start = time.perf_counter()
        if start - began > budget:
            suite.results[name] = {"skipped": f"the suite's budget of {budget:.0f} s was spent"}
            continue
        try:
            suite.results[name] = step(suite)
        except ImportError as err:
            suite.results[name] = {"skipped": f"not installed: {err}"}
        except Exception:
            suite.results[name] = {"error": traceback.format_exc()[-1500:]}
        suite.results[name]["step_seconds"] = round(time.perf_counter() - start, 1)
        print(
            f"{name}: {json.dumps(_shown({name: suite.results[name]})[name], default=str)[:1500]}",
            file=sys.stderr,
            flush=True,
        )
        (suite.out_dir / "partial.json").write_text(
            json.dumps(_shown(suite.results), indent=1, default=str) + "\n"
        )  # kept if killed


def _shown(results: dict) -> dict:
    return {k: {kk: vv for kk, vv in v.items() if kk != "f1"} for k, v in results.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default=None, help="default: cuda where there is one, else cpu")
    parser.add_argument("--dry", action="store_true", help="every step at tiny sizes (the CPU's check)")
    parser.add_argument("--prepare", type=Path, default=None, help="only save the tokenizer into this folder")
    parser.add_argument("--tokenizer", default=None, help="the tokenizer's folder (default: the packaged MiniLM's)")
    parser.add_argument("--only", action="append", default=[], help="run only this step (repeatable)")
    parser.add_argument("--budget", type=float, default=400.0, help="seconds after which no step starts")
    parser.add_argument("--out", type=Path, default=harness.HERE / "RESULTS-gpu.md")
    args = parser.parse_args(argv)
    if args.prepare is not None:
        print(prepare(args.prepare))
        return 0
    warnings.filterwarnings("ignore", category=FutureWarning)
    import torch

    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    path, layers, description = harness.model("tiny" if args.dry else "roberta-large", args.tokenizer)
    hidden = harness.SHAPES["tiny" if args.dry else "roberta-large"]["hidden_size"]
    gpu = torch.cuda.get_device_name(device) if device.startswith("cuda") else None
    suite = Suite(device, args.dry, path, layers, 2.0 * layers * 12 * hidden**2, peaks_of(gpu), args.out.parent)
    env = {
        **harness.environment(device),
        "model": description,
        "peaks_tflops": suite.peaks,
        "flops_per_token": suite.flops_per_token,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    run_steps(suite, args.only, args.budget)
    env["suite_seconds"] = round(time.perf_counter() - start, 1)
    env["variable-length attention refused"] = knobs.varlen_refused()
    command = " ".join(["python benchmarks/gpu_suite.py", *(argv if argv is not None else sys.argv[1:])])
    args.out.write_text(
        render.gpu_page(suite.results, env, command, targets(suite.results), args.dry), encoding="utf-8"
    )
    args.out.with_suffix(".json").write_text(
        json.dumps({"environment": env, **_shown(suite.results)}, indent=1, default=str) + "\n"
    )
    failed = [name for name, figures in suite.results.items() if "error" in figures]
    print(f"wrote {args.out}; steps failed: {failed or 'none'}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
