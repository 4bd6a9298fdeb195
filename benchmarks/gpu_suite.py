"""The device suite (issue 37): what a lent GPU's minutes are for, in one run of at most 8 minutes on an H100.

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

The model is roberta-large's shape cut at its tuned layer 17 (`bench.py`'s shape, built from its config with
random weights and MiniLM's tokenizer: its cost is roberta-large's, its scores mean nothing). Only the 17
blocks that run are built. The pairs are the 3,003 vendored WMT pairs repeated, each copy made distinct by a
number appended to both texts. Each step has a time cap (`CAPS`, seconds, the whole under 8 minutes on an
H100 by the last card's rates) and stops feeding work when it is reached, reporting what it did; a step that
fails is reported with its error and the others still run. Results: `RESULTS-gpu.md` (the device, its clocks,
versions, and for each step its pairs/s and share of the card's dense peak, `PEAKS`) and the same as JSON.

Steps, in order: the bare forward pass (batches of one length, padded, packed; float32 and bfloat16); a text's
vectors alone and in a pack; the whole metric (update + compute) on 10,000 pairs in float32 and on 25,000 and
100,000 in bfloat16 (peak memory of each); the diagnosis of the bfloat16 metric's time beyond the bare pass
(`gpu_suite_diagnosis.py`: where update() and compute() make the host wait for the device, a torch profile of
both, and what update()'s tokenising costs; the same 25,000 with update() tokenising in the caller's thread,
`tokenise_ahead`); the 100,000 with compute() scoring only once every pair is tokenised (`score_chunks`);
the 10,000 in batches of one length (which batching is faster,
per dtype); bert-score on the same 10,000; float32 scores on the device against
a float64 CPU oracle (300 pairs); a Lightning `val_metric` epoch; and what `gpu_checks.py` checked (compute()
on the module's device, the command line with `--device`, the out-of-memory back-off); last, the packed
bfloat16 pass at larger token budgets and the metric with the fastest (`pack_budgets`), and the metric with
matching batches that gather more vectors (`gather_budgets`).
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

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "src"))
DATA = HERE.parent / "tests" / "data" / "wmt"
MINILM = "sentence-transformers/all-MiniLM-L6-v2"

#: Seconds each step may take (it stops feeding work past it). The caps add up to 13 minutes, but steps
#: mostly end well before them (about 5 minutes in all at the H200's last rates, the diagnosis steps' 10,000
#: and 25,000 pairs adding well under a minute) and no step starts past the suite's budget (`--budget`,
#: 400 s), so the whole stays under 8 minutes on an H100.
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
    "tokenise_ahead": 20.0,
    "score_chunks": 30.0,
    "metric_one_length": 40.0,
    "oracle": 60.0,
    "lightning": 30.0,
    "module_device": 20.0,
    "cli": 40.0,
    "out_of_memory": 40.0,
    "pack_budgets": 60.0,
    "gather_budgets": 30.0,
}
#: Pairs of each step: the issue's sizes, and the dry run's.
SIZES = {
    False: {"bare": 10_000, "fp32": 10_000, "bf16_small": 25_000, "bf16": 100_000, "oracle": 300, "lightning": 3_003},
    True: {"bare": 24, "fp32": 24, "bf16_small": 12, "bf16": 48, "oracle": 6, "lightning": 16},
}
#: roberta-large's shape (bench.py's), cut at its tuned layer; and the dry run's tiny one.
SHAPES = {
    False: dict(hidden_size=1024, num_attention_heads=16, intermediate_size=4096, num_hidden_layers=17),
    True: dict(hidden_size=64, num_attention_heads=4, intermediate_size=128, num_hidden_layers=2),
}
UPDATE = 64  # pairs per update(), as a validation loop feeds them

from gpu_suite_checks import step_cli, step_module_device, step_out_of_memory  # noqa: E402
from gpu_suite_diagnosis import step_profile, step_syncs, step_tokenise  # noqa: E402
from gpu_suite_report import environment, peaks_of, report  # noqa: E402


@dataclass
class Suite:
    """What every step shares: the device, the model folder, its layer, the sizes and the results so far."""

    device: str
    dry: bool
    path: str
    layers: int
    flops_per_token: float
    peaks: dict[str, float] | None
    results: dict[str, Any] = field(default_factory=dict)

    def size(self, key: str) -> int:
        return SIZES[self.dry][key]

    def cap(self, step: str) -> float:
        return CAPS[step] / (10.0 if self.dry else 1.0)

    def share(self, tokens_per_s: float, dtype: str) -> float | None:
        """The share of the card's dense peak that `tokens_per_s` tokens a second make (linear layers only)."""
        if self.peaks is None:
            return None
        return tokens_per_s * self.flops_per_token / (self.peaks[dtype] * 1e12)

    def sync(self) -> None:
        import torch

        if self.device.startswith("cuda"):
            torch.cuda.synchronize()

    def peak_start(self) -> int:
        """Reset CUDA's peak counter; the bytes allocated now (the loaded model), which peaks leave out. An
        earlier step's objects are collected first: freed during the step, they would lower its peak below the
        base and make it read small (the 2026-11-28 H100 run's 100,000-pair peak read 0.45x the 25,000's)."""
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
        if not self.device.startswith("cuda"):
            return None
        return round((torch.cuda.max_memory_allocated() - base) / 2**20, 1)

    @staticmethod
    def pairs(n: int) -> tuple[list[str], list[str]]:
        return wmt_pairs(n)


