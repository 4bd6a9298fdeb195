"""Speed and memory of all-pairs scoring and MBR selection (issue 10), measured in one run on one machine.

- 200 x 200 WMT texts (40,000 pairs): `BERTScore.pairwise` timed against the limit (the bare forward pass of
  the 400 texts, exactly as `bench.py` runs it) and against bert-score 0.3.13 scoring the 40,000 expanded
  pairs (`BERTScorer`, model loaded once, its default batches of 64), all in one process taking turns, round
  after round; each round's ratios are its own, the median round is reported.
- 2,000 x 2,000 (4 million pairs) and 200 x 200, each in its own process: time, peak RSS and the peak of live
  tensor memory (torch's profiler, as in `bench.py`), split into the N x M outputs, the kept token vectors
  of the smaller side (the store, which grows with min(N, M) texts) and the rest (the working memory).
- MBR: 500 groups of 16 hypotheses (120,000 ordered pairs): `BERTScore.mbr_select` against the same work done
  mbrs-style, one `BERTScorer.score` call per group on its 16 x 15 expanded pairs, on a subsample of the
  groups (its pairs/s extrapolated).

    python benchmarks/bench_pairwise.py                  # 3 rounds; writes its section of RESULTS.md
    python benchmarks/bench_pairwise.py --repeats 1      # a quick run

Texts: `tests/data/wmt/*_long.txt`. MBR groups are 16 consecutive lines of hyps_long, then refs_long, then
hyps_long with its words reversed (8,006 distinct texts; only lengths matter for speed).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import subprocess
import sys
import time
import warnings
from pathlib import Path

# the shared helpers: the limit, bert-score's runner, memory peaks (run as a script, this file's folder is on
# sys.path, as bench_windows.py's workers rely on too)
import bench

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "RESULTS.md"
BEGIN, END = "<!-- bench_pairwise: begin -->", "<!-- bench_pairwise: end -->"


def _texts(data: Path, n: int, offset: int = 0) -> tuple[list[str], list[str]]:
    return bench._pairs(data, n, offset)


def _mbr_groups(data: Path, groups: int, size: int) -> list[list[str]]:
    hyps = (data / "hyps_long.txt").read_text(encoding="utf-8").splitlines()
    refs = (data / "refs_long.txt").read_text(encoding="utf-8").splitlines()
    pool = hyps + refs + [" ".join(reversed(line.split())) for line in hyps]
    if groups * size > len(pool):
        raise SystemExit(f"only {len(pool)} texts for {groups} groups of {size}")
    return [pool[g * size : (g + 1) * size] for g in range(groups)]


def _metric():
    from bertscore_tm import BERTScore

    path, layers, _ = bench._model("minilm")
    return BERTScore(path, num_layers=layers)


# --------------------------------------------------------------------------- workers (one process each)
def _timing(args: argparse.Namespace) -> dict:
    """Limit, ours and bert-score on N x N, taking turns, `repeats` rounds of wall-clock time at `threads`
    threads; then one round of process CPU time at one thread (no thread waits spinning: the figure a loaded
    machine distorts least)."""
    import torch

    cands, refs = _texts(args.data, args.n)
    expanded = ([c for c in cands for _ in refs], [r for _ in cands for r in refs])
    limit = bench._runner("limit", cands, refs, "minilm", "cpu")
    metric = _metric()
    theirs = bench._runner("bert-score", *expanded, "minilm", "cpu")
    runs = {"limit": limit, "ours": lambda: metric.pairwise(cands, refs)["f1"], "bert-score": lambda: theirs()["f1"]}
    rounds, results = [], {}
    for clock, threads, repeats in ((time.perf_counter, args.threads, args.repeats), (time.process_time, 1, 1)):
        torch.set_num_threads(threads)
        for _ in range(repeats):
            seconds = {}
            for name, run in runs.items():
                start = clock()
                results[name] = run()
                seconds[name] = clock() - start
            rounds.append(seconds)
    cpu_round = rounds.pop()
    ours_f1, ref_f1 = results["ours"].reshape(-1), torch.tensor(results["bert-score"])
    worst = int((ours_f1 - ref_f1).abs().argmax())
    from bert_score import BERTScorer

    path, layers, _ = bench._model("minilm")
    one = BERTScorer(model_type=path, num_layers=layers, batch_size=1, nthreads=0).score(
        [expanded[0][worst]], [expanded[1][worst]]
    )[2]
    return {
        "rounds": rounds,
        "cpu_round": cpu_round,
        "texts": len(set(cands) | set(refs)),
        "max_f1_error": (ours_f1 - ref_f1).abs().max().item(),
        "worst_unpadded_error": abs(ours_f1[worst].item() - one.item()),
    }


def _memory(args: argparse.Namespace) -> dict:
    """One N x N run: time and peak RSS, then a second run under torch's allocation record."""
    from bertscore_tm.engines.pairwise import all_pairs

    cands, refs = _texts(args.data, args.n)
    metric = _metric()
    base = bench._reset_peak()
    start = time.perf_counter()
    result, info = all_pairs(metric.scorer, cands, refs, metric.device)
    seconds = time.perf_counter() - start
    rss = max(0, bench._rss_kib("VmHWM") - base) / 1024
    del result
    (_, info), peak = bench._tensor_peak(lambda: all_pairs(metric.scorer, cands, refs, metric.device))
    forward_peak = bench._forward_peak(cands, refs)
    n, m = len(cands), len(refs)
    return {
        "n": n,
        "m": m,
        "seconds": seconds,
        "peak_rss_mib": rss,
        "tensor_peak_mib": peak,
        "outputs_mib": 3 * n * m * 4 / 2**20,
        "store_mib": info["store_bytes"] / 2**20,
        "tiles": info["tiles"],
        "texts_mib": info["text_bytes"] / 2**20,
        "kept_mib": info["kept_bytes"] / 2**20,
        "forward_peak_mib": forward_peak,
    }


