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
    """Limit, ours and bert-score on 200 x 200, taking turns, `repeats` rounds."""
    cands, refs = _texts(args.data, args.n)
    expanded = ([c for c in cands for _ in refs], [r for _ in cands for r in refs])
    limit = bench._runner("limit", cands, refs, "minilm", "cpu")
    metric = _metric()
    theirs = bench._runner("bert-score", *expanded, "minilm", "cpu")
    rounds = []
    ours_f1 = ref_f1 = None
    for _ in range(args.repeats):
        seconds = {}
        start = time.perf_counter()
        limit()
        seconds["limit"] = time.perf_counter() - start
        start = time.perf_counter()
        ours_f1 = metric.pairwise(cands, refs)["f1"]
        seconds["ours"] = time.perf_counter() - start
        start = time.perf_counter()
        ref_f1 = theirs()["f1"]
        seconds["bert-score"] = time.perf_counter() - start
        rounds.append(seconds)
    import torch

    err = (ours_f1.reshape(-1) - torch.tensor(ref_f1)).abs().max().item()
    return {"rounds": rounds, "texts": len(set(cands) | set(refs)), "max_f1_error": err}


def _memory(args: argparse.Namespace) -> dict:
    """One N x N run: time and peak RSS, then a second run under torch's allocation record."""
    from bertscore_tm.pairwise import _pairwise

    cands, refs = _texts(args.data, args.n)
    metric = _metric()
    base = bench._reset_peak()
    start = time.perf_counter()
    result, info = _pairwise(metric, cands, refs)
    seconds = time.perf_counter() - start
    rss = max(0, bench._rss_kib("VmHWM") - base) / 1024
    del result
    (_, info), peak = bench._tensor_peak(lambda: _pairwise(metric, cands, refs))
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
    }


