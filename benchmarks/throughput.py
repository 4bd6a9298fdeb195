"""The throughput suite: the metric against the bare forward pass of the same model over the same texts, the
configurations of a part taking turns round after round in one process (each round divided by its own bare
pass), and each configuration's peak memory alone in a fresh process. Parts (`--parts`, all by default):

- paired: update() + compute() of WMT pairs in float32 and bfloat16 (on a CPU packed, and the
  alternatives: unpacked, compiled; float16 on CUDA), against the bare pass in the metric's batches
  of one length, in padded batches and in bfloat16;
- pairwise: `pairwise` on N x N against the bare pass of its texts and bert-score on the N x N expanded pairs
  (and unpadded on a corner of them, for exactness); its memory at N and `--grid-large`, split into the outputs,
  the kept store, the texts and the rest;
- mbr: `mbr_select` on groups against the bare pass of their texts and bert-score mbrs-style (one call a group)
  on the first groups;
- windows: `long_texts="window"` on documents of about `--tokens` tokens against the bare pass of their windows;
  the memory of those, of very long documents against each other (`--long A:B`) and of truncation on WMT pairs;
- context: a context (the candidate itself), prompts, an ignore mask and F-beta against the plain metric.

    make bench                                               # every part at its default size, 2 threads
    make bench BENCH_ARGS="--smoke"                          # every part at tiny sizes, one round
    make bench BENCH_ARGS="--parts paired --pairs 200 --repeats 1 --skip bf16-compiled"
    make bench BENCH_ARGS="--shape roberta-large --device cuda --parts paired"
"""

from __future__ import annotations

import math
import random
import time
from typing import Any

import harness
import knobs
from harness import UPDATE, check, max_diff, median, ratios, row

#: the paired part's configurations: their names in the tables (`--skip` takes the keys)
PAIRED = {
    "bare": "bare pass of the distinct texts, batches of one length",
    "bare-padded": "bare pass, padded batches (the batching before one length)",
    "bare-bf16": "bare pass in bfloat16 (the model cast once, the metric's bfloat16 attention)",
    "fp32": "metric, float32",
    "bf16": "metric, bfloat16 (packed on a CPU)",
    "bf16-unpacked": "metric, bfloat16, batches of one length (packing off)",
    "bf16-compiled": "metric, bfloat16, `compile_model=True`",
    "fp16": "metric, float16 (CUDA only)",
}
CONTEXT = ("bare", "plain", "context (the candidate)", "prompts", "ignore='punctuation'", "beta=3")
SMOKE = dict(
    pairs=40,
    repeats=1,
    grid=8,
    grid_large=16,
    groups=3,
    group_size=4,
    bert_score_groups=1,
    docs=2,
    tokens=600,
    long=["1500:1500"],
    long_layers=1,
    context_pairs=16,
)
NOTES = [
    "time ratio = seconds per item over the bare pass's seconds per item in the same round (lower is better), "
    "median round; the rounds' own ratios beside it; CPU ratio = the same of process CPU time",
    "peak tensors = the peak of live tensor memory while scoring beyond the loaded model (torch's profiler on a "
    "CPU, CUDA's peak on a GPU), each configuration alone in its process; peak RSS = the growth of peak resident "
    "memory over the loaded model in that process's first run (noisy: the C allocator's caching)",
    "the timing process holds a large oneDNN kernel cache (`ONEDNN_PRIMITIVE_CACHE_CAPACITY`), so that bfloat16 "
    "configurations taking turns keep their kernels as each would alone",
]


# ------------------------------------------------------------------------------------------ configurations
def configure(name: str, p: dict) -> harness.Runner:
    path, layers, _ = harness.model(p["shape"])
    return {"paired": _paired, "pairwise": _pairwise, "mbr": _mbr, "windows": _windows, "context": _context}[p["part"]](
        name, p, path, layers
    )


def _metric(path: str, layers: int, p: dict, dtype: str = "float32", **settings: Any) -> Any:
    import torch

    from bertscore_tm import BERTScore

    return BERTScore(path, num_layers=layers, model_dtype=getattr(torch, dtype), device=p["device"], **settings)