def _mbr(args: argparse.Namespace) -> dict:
    """Ours on every group, then bert-score mbrs-style on the first `bert_score_groups` groups."""
    import math

    import torch

    groups = _mbr_groups(args.data, args.groups, args.group_size)
    texts = [t for group in groups for t in group]
    limit = bench._runner("limit", texts, [], "minilm", "cpu")
    start = time.perf_counter()
    limit()
    limit_seconds = time.perf_counter() - start
    metric = _metric()
    start = time.perf_counter()
    chosen, utilities = metric.mbr_select(groups, return_utilities=True)
    ours = time.perf_counter() - start
    path, layers, _ = bench._model("minilm")
    from bert_score import BERTScorer

    scorer = BERTScorer(model_type=path, num_layers=layers, batch_size=bench.BATCH, device="cpu", nthreads=0)
    start = time.perf_counter()
    err = 0.0
    picks_agree = 0
    for g, group in enumerate(groups[: args.bert_score_groups]):
        pairs = [(i, j) for i in range(len(group)) for j in range(len(group)) if i != j]
        f = scorer.score([group[i] for i, _ in pairs], [group[j] for _, j in pairs])[2].tolist()
        u = [
            math.fsum(x for (i, _), x in zip(pairs, f, strict=True) if i == k) / (len(group) - 1)
            for k in range(len(group))
        ]
        err = max(err, (utilities[g] - torch.tensor(u, dtype=torch.float64)).abs().max().item())
        picks_agree += chosen[g] == max(range(len(u)), key=lambda k: (u[k], -k))
    theirs = time.perf_counter() - start
    per_group = args.group_size * (args.group_size - 1)
    return {
        "groups": len(groups),
        "group_size": args.group_size,
        "pairs": len(groups) * per_group,
        "seconds": ours,
        "limit_seconds": limit_seconds,
        "texts": len(set(texts)),
        "bert_score_groups": args.bert_score_groups,
        "bert_score_pairs": args.bert_score_groups * per_group,
        "bert_score_seconds": theirs,
        "max_utility_error": err,
        "picks_agree": picks_agree,
    }