def _mbr(args: argparse.Namespace) -> dict:
    """Ours on every group, then bert-score mbrs-style on the first `bert_score_groups` groups."""
    import math

    import torch

    groups = _mbr_groups(args.data, args.groups, args.group_size)
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

    rounds = timing["rounds"]
    to_limit = [r["ours"] / r["limit"] for r in rounds]
    to_theirs = [r["ours"] / r["bert-score"] for r in rounds]
    theirs_to_limit = [r["bert-score"] / r["limit"] for r in rounds]
    med = bench._median
    pairs = args.n * args.n

    def pps(seconds: float, count: int) -> str:
        return f"{count / seconds:,.0f}"

    def working(r: dict) -> float:
        return r["tensor_peak_mib"] - r["outputs_mib"] - r["store_mib"] - r["texts_mib"]

    lim = med([r["limit"] for r in rounds])
    mbr_theirs_pps = mbr["bert_score_pairs"] / mbr["bert_score_seconds"]
    mbr_ours_pps = mbr["pairs"] / mbr["seconds"]
    lines = [
        BEGIN,
        "## All pairs and MBR (issue 10)",
        "",
        f"Measured {dt.date.today().isoformat()} by `python benchmarks/bench_pairwise.py --repeats {args.repeats} "
        f"--threads {args.threads}`: {platform.machine()}, {os.cpu_count()} cores, torch threads {args.threads}, "
        f"no GPU; torch {torch.__version__}, transformers {transformers.__version__}, bert-score "
        f"{bert_score.__version__} (0.3.13 wheel); MiniLM cut to 5 layers; texts: the first lines of "
        "`tests/data/wmt/*_long.txt`.",
        "",
        f"- {args.n} x {args.n} ({pairs:,} pairs, {timing['texts']} distinct texts), one process, the three taking "
        f"turns, {len(rounds)} round(s), median round: ratios per round "
        f"(ours / limit {', '.join(f'{x:.2f}' for x in to_limit)}; ours / bert-score "
        f"{', '.join(f'{x:.3f}' for x in to_theirs)}). bert-score scores the {pairs:,} expanded pairs with "
        f"`BERTScorer` (model loaded once, batches of {bench.BATCH}); it embeds each distinct sentence once too, "
        "then pads and matches pair by pair.",
        "- memory: each size alone in its own process. Peak tensors = torch profiler's peak of live tensor bytes "
        "during `pairwise` (model weights excluded); outputs = the three N x M float32 matrices; store = the "
        "kept token vectors (and weights) of the side with fewer tokens, float32, 386 values per token (384 + "
        "two padding coordinates), padded to tiles of similar length: it grows with min(N, M) texts; texts = "
        "the token ids, weights and positions of all N + M texts (bookkeeping, int32/float64 per token); working "
        "= peak - outputs - store - texts: the forward batch, the streamed chunk and its tiles, one tile pair's "
        "similarities. Peak RSS = growth of peak resident memory over the loaded model (noisy).",
        f"- MBR: {mbr['groups']} groups of {mbr['group_size']} ({mbr['pairs']:,} ordered pairs, self-pairs "
        f"excluded). bert-score mbrs-style: one `BERTScorer.score` call per group on its "
        f"{mbr['group_size']} x {mbr['group_size'] - 1} expanded pairs, on the first {mbr['bert_score_groups']} "
        f"groups ({mbr['bert_score_pairs']:,} pairs), pairs/s extrapolated; on those groups the utilities agree "
        f"to {mbr['max_utility_error']:.1e} and the choices in {mbr['picks_agree']}/{mbr['bert_score_groups']}.",
        "- the machine was shared with other jobs during this run (load well above its 2 cores): absolute "
        "times are slow and noisy; the ratios, taken within each round, are the figures to read.",
        "",
        "| run | pairs | seconds | pairs/s | vs the limit | vs bert-score | max F1 error vs bert-score |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
        f"| limit: bare forward pass of the {timing['texts']} texts | - | {lim:.2f} | - | 1.00x | - | - |",
        f"| bertscore-tm `pairwise` {args.n} x {args.n} | {pairs:,} | {med([r['ours'] for r in rounds]):.2f} | "
        f"{pps(med([r['ours'] for r in rounds]), pairs)} | {med(to_limit):.2f}x | {med(to_theirs):.3f}x | "
        f"{timing['max_f1_error']:.1e} |",
        f"| bert-score 0.3.13, {pairs:,} expanded pairs | {pairs:,} | {med([r['bert-score'] for r in rounds]):.2f} | "
        f"{pps(med([r['bert-score'] for r in rounds]), pairs)} | {med(theirs_to_limit):.2f}x | 1.000x | reference |",
        f"| bertscore-tm `mbr_select`, {mbr['groups']} x {mbr['group_size']} | {mbr['pairs']:,} | "
        f"{mbr['seconds']:.2f} | {mbr_ours_pps:,.0f} | - | {mbr_theirs_pps / mbr_ours_pps:.3f}x | "
        f"{mbr['max_utility_error']:.1e} (utilities) |",
        f"| bert-score mbrs-style, {mbr['bert_score_groups']} groups | {mbr['bert_score_pairs']:,} | "
        f"{mbr['bert_score_seconds']:.2f} | {mbr_theirs_pps:,.0f} | - | 1.000x | reference |",
        "",
        "| size | pairs | seconds | pairs/s | peak tensors MiB | outputs MiB | store MiB | texts MiB | working MiB | "
        "peak RSS MiB |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        *[
            f"| {r['n']} x {r['m']} | {r['n'] * r['m']:,} | {r['seconds']:.1f} | "
            f"{pps(r['seconds'], r['n'] * r['m'])} | {r['tensor_peak_mib']:.1f} | {r['outputs_mib']:.1f} | "
            f"{r['store_mib']:.1f} | {r['texts_mib']:.2f} | {working(r):.1f} | {r['peak_rss_mib']:.0f} |"
            for r in (small, large)
        ],
        "",
        "| target | measured | |",
        "| --- | ---: | --- |",
        f"| {args.n} x {args.n}: at most 1.3x the bare forward pass of its texts | {med(to_limit):.2f}x | "
        f"{'met' if med(to_limit) <= 1.3 else 'NOT met'} |",
        f"| {args.n} x {args.n}: at most 0.5x bert-score's time on the expanded pairs | {med(to_theirs):.3f}x | "
        f"{'met' if med(to_theirs) <= 0.5 else 'NOT met'} |",
        f"| {large['n']} x {large['m']} runs here | {large['seconds']:.0f} s, {large['tensor_peak_mib']:.0f} MiB "
        "peak tensors | met |",
        f"| working memory beyond the outputs (and the store and texts) at {large['n']} x {large['m']} "
        f"no larger than at {small['n']} x {small['m']} | {working(large):.1f} vs {working(small):.1f} MiB | "
        f"{'met' if working(large) <= working(small) + 0.5 else 'NOT met'} |",
        f"| MBR pairs/s vs bert-score mbrs-style | {mbr_ours_pps / mbr_theirs_pps:.1f}x faster | - |",
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