def _paired(name: str, p: dict, path: str, layers: int) -> harness.Runner:
    cands, refs = harness.wmt_pairs(p["pairs"])
    if name.startswith("bare"):
        kind = "padded" if name == "bare-padded" else "one-length"
        return harness.bare_runner(
            path, layers, cands + refs, p["device"], "bfloat16" if "bf16" in name else "float32", kind
        )
    dtype = "float32" if name == "fp32" else "float16" if name == "fp16" else "bfloat16"
    metric = _metric(path, layers, p, dtype, compile_model=name == "bf16-compiled")
    if name == "bf16-unpacked":
        knobs.no_packing(metric)
    run = harness.metric_runner(metric, cands, refs)
    if name != "bf16-compiled":
        return run
    start = time.perf_counter()
    run()  # the first run compiles, once a process: not timed
    compiled = time.perf_counter() - start
    return lambda: {**run(), "compile_run_seconds": compiled}


def _pairwise(name: str, p: dict, path: str, layers: int) -> harness.Runner:
    cands, refs = harness.wmt_pairs(p["grid"])
    if name == "bare":
        return harness.bare_runner(path, layers, cands + refs, p["device"])
    if name.startswith("bert-score"):
        from bert_score import BERTScorer

        k = p["grid"] if name == "bert-score" else p["corner"]
        expanded = [c for c in cands[:k] for _ in refs[:k]], [r for _ in cands[:k] for r in refs[:k]]
        batch = UPDATE if name == "bert-score" else 1
        scorer = BERTScorer(model_type=path, num_layers=layers, batch_size=batch, device=p["device"], nthreads=0)
        return lambda: {"f1": scorer.score(*expanded)[2].tolist()}
    metric = _metric(path, layers, p)
    if name == "pairwise, kept":
        mib = lambda info: {k.replace("bytes", "mib"): v / 2**20 if k.endswith("bytes") else v for k, v in info.items()}  # noqa: E731
        return lambda: mib(knobs.all_pairs(metric, cands, refs))
    return lambda: {"f1": metric.pairwise(cands, refs)["f1"].reshape(-1).tolist()}


def mbr_groups(groups: int, size: int) -> list[list[str]]:
    """Groups of `size` consecutive texts of hyps_long, then refs_long, then hyps_long with its words reversed."""
    hyps = harness.lines("hyps_long")
    pool = hyps + harness.lines("refs_long") + [" ".join(reversed(line.split())) for line in hyps]
    if groups * size > len(pool):
        raise SystemExit(f"only {len(pool)} texts for {groups} groups of {size}")
    return [pool[g * size : (g + 1) * size] for g in range(groups)]


def mbrs_utilities(f1: list[float], size: int) -> list[float]:
    """Each hypothesis's mean F1 against the others, from the F1 of a group's ordered pairs (i, j), i != j."""
    pairs = [(i, j) for i in range(size) for j in range(size) if i != j]
    return [math.fsum(x for (i, _), x in zip(pairs, f1, strict=True) if i == k) / (size - 1) for k in range(size)]


def _mbr(name: str, p: dict, path: str, layers: int) -> harness.Runner:
    groups = mbr_groups(p["groups"], p["group_size"])
    if name == "bare":
        return harness.bare_runner(path, layers, [t for g in groups for t in g], p["device"])
    if name == "mbr_select":
        metric = _metric(path, layers, p)

        def ours() -> dict:
            chosen, utilities = metric.mbr_select(groups, return_utilities=True)
            return {"chosen": list(chosen), "utilities": [[float(x) for x in u] for u in utilities]}

        return ours
    from bert_score import BERTScorer

    scorer = BERTScorer(model_type=path, num_layers=layers, batch_size=UPDATE, device=p["device"], nthreads=0)
    size = p["group_size"]
    pairs = [(i, j) for i in range(size) for j in range(size) if i != j]

    def theirs() -> dict:
        utilities = []
        for group in groups[: p["bert_score_groups"]]:
            f1 = scorer.score([group[i] for i, _ in pairs], [group[j] for _, j in pairs])[2].tolist()
            utilities.append(mbrs_utilities(f1, size))
        return {"utilities": utilities, "chosen": [max(range(size), key=lambda k: (u[k], -k)) for u in utilities]}

    return theirs


def documents(path: str, count: int, tokens: int, seed: int, first: int | None = None) -> tuple[list[str], list[str]]:
    """`count` candidate documents of about `tokens` tokens (runs of consecutive WMT lines from seeded starts,
    wrapping round) and their reference documents (the same lines' references)."""
    hyps, refs = harness.lines("hyps_long"), harness.lines("refs_long")
    sizes = [len(x) - 2 for x in knobs.token_ids(path, hyps)]
    rng, cands, targets = random.Random(seed), [], []
    for _ in range(count):
        i, chosen, total = rng.randrange(len(hyps)) if first is None else first, [], 0
        while total < tokens:
            chosen, total, i = [*chosen, i], total + sizes[i], (i + 1) % len(hyps)
        cands.append(" ".join(hyps[j].strip() for j in chosen))
        targets.append(" ".join(refs[j].strip() for j in chosen))
    return cands, targets