# --------------------------------------------------------------------------- driver
def _run(kind: str, args: argparse.Namespace, **extra: object) -> dict:
    cmd = [
        sys.executable,
        __file__,
        "--worker",
        kind,
        "--threads",
        str(args.threads),
        "--data",
        str(args.data),
        "--repeats",
        str(args.repeats),
        "--groups",
        str(args.groups),
        "--group-size",
        str(args.group_size),
        "--bert-score-groups",
        str(args.bert_score_groups),
    ]
    for key, value in extra.items():
        cmd += [f"--{key}", str(value)]
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    print(f"  running {kind} {extra} ...", file=sys.stderr, flush=True)
    done = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env)
    return json.loads(done.stdout.strip().splitlines()[-1])


def _section(args: argparse.Namespace, timing: dict, small: dict, large: dict, mbr: dict) -> str:
    import bert_score
    import torch
    import transformers

    med = bench._median
    rounds, cpu = timing["rounds"], timing["cpu_round"]
    pairs = args.n * args.n
    wall = {k: med([r[k] for r in rounds]) for k in ("limit", "ours", "bert-score")}
    to_limit = med([r["ours"] / r["limit"] for r in rounds])
    to_theirs = med([r["ours"] / r["bert-score"] for r in rounds])
    theirs_to_limit = med([r["bert-score"] / r["limit"] for r in rounds])
    cpu_to_limit, cpu_to_theirs = cpu["ours"] / cpu["limit"], cpu["ours"] / cpu["bert-score"]
    per_round = ", ".join(f"{r['ours'] / r['limit']:.2f}" for r in rounds)
    mbr_ours_pps = mbr["pairs"] / mbr["seconds"]
    mbr_theirs_pps = mbr["bert_score_pairs"] / mbr["bert_score_seconds"]

    def working(r: dict) -> float:
        return r["tensor_peak_mib"] - r["outputs_mib"] - r["store_mib"] - r["texts_mib"]

    def beyond(r: dict) -> float:  # beyond what the bare forward pass of the same texts itself holds
        return working(r) - r["forward_peak_mib"]

    def met(ok: bool) -> str:
        return "met" if ok else "NOT met"

    memory_rows = [
        f"| {r['n']} x {r['m']} | {r['n'] * r['m']:,} | {r['seconds']:.1f} | {r['n'] * r['m'] / r['seconds']:,.0f} | "
        f"{r['tensor_peak_mib']:.1f} | {r['outputs_mib']:.1f} | {r['store_mib']:.1f} | {r['texts_mib']:.2f} | "
        f"{working(r):.1f} | {r['kept_mib']:.1f} | {r['forward_peak_mib']:.1f} | {beyond(r):.1f} | "
        f"{r['peak_rss_mib']:.0f} |"
        for r in (small, large)
    ]
    lines = [
        BEGIN,
        "## All pairs and MBR (issue 10)",
        "",
        f"Measured {dt.date.today().isoformat()} by `python benchmarks/bench_pairwise.py --repeats {args.repeats} "
        f"--threads {args.threads}`: {platform.machine()}, {os.cpu_count()} cores, no GPU; torch {torch.__version__}, "
        f"transformers {transformers.__version__}, bert-score {bert_score.__version__} (0.3.13 wheel); MiniLM cut to "
        "5 layers; texts: the first lines of `tests/data/wmt/*_long.txt`.",
        "",
        f"- {args.n} x {args.n} ({pairs:,} pairs, {timing['texts']} distinct texts): one process, the limit (bare "
        "forward pass of the texts, as in `bench.py`), ours and bert-score taking turns: "
        f"{len(rounds)} round(s) of wall-clock time at {args.threads} thread(s) (median round; ours / limit per round "
        f"{per_round}), then one round of process CPU time at one "
        "thread, which a loaded machine distorts least (no threads spinning while they wait for a core). "
        f"bert-score scores the {pairs:,} expanded pairs with `BERTScorer` (model loaded once, batches of "
        f"{bench.BATCH}): it embeds each distinct sentence once too, then pads and matches pair by pair. Its F1 "
        f"differs from ours by up to {timing['max_f1_error']:.1e} where its padded batches let padding win a "
        "maximum (unrelated pairs, tokens whose similarities are all negative): on that worst pair its unpadded "
        f"score (batch_size=1) differs from ours by {timing['worst_unpadded_error']:.0e}.",
        "- memory: each size alone in its own process. Peak tensors = torch profiler's peak of live tensor bytes "
        "during `pairwise` (model weights excluded); outputs = the three N x M float32 matrices; store = the "
        "kept token vectors (and weights) of the side with fewer tokens, float32, 386 values per token (384 + "
        "two padding coordinates), in tiles of similar length: it grows with min(N, M) texts; texts = the token "
        "ids, weights and positions of all N + M texts; working = peak - outputs - store - texts: one run of "
        "forward batches (its table allocated once), its forward pass, one tile and one tile pair's similarities, "
        "and where the other side's vectors fit a fixed budget (16 MiB), those vectors, kept (embedded in the "
        "store's forward batches: fewer, fuller forward passes); the budget, not N x M, bounds them. "
        "The bare forward pass's peak: the limit's own peak of live tensors (same texts, same one-length batches "
        "of at most 2048 tokens), in the same process: its activations grow with how full the batches are "
        "(how many texts share a length), not with N x M, and the working memory holds them too; working "
        "beyond the forward pass = working - that peak. "
        "Peak RSS = growth of peak resident memory over the loaded model (noisy).",
        f"- MBR: {mbr['groups']} groups of {mbr['group_size']} ({mbr['texts']:,} distinct texts, {mbr['pairs']:,} "
        "ordered pairs, self-pairs excluded), against the bare forward pass of its texts and against bert-score "
        f"mbrs-style: one `BERTScorer.score` call per group on its {mbr['group_size']} x {mbr['group_size'] - 1} "
        f"expanded pairs, on the first {mbr['bert_score_groups']} groups ({mbr['bert_score_pairs']:,} pairs), "
        f"pairs/s extrapolated; on those groups the utilities agree to {mbr['max_utility_error']:.1e} and the "
        f"choices in {mbr['picks_agree']}/{mbr['bert_score_groups']}. Both are mostly forward passes.",
        "",
        "| run | pairs | seconds | pairs/s | vs the limit | vs bert-score | CPU s, 1 thread | vs the limit, CPU "
        "| vs bert-score, CPU |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        f"| limit: bare forward pass of the {timing['texts']} texts | - | {wall['limit']:.2f} | - | 1.00x | - | "
        f"{cpu['limit']:.2f} | 1.00x | - |",
        f"| bertscore-tm `pairwise` {args.n} x {args.n} | {pairs:,} | {wall['ours']:.2f} | "
        f"{pairs / wall['ours']:,.0f} | "
        f"{to_limit:.2f}x | {to_theirs:.3f}x | {cpu['ours']:.2f} | {cpu_to_limit:.2f}x | {cpu_to_theirs:.3f}x |",
        f"| bert-score 0.3.13, {pairs:,} expanded pairs | {pairs:,} | {wall['bert-score']:.2f} | "
        f"{pairs / wall['bert-score']:,.0f} | {theirs_to_limit:.2f}x | 1.000x | {cpu['bert-score']:.2f} | "
        f"{cpu['bert-score'] / cpu['limit']:.2f}x | 1.000x |",
        f"| limit: bare forward pass of the {mbr['texts']:,} MBR texts | - | {mbr['limit_seconds']:.1f} | - | 1.00x "
        "| - | - | - | - |",
        f"| bertscore-tm `mbr_select`, {mbr['groups']} x {mbr['group_size']} | {mbr['pairs']:,} | "
        f"{mbr['seconds']:.1f} | {mbr_ours_pps:,.0f} | {mbr['seconds'] / mbr['limit_seconds']:.2f}x | "
        f"{mbr_theirs_pps / mbr_ours_pps:.3f}x | - | - | - |",
        f"| bert-score mbrs-style, first {mbr['bert_score_groups']} groups | {mbr['bert_score_pairs']:,} | "
        f"{mbr['bert_score_seconds']:.1f} | {mbr_theirs_pps:,.0f} | - | 1.000x | - | - | - |",
        "",
        "| size | pairs | seconds | pairs/s | peak tensors MiB | outputs MiB | store MiB | texts MiB | working MiB "
        "| of which kept stream MiB | bare forward pass's peak MiB | working beyond the forward pass MiB "
        "| peak RSS MiB |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        *memory_rows,
        "",
        "| target | measured | |",
        "| --- | ---: | --- |",
        f"| {args.n} x {args.n}: at most 1.3x the bare forward pass of its texts | {to_limit:.2f}x wall, "
        f"{cpu_to_limit:.2f}x CPU (1 thread) | wall {met(to_limit <= 1.3)}, CPU {met(cpu_to_limit <= 1.3)} |",
        f"| {args.n} x {args.n}: at most 0.5x bert-score's time on the expanded pairs | {to_theirs:.3f}x wall, "
        f"{cpu_to_theirs:.3f}x CPU | wall {met(to_theirs <= 0.5)}, CPU {met(cpu_to_theirs <= 0.5)} |",
        f"| {large['n']} x {large['m']} runs here | {large['seconds']:.0f} s, {large['tensor_peak_mib']:.0f} MiB "
        "peak tensors | met |",
        f"| working memory beyond the outputs (and the store and texts) at {large['n']} x {large['m']} no larger "
        f"than at {small['n']} x {small['m']} | beyond the bare forward pass's own peak: {beyond(large):.1f} vs "
        f"{beyond(small):.1f} MiB; all of it: {working(large):.1f} vs {working(small):.1f} MiB, of which the "
        f"forward pass's activations {large['forward_peak_mib']:.1f} vs {small['forward_peak_mib']:.1f} MiB | "
        f"beyond the forward pass {met(beyond(large) <= beyond(small))}; all of it "
        f"{met(working(large) <= working(small))} |",
        f"| MBR pairs/s vs bert-score mbrs-style | {mbr_ours_pps / mbr_theirs_pps:.1f}x | - |",
        END,
    ]
    return "\n".join(lines) + "\n"