def wmt_pairs(n: int) -> tuple[list[str], list[str]]:
    """n pairs: the vendored WMT pairs repeated, copy k > 0 with " k" appended to both texts (all distinct)."""
    hyps = (DATA / "hyps_long.txt").read_text(encoding="utf-8").splitlines()
    refs = (DATA / "refs_long.txt").read_text(encoding="utf-8").splitlines()
    tail = lambda k: f" {k}" if k else ""  # noqa: E731
    cands = [hyps[i % len(hyps)] + tail(i // len(hyps)) for i in range(n)]
    return cands, [refs[i % len(refs)] + tail(i // len(refs)) for i in range(n)]


def prepare(folder: Path) -> Path:
    """Save the packaged MiniLM's tokenizer into `folder`/tokenizer (what the GPU machine cannot install)."""
    from transformers import AutoTokenizer

    from bertscore_tm.models.loading import resolve_model_path

    out = folder / "tokenizer"
    AutoTokenizer.from_pretrained(str(resolve_model_path(MINILM))).save_pretrained(str(out))
    return out


def build_model(dry: bool, tokenizer: str | None) -> tuple[str, int, str]:
    """(model folder, layer, description): roberta-large's shape cut at layer 17 (or the dry run's tiny one),
    random weights from its config, MiniLM's tokenizer; built once per shape in the temporary folder."""
    import tempfile

    import torch
    from transformers import AutoTokenizer, RobertaConfig, RobertaModel

    shape = SHAPES[dry]
    folder = Path(tempfile.gettempdir()) / "bertscore-tm-gpu-suite" / ("roberta-tiny" if dry else "roberta-large-17")
    if not (folder / "done").exists():
        if tokenizer is None:
            tokenizer = str(prepare(folder.parent))
        tok = AutoTokenizer.from_pretrained(tokenizer)
        config = RobertaConfig(
            **shape,
            max_position_embeddings=514,
            type_vocab_size=1,
            vocab_size=max(50265, len(tok)),
            pad_token_id=tok.pad_token_id,
            bos_token_id=tok.cls_token_id,
            eos_token_id=tok.sep_token_id,
        )
        torch.manual_seed(0)
        RobertaModel(config, add_pooling_layer=False).save_pretrained(folder)
        tok.save_pretrained(folder)
        (folder / "done").write_text("ok")
    layers = int(shape["num_hidden_layers"])
    kind = "a tiny roberta shape (dry run)" if dry else "roberta-large's shape cut at layer 17"
    return str(folder), layers, f"{kind}: random weights, MiniLM's tokenizer, {layers} blocks built"


# --------------------------------------------------------------------------------------------- the bare pass
def _token_ids(suite: Suite, texts: list[str]) -> list[Any]:
    """The texts' token ids as the metric makes them (its tokenizer, its truncation), as int32 tensors."""
    from bertscore_tm.models.tokenizing import TextEncoder

    ids, lengths = TextEncoder(Path(suite.path), truncate=True).encode(texts)
    return list(ids.split(lengths.tolist()))


def _bare_batches(kind: str, lengths: list[int], budget: int) -> list[list[int]]:
    from bench import _padded_batches
    from bertscore_tm.embedding.batches import length_batches, packs

    if kind == "one-length":
        return list(length_batches(lengths, None, budget))
    return list(_padded_batches(lengths, budget) if kind == "padded" else packs(lengths, budget))


def _bare_run(suite: Suite, model: Any, ids: list[Any], kind: str, budget: int, deadline: float) -> tuple[int, int]:
    """One bare pass over `ids` (no scoring): (texts, tokens) run before `deadline`."""
    import torch

    from bertscore_tm.embedding.attention import packed_forward
    from bertscore_tm.embedding.batches import SCORES_LENGTH

    texts = tokens = 0
    with torch.inference_mode():
        for batch in _bare_batches(kind, [len(x) for x in ids], budget):
            seqs = [ids[i] for i in batch]
            if kind == "packed":
                packed_forward(model, seqs, budget * SCORES_LENGTH)  # the accelerator's packs
            else:
                longest = max(len(s) for s in seqs)
                inp = torch.zeros((len(seqs), longest), dtype=torch.long)
                mask = torch.zeros((len(seqs), longest), dtype=torch.long)
                for row, s in enumerate(seqs):
                    inp[row, : len(s)], mask[row, : len(s)] = s, 1
                model(input_ids=inp.to(suite.device), attention_mask=mask.to(suite.device))
            texts, tokens = texts + len(seqs), tokens + sum(len(s) for s in seqs)
            if time.perf_counter() > deadline:
                break
    suite.sync()
    return texts, tokens


def step_bare(suite: Suite) -> dict:
    """The bare forward pass of the distinct texts of `bare` pairs: batches of one length, padded batches and
    packs, each in float32 and bfloat16 (the model cast once), at the metric's token budget on the device."""
    import torch

    from bertscore_tm.embedding.embedder import Embedder
    from bertscore_tm.models.loading import load_encoder

    cands, refs = wmt_pairs(suite.size("bare"))
    unique = list(dict.fromkeys(t.strip() for t in cands + refs))
    ids = _token_ids(suite, unique)
    out: dict = {"pairs": len(cands), "distinct_texts": len(unique), "tokens": sum(len(x) for x in ids)}
    for dtype in ("float32", "bfloat16"):
        model, _ = load_encoder(Path(suite.path), suite.layers, all_layers=False)
        embedder = Embedder(model.to(suite.device), 0, all_layers=False, model_dtype=getattr(torch, dtype))
        budget = embedder.max_tokens
        for kind in ("one-length", "padded", "packed"):
            _bare_run(suite, model, ids[: max(8, len(ids) // 50)], kind, budget, float("inf"))  # warm up
            start = time.perf_counter()
            texts, tokens = _bare_run(suite, model, ids, kind, budget, start + suite.cap("bare"))
            seconds = time.perf_counter() - start
            out[f"{kind} {dtype}"] = {
                "texts": texts,
                "seconds": round(seconds, 3),
                "pairs_per_s": round(texts / seconds * len(cands) / len(unique), 1),
                "tokens_per_s": round(tokens / seconds, 1),
                "share_of_peak": suite.share(tokens / seconds, dtype),
                "budget_tokens": budget,
            }
        del model, embedder
    return out


def step_pack_exactness(suite: Suite) -> dict:
    """A text's vectors alone and in a pack of others on the device, in accelerator batching (float32 and
    bfloat16), and float32's accelerator batching against batches of one length: the largest differences (the
    GPU's products pick kernels by the number of rows)."""
    import torch

    from bertscore_tm.embedding.embedder import Embedder
    from bertscore_tm.models.loading import load_encoder

    cands, refs = wmt_pairs(256 if not suite.dry else 8)
    ids = _token_ids(suite, cands + refs)
    out: dict = {"texts": len(ids)}
    for dtype in ("float32", "bfloat16"):
        model, _ = load_encoder(Path(suite.path), suite.layers, all_layers=False)
        fast = Embedder(model.to(suite.device), 0, all_layers=False, model_dtype=getattr(torch, dtype))
        fast._batching = "accelerator"
        table, starts = fast.embed(ids)
        worst = 0.0
        for i, seq in enumerate(ids[:16]):
            alone = fast.embed([seq])[0]
            worst = max(worst, float((alone - table[int(starts[i]) : int(starts[i]) + len(seq)]).abs().max()))
        out[f"max_vector_diff_alone_vs_in_a_pack {dtype}"] = worst
        out[f"packed {dtype}"] = fast.packing
        if dtype == "float32":
            fast._batching = "one-length"
            out["max_vector_diff_accelerator_vs_one_length float32"] = float((fast.embed(ids)[0] - table).abs().max())
    return out


# ---------------------------------------------------------------------------------------------- the metric
#: Token budgets of a pack the `pack_budgets` step tries beside the default (16,384 on an accelerator).
PACK_BUDGETS = (32_768, 65_536, 131_072)


def step_pack_budgets(suite: Suite) -> dict:
    """The bare packed bfloat16 pass at larger token budgets than the default, and the whole metric at 25,000
    pairs with the fastest of them: the 2026-11-28 H100 run found the bare pass launch-bound (36% of the peak
    at 16,384 tokens a pack), so larger packs may pay; the default changes only once this measures it."""
    import torch

    from bertscore_tm.embedding.embedder import Embedder
    from bertscore_tm.models.loading import load_encoder

    cands, refs = wmt_pairs(suite.size("bare"))
    unique = list(dict.fromkeys(t.strip() for t in cands + refs))
    ids = _token_ids(suite, unique)
    model, _ = load_encoder(Path(suite.path), suite.layers, all_layers=False)
    Embedder(model.to(suite.device), 0, all_layers=False, model_dtype=torch.bfloat16)  # casts the model once
    out: dict = {}
    cap = suite.cap("pack_budgets") / (2 * len(PACK_BUDGETS))
    for budget in PACK_BUDGETS if not suite.dry else (64, 128):
        _bare_run(suite, model, ids[: max(8, len(ids) // 50)], "packed", budget, float("inf"))  # warm up
        start = time.perf_counter()
        texts, tokens = _bare_run(suite, model, ids, "packed", budget, start + cap)
        seconds = time.perf_counter() - start
        out[f"packed bfloat16, budget {budget}"] = {
            "texts": texts,
            "seconds": round(seconds, 3),
            "pairs_per_s": round(texts / seconds * len(cands) / len(unique), 1),
            "share_of_peak": suite.share(tokens / seconds, "bfloat16"),
            "budget_tokens": budget,
        }
    del model
    fastest = max(out.values(), key=lambda figures: figures["pairs_per_s"])["budget_tokens"]
    run = _metric_run(suite, "bfloat16", suite.size("bf16_small"), suite.cap("pack_budgets") / 2, budget=fastest)
    out[f"metric bfloat16, budget {fastest}"] = {k: v for k, v in run.items() if k != "f1"}
    return out


#: Vector elements a matching batch may gather, beside the accelerator's default (`gather_elements`, 2**22).
GATHER_BUDGETS = (1 << 24, 1 << 26)


def step_gather_budgets(suite: Suite) -> dict:
    """The whole bfloat16 metric at 25,000 pairs with matching batches that gather more vectors than the
    default: at 2**22 elements a batch holds ~34 WMT pairs of roberta-large's width, so 100,000 pairs make
    ~3,000 batches of ~20 launches each; larger ones may pay, at the cost of their memory (peak MiB); the
    default changes only once this measures it (its own figures: `metric_bfloat16_25k`)."""
    from bertscore_tm.scoring import matching

    default, out = matching.gather_elements, {}
    try:
        for budget in GATHER_BUDGETS if not suite.dry else (1 << 12, 1 << 14):
            matching.gather_elements = lambda device, budget=budget: budget  # type: ignore[misc]
            cap = suite.cap("gather_budgets") / len(GATHER_BUDGETS)
            run = _metric_run(suite, "bfloat16", suite.size("bf16_small"), cap)
            out[f"metric bfloat16, gather {budget}"] = {k: v for k, v in run.items() if k != "f1"}
    finally:
        matching.gather_elements = default
    return out


def step_tokenise_ahead(suite: Suite) -> dict:
    """The bfloat16 metric at 25,000 pairs with update() tokenising in the caller's thread, against the
    default on an accelerator (`tokenise_ahead`: the tokenising thread; its figures: `metric_bfloat16_25k`):
    the default stays only if this measures it faster."""
    run = _metric_run(suite, "bfloat16", suite.size("bf16_small"), suite.cap("tokenise_ahead"), ahead=False)
    return _against_default(suite, run, "metric_bfloat16_25k")


def step_score_chunks(suite: Suite) -> dict:
    """The bfloat16 metric at 100,000 pairs with compute() scoring once every pair is tokenised, against the
    default (`queued.CHUNK_TEXTS`: the joined pairs scored a chunk at a time while the tokenising thread does
    the rest; its figures: `metric_bfloat16_100k`): the default stays only if this measures it faster."""
    from bertscore_tm.metric import queued

    default_chunk, queued.CHUNK_TEXTS = queued.CHUNK_TEXTS, 1 << 40
    try:
        run = _metric_run(suite, "bfloat16", suite.size("bf16"), suite.cap("score_chunks"))
    finally:
        queued.CHUNK_TEXTS = default_chunk
    return _against_default(suite, run, "metric_bfloat16_100k")


def _against_default(suite: Suite, run: dict, default_step: str) -> dict:
    """An alternative's metric run (its scores left out), with how much faster the default's step ran."""
    out = {k: v for k, v in run.items() if k != "f1"}
    default = suite.results.get(default_step, {})
    if default.get("pairs_per_s"):
        out["default_speedup"] = round(default["pairs_per_s"] / run["pairs_per_s"], 3)
    return out


def _metric_run(
    suite: Suite,
    dtype: str,
    pairs: int,
    cap: float,
    batching: str | None = None,
    budget: int | None = None,
    ahead: bool | None = None,
) -> dict:
    """update() in slices of `UPDATE` pairs until the pairs or the cap's first half run out, then compute():
    pairs/s of the whole, tokenisation and matching included; CUDA's peak memory above the loaded model."""
    import torch

    from bertscore_tm import BERTScore

    cands, refs = wmt_pairs(pairs)
    metric = BERTScore(suite.path, num_layers=suite.layers, model_dtype=getattr(torch, dtype), device=suite.device)
    metric.embedder._batching = batching  # None: the device's default (accelerator batching on a GPU)
    metric.embedder.max_tokens = budget  # None: the device's default
    metric.tokenise_ahead = ahead  # None: the device's default (the tokenising thread on an accelerator)
    metric.update(cands[:UPDATE], refs[:UPDATE])  # warm up: CUDA's handles and kernels, not timed
    metric.compute()
    metric.reset()
    base = suite.peak_start()
    chunks = _counted_matchings()
    start = time.perf_counter()
    done = 0
    while done < pairs and time.perf_counter() - start < cap / 2:
        metric.update(cands[done : done + UPDATE], refs[done : done + UPDATE])
        done = min(pairs, done + UPDATE)
    updated = time.perf_counter()
    try:
        scores = metric.compute()
        suite.sync()
    finally:
        chunks.stop()
    end = time.perf_counter()
    tokens = sum(len(x) for x in _token_ids(suite, list(dict.fromkeys(cands[:done] + refs[:done]))))
    return {
        "pairs": done,
        "update_seconds": round(updated - start, 3),
        "compute_seconds": round(end - updated, 3),
        "pairs_per_s": round(done / (end - start), 1),
        "share_of_peak": suite.share(tokens / (end - start), dtype),
        "peak_mib": suite.peak_mib(base),
        "budget_tokens": metric.embedder.max_tokens,
        "batching": "accelerator" if metric.embedder.accelerated else "one-length",
        "packed": metric.embedder.packing,
        "scorings": chunks.calls,  # compute()'s matchings: more than one where it scored while tokenising
        "f1": scores["f1"].cpu(),  # type: ignore[union-attr]
    }


@dataclass
class _Matchings:
    """Counts the metric's matchings (`pending.match_pairs` calls) until `stop`."""

    real: Any
    calls: int = 0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        return self.real(*args, **kwargs)

    def stop(self) -> None:
        from bertscore_tm.metric import pending

        pending.match_pairs = self.real


def _counted_matchings() -> _Matchings:
    from bertscore_tm.metric import pending

    counter = _Matchings(pending.match_pairs)
    pending.match_pairs = counter
    return counter


def step_metric_float32(suite: Suite) -> dict:
    return _metric_run(suite, "float32", suite.size("fp32"), suite.cap("metric_float32"))


def step_metric_one_length(suite: Suite) -> dict:
    """The same 10,000 pairs in the CPU's batches of one length (the batching before accelerator batching), in
    float32 and bfloat16: which batching is faster on this card, per dtype (issue 37: choose by measurement)."""
    out: dict = {}
    for dtype in ("float32", "bfloat16"):
        run = _metric_run(suite, dtype, suite.size("fp32"), suite.cap("metric_one_length") / 2, "one-length")
        out[dtype] = {k: v for k, v in run.items() if k != "f1"}
        fast = suite.results.get("metric_float32" if dtype == "float32" else "metric_bfloat16_25k", {})
        if fast.get("pairs_per_s"):
            out[dtype]["accelerator_speedup"] = round(fast["pairs_per_s"] / run["pairs_per_s"], 3)
    return out


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


def step_bert_score(suite: Suite) -> dict:
    """bert-score 0.3.13 (`BERTScorer`, batches of 64, padded) on the pairs the float32 metric scored."""
    from bert_score import BERTScorer

    ours = suite.results.get("metric_float32", {})
    pairs = int(ours.get("pairs") or suite.size("fp32"))
    cands, refs = wmt_pairs(pairs)
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
    alone through the cut model, its vectors normalised, every token matched greedily (the special tokens
    take part as matches but weigh nothing), F the harmonic mean. Written here from the definition, sharing
    no code with the metric."""
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

    cands, refs = wmt_pairs(suite.size("oracle"))
    start = time.perf_counter()
    oracle = _oracle_prf(suite, cands, refs, start + suite.cap("oracle") * 0.7)
    cands, refs = cands[: len(oracle)], refs[: len(oracle)]
    out: dict = {"pairs": len(cands), "oracle_seconds": round(time.perf_counter() - start, 1)}
    for device in dict.fromkeys((suite.device, "cpu")):
        got = torch.stack(
            [
                x.cpu().double()
                for x in score(cands, refs, model_type=suite.path, num_layers=suite.layers, device=device)
            ],
            dim=1,
        )
        out[f"max_prf_diff_vs_float64 {device}"] = float((got - oracle).abs().max())
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

    cands, refs = wmt_pairs(suite.size("lightning"))
    rows = [{"cand": c, "ref": r, "index": i} for i, (c, r) in enumerate(zip(cands, refs, strict=True))]
    collate = lambda b: {k: [row[k] for row in b] for k in ("cand", "ref", "index")}  # noqa: E731
    loader = DataLoader(rows, batch_size=UPDATE, collate_fn=collate)
    accelerator = "gpu" if suite.device.startswith("cuda") else "cpu"
    trainer = L.Trainer(
        accelerator=accelerator,
        devices=1,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    start = time.perf_counter()
    logged = trainer.validate(Module(), dataloaders=loader, verbose=False)
    seconds = time.perf_counter() - start
    return {
        "pairs": len(rows),
        "seconds": round(seconds, 2),
        "pairs_per_s": round(len(rows) / seconds, 1),
        "val_f1": logged[0]["val_f1"],
    }


# ------------------------------------------------------------------------------------------------ the run
def run_steps(suite: Suite, out_dir: Path, only: list[str], budget: float) -> None:
    """Every step in order (or those of `only`), each one's error kept and the next run; a step that would
    start past `budget` seconds is skipped (so the suite ends within its lease)."""
    steps = {
        "bare": step_bare,
        "pack_exactness": step_pack_exactness,
        "metric_float32": step_metric_float32,
        "bert_score": step_bert_score,
        "metric_bfloat16_25k": step_metric_bfloat16_25k,
        "metric_bfloat16_100k": step_metric_bfloat16_100k,
        "syncs": step_syncs,
        "profile": lambda s: step_profile(s, out_dir),
        "tokenise": step_tokenise,
        "tokenise_ahead": step_tokenise_ahead,
        "score_chunks": step_score_chunks,
        "metric_one_length": step_metric_one_length,
        "oracle": step_oracle,
        "lightning": step_lightning,
        "module_device": step_module_device,
        "cli": lambda s: step_cli(s, out_dir),
        "out_of_memory": step_out_of_memory,
        "pack_budgets": step_pack_budgets,
        "gather_budgets": step_gather_budgets,
    }
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
        shown = {k: v for k, v in suite.results[name].items() if k != "f1"}
        print(f"{name}: {json.dumps(shown, default=str)[:1500]}", file=sys.stderr, flush=True)
        done = {k: {kk: vv for kk, vv in v.items() if kk != "f1"} for k, v in suite.results.items()}
        (out_dir / "partial.json").write_text(json.dumps(done, indent=1, default=str) + "\n")  # kept if killed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default=None, help="default: cuda where there is one, else cpu")
    parser.add_argument("--dry", action="store_true", help="every step at tiny sizes (the CPU's check)")
    parser.add_argument("--prepare", type=Path, default=None, help="only save the tokenizer into this folder")
    parser.add_argument("--tokenizer", default=None, help="the tokenizer's folder (default: the packaged MiniLM's)")
    parser.add_argument("--only", action="append", default=[], help="run only this step (repeatable)")
    parser.add_argument("--budget", type=float, default=400.0, help="seconds after which no step starts")
    parser.add_argument("--out", type=Path, default=HERE / "RESULTS-gpu.md")
    args = parser.parse_args(argv)
    if args.prepare is not None:
        print(prepare(args.prepare))
        return 0
    warnings.filterwarnings("ignore", category=FutureWarning)
    import torch

    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    path, layers, description = build_model(args.dry, args.tokenizer)
    hidden = SHAPES[args.dry]["hidden_size"]
    gpu = torch.cuda.get_device_name(device) if device.startswith("cuda") else None
    suite = Suite(device, args.dry, path, layers, 2.0 * layers * 12 * hidden**2, peaks_of(gpu))
    env = environment(suite, description)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    run_steps(suite, args.out.parent, args.only, args.budget)
    env["suite_seconds"] = round(time.perf_counter() - start, 1)
    from bertscore_tm.embedding.attention import VARLEN_REFUSED

    env["variable-length attention refused"] = VARLEN_REFUSED[0] if VARLEN_REFUSED else "no (or not tried)"
    command = "python benchmarks/gpu_suite.py " + " ".join(argv if argv is not None else sys.argv[1:])
    args.out.write_text(report(suite, env, command.strip()), encoding="utf-8")
    shown = {k: {kk: vv for kk, vv in v.items() if kk != "f1"} for k, v in suite.results.items()}
    args.out.with_suffix(".json").write_text(json.dumps({"environment": env, **shown}, indent=1, default=str) + "\n")
    failed = [name for name, figures in suite.results.items() if "error" in figures]
    print(f"wrote {args.out}; steps failed: {failed or 'none'}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