def _windows(name: str, p: dict, path: str, layers: int) -> harness.Runner:
    long_texts = "truncate" if name == "truncate" else "window"
    if name == "long":
        a, b = (int(x) for x in p["long"].split(":"))
        cands, refs = documents(path, 1, a, 0, first=0)[0], documents(path, 1, b, 0, first=1000)[1]
        layers = p["long_layers"]
    else:
        cands, refs = (
            harness.wmt_pairs(p["pairs"]) if name == "truncate" else documents(path, p["docs"], p["tokens"], 0)
        )
    metric = _metric(path, layers, p, long_texts=long_texts)
    if name == "bare":  # the windows the metric cuts, through the model in its batches
        ids = knobs.window_ids(metric, cands + refs)
        model, budget, batch_size = knobs.load_encoder(path, layers, p["device"])

        def bare() -> dict:
            done, tokens = harness.bare_pass(model, ids, "one-length", budget, p["device"], batch_size)
            return {"windows": done, "window_tokens": tokens}

        return bare

    def ours() -> dict:
        before = knobs.rows_embedded(metric)
        out = harness.metric_runner(metric, cands, refs)()
        return {**out, "sequences_run": knobs.rows_embedded(metric) - before, **knobs.state_figures(metric)}

    return ours


def _context(name: str, p: dict, path: str, layers: int) -> harness.Runner:
    cands, refs = harness.wmt_pairs(p["context_pairs"])
    if name == "bare":
        return harness.bare_runner(path, layers, cands + refs, p["device"])
    settings = {
        "prompts": dict(candidate_prompt="query: ", reference_prompt="passage: "),
        "ignore='punctuation'": dict(ignore="punctuation"),
        "beta=3": dict(beta=3),
    }.get(name, {})
    update = {"context": cands} if name.startswith("context") else {}
    return harness.metric_runner(_metric(path, layers, p, **settings), cands, refs, **update)


# ------------------------------------------------------------------------------------------ the parts
def paired(args: Any, p: dict) -> tuple[list[dict], list[dict]]:
    keys = [k for k in PAIRED if k not in args.skip and (k != "fp16" or args.device.startswith("cuda"))]
    p = {**p, "pairs": args.pairs}
    timing = harness.timed_apart(__name__, keys, p, args.repeats)
    apart = [k for k in keys if not args.smoke or k in ("bare", "fp32")]  # a smoke run: the memory path, once
    memory = {k: harness.memory_apart(__name__, k, p) if k in apart else None for k in keys}
    got, seconds = timing["results"], timing["seconds"]
    rows = []
    for k in keys:
        extra: dict[str, Any] = {}
        if k in ("bf16", "bf16-unpacked", "bf16-compiled", "fp16"):
            extra["max_f1_diff_vs_float32"] = max_diff(got[k]["f1"], got["fp32"]["f1"]) if "fp32" in got else None
            if "bare-bf16" in seconds:
                extra["ratio_to_bare_bfloat16"] = round(median(ratios(seconds[k], seconds["bare-bf16"])), 4)
        rows.append(row("paired", PAIRED[k], p, timing, "bare", args.pairs, memory=memory[k], key=k, **extra))
    by = {k: r for k, r in zip(keys, rows, strict=True)}
    value = lambda k, field="ratio": by[k].get(field) if k in by else None  # noqa: E731
    diff = lambda k: by[k]["figures"].get("max_f1_diff_vs_float32") if k in by else None  # noqa: E731
    checks = [
        check("float32 metric at most 1.10x the bare pass", value("fp32"), 1.10),
        check("bfloat16 metric at most 0.55x the bare pass", value("bf16"), 0.55),
        check("bfloat16 F1 within 0.01 of float32", diff("bf16"), 0.01),
        check("compiled bfloat16 (opt-in) at most 0.55x the bare pass", value("bf16-compiled"), 0.55),
        check("compiled bfloat16 F1 within 0.01 of float32", diff("bf16-compiled"), 0.01),
        check(
            "state bytes per pair at most 500",
            by["fp32"]["figures"].get("state_bytes_per_pair") if "fp32" in by else None,
            500,
        ),
    ]
    return rows, checks