def write_section(text: str, path: Path = RESULTS) -> None:
    """Put the section in RESULTS.md, replacing an earlier one (bench.py keeps such marked sections)."""
    old = path.read_text(encoding="utf-8") if path.exists() else ""
    if BEGIN in old and END in old:
        new = old[: old.index(BEGIN)] + text.rstrip("\n") + old[old.index(END) + len(END) :]
    else:
        new = old.rstrip("\n") + "\n\n" + text
    path.write_text(new if new.endswith("\n") else new + "\n", encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=200, help="N for the N x N timing (default 200)")
    parser.add_argument("--large", type=int, default=2000, help="N for the large N x N memory run (default 2000)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3, help="timing rounds (each runs the three once)")
    parser.add_argument("--groups", type=int, default=500)
    parser.add_argument("--group-size", type=int, default=16)
    parser.add_argument("--bert-score-groups", type=int, default=25, help="groups bert-score scores (subsample)")
    parser.add_argument("--data", type=Path, default=bench.DEFAULT_DATA)
    parser.add_argument("--no-write", action="store_true", help="print the section, leave RESULTS.md alone")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        import torch

        warnings.filterwarnings("ignore")
        torch.set_num_threads(args.threads)
        result = {"timing": _timing, "memory": _memory, "mbr": _mbr}[args.worker](args)
        print(json.dumps(result))
        return
    timing = _run("timing", args, n=args.n)
    small = _run("memory", args, n=args.n)
    large = _run("memory", args, n=args.large)
    mbr = _run("mbr", args)
    text = _section(args, timing, small, large, mbr)
    print(text)
    if not args.no_write:
        write_section(text)


if __name__ == "__main__":
    main()