def pairwise(args: Any, p: dict) -> tuple[list[dict], list[dict]]:
    n, corner = args.grid, min(args.grid, 8)
    p = {**p, "grid": n, "corner": corner}
    names = ["bare", "pairwise", "bert-score", "bert-score, unpadded corner"]
    timing = harness.timed_apart(__name__, names, p, args.repeats)
    ours, got = timing["results"]["pairwise"]["f1"], timing["results"]
    corner_f1 = [ours[i * n + j] for i in range(corner) for j in range(corner)]
    items = {"bare": 2 * n, "pairwise": n * n, "bert-score": n * n, "bert-score, unpadded corner": corner * corner}
    rows = [row("pairwise", f"{k} ({n} x {n})", p, timing, "bare", items[k], items[k], key=k) for k in names[:3]]
    rows.append(row("pairwise", f"bert-score unpadded ({corner} x {corner})", p, timing, None, corner**2, key=names[3]))
    rows[2]["figures"]["max_f1_diff_vs_ours"] = max_diff(got["bert-score"]["f1"], ours)
    rows[3]["figures"]["max_f1_diff_vs_ours"] = unpadded = max_diff(got[names[3]]["f1"], corner_f1)
    for size in dict.fromkeys((n, args.grid_large)):
        q = {**p, "grid": size}
        kept, bare = harness.memory_apart(__name__, "pairwise, kept", q), harness.memory_apart(__name__, "bare", q)
        outputs = 3 * size * size * 4 / 2**20
        working = kept["tensor_mib"] - outputs - kept["store_mib"] - kept["text_mib"]
        figures = dict(outputs_mib=outputs, working_mib=working, bare_peak_mib=bare["tensor_mib"])
        rows.append(row("pairwise", f"memory, {size} x {size}", q, None, None, size * size, memory=kept, **figures))
        rows[-1]["figures"]["working_beyond_bare_mib"] = working - bare["tensor_mib"]
    checks = [
        check(f"{n} x {n} at most 1.3x the bare pass of its texts", rows[1]["ratio"], 1.3),
        check(
            f"{n} x {n} at most 0.5x bert-score's time on the expanded pairs", rows[1]["ratio"] / rows[2]["ratio"], 0.5
        ),
        check(f"F1 of the {corner} x {corner} corner within 1e-5 of bert-score unpadded", unpadded, 1e-5),
    ]
    if args.grid_large != n:
        small, large = rows[-2]["figures"], rows[-1]["figures"]
        what = f"working memory beyond the bare pass at {args.grid_large} x {args.grid_large} vs at {n} x {n}"
        checks.append(check(what, large["working_beyond_bare_mib"], small["working_beyond_bare_mib"]))
    return rows, checks


def mbr(args: Any, p: dict) -> tuple[list[dict], list[dict]]:
    p = {**p, "groups": args.groups, "group_size": args.group_size, "bert_score_groups": args.bert_score_groups}
    names = ["bare", "mbr_select", "bert-score, mbrs-style"]
    timing = harness.timed_apart(__name__, names, p, args.repeats)
    each, texts = args.group_size * (args.group_size - 1), args.groups * args.group_size
    items = {"bare": texts, "mbr_select": args.groups * each, "bert-score, mbrs-style": args.bert_score_groups * each}
    rows = [row("mbr", k, p, timing, "bare", items[k], items["mbr_select"]) for k in names]
    ours, theirs = (timing["results"][k] for k in names[1:])
    diff = max(max_diff(a, b) for a, b in zip(ours["utilities"], theirs["utilities"], strict=False))
    agree = sum(a == b for a, b in zip(ours["chosen"], theirs["chosen"], strict=False))
    rows[2]["figures"].update(max_utility_diff_vs_ours=diff, picks_agreeing=f"{agree}/{len(theirs['chosen'])}")
    speed = (rows[1]["items"] / rows[1]["median_s"]) / (rows[2]["items"] / rows[2]["median_s"])
    return rows, [check("MBR pairs/s over bert-score mbrs-style's", round(speed, 3), 1.0, at_least=True)]


def windows(args: Any, p: dict) -> tuple[list[dict], list[dict]]:
    p = {**p, "docs": args.docs, "tokens": args.tokens, "pairs": args.pairs}
    timing = harness.timed_apart(__name__, ["bare", "window"], p, args.repeats)
    bare = timing["results"]["bare"]
    rows = [row("windows", k, p, timing, "bare", args.docs, key=k) for k in ("bare", "window")]
    rows.append(row("windows", f"memory, {args.docs} documents", p, memory=harness.memory_apart(__name__, "window", p)))
    for spec in args.long:
        q = {**p, "long": spec, "long_layers": args.long_layers}
        rows.append(row("windows", f"memory, {spec} tokens", q, memory=harness.memory_apart(__name__, "long", q)))
    rows.append(
        row(
            "windows",
            f"memory, {args.pairs} WMT pairs truncated",
            p,
            memory=harness.memory_apart(__name__, "truncate", p),
        )
    )
    rows[1]["figures"].update(windows=bare["windows"], window_tokens=bare["window_tokens"])
    return rows, [check("documents in windows at most 1.10x the bare pass of the windows", rows[1].get("ratio"), 1.10)]


def context(args: Any, p: dict) -> tuple[list[dict], list[dict]]:
    p = {**p, "context_pairs": args.context_pairs}
    timing = harness.timed_apart(__name__, CONTEXT, p, args.repeats)
    rows = [row("context", k, p, timing, "bare", args.context_pairs) for k in CONTEXT]
    for r in rows[2:]:
        r["figures"]["ratio_to_plain"] = round(
            median(ratios(timing["seconds"][r["name"]], timing["seconds"]["plain"])), 4
        )
    return rows, [
        check(
            "a context as long as the candidate at most 2.1x the plain metric",
            rows[2]["figures"]["ratio_to_plain"],
            2.1,
        )
    ]


PARTS = {"paired": paired, "pairwise": pairwise, "mbr": mbr, "windows": windows, "context": context}
ARGUMENTS = (
    (
        ("--parts",),
        dict(type=lambda s: s.split(","), default=list(PARTS), help=f"comma-separated, of {', '.join(PARTS)}"),
    ),
    (("--smoke",), dict(action="store_true", help="every part at tiny sizes, one round (does it run?)")),
    (("--device",), dict(default="cpu", help="cpu (default) or cuda")),
    (("--shape",), dict(choices=("minilm", *harness.SHAPES), default="minilm", help="the model (default: MiniLM)")),
    (("--repeats",), dict(type=int, default=5, help="rounds (default 5)")),
    (("--skip",), dict(action="append", default=[], choices=list(PAIRED)[1:], help="leave out a paired configuration")),
    (("--pairs",), dict(type=int, default=1000, help="WMT pairs of the paired part (and truncated, of windows)")),
    (("--grid",), dict(type=int, default=200, help="N of pairwise's N x N (default 200)")),
    (("--grid-large",), dict(type=int, default=2000, help="N of pairwise's larger memory run (default 2000)")),
    (("--groups",), dict(type=int, default=500, help="MBR groups (default 500)")),
    (("--group-size",), dict(type=int, default=16)),
    (("--bert-score-groups",), dict(type=int, default=25, help="groups bert-score scores mbrs-style (default 25)")),
    (("--docs",), dict(type=int, default=100, help="documents of the windows part (default 100)")),
    (("--tokens",), dict(type=int, default=3000, help="tokens a document, about (default 3000)")),
    (("--long",), dict(action="append", default=None, metavar="A:B", help="a document of A tokens against one of B")),
    (("--long-layers",), dict(type=int, default=5, help="blocks the long documents run through")),
    (("--context-pairs",), dict(type=int, default=200, help="WMT pairs of the context part (default 200)")),
)


def run(args: Any) -> dict:
    if args.smoke:  # compiling takes minutes: not for a smoke run
        vars(args).update(SMOKE, skip=[*args.skip, "bf16-compiled"])
    args.long = args.long or ["200000:200000"]
    _, _, description = harness.model(args.shape)  # built once here, before the workers need it
    p = {"shape": args.shape, "device": args.device, "threads": args.threads}
    rows, checks = [], []
    for part in args.parts:
        got = PARTS[part](args, {**p, "part": part})
        rows, checks = rows + got[0], checks + got[1]
    key = "throughput" if (args.shape, args.device) == ("minilm", "cpu") else f"throughput-{args.shape}-{args.device}"
    notes = [f"model: {description}; texts: `tests/data/wmt/*_long.txt`, updates of {UPDATE} pairs", *NOTES]
    return {
        "suite": "throughput",
        "key": key,
        "title": f"Throughput ({args.shape}, {args.device})",
        "notes": notes,
        "rows": rows,
        "checks": checks,
    }
