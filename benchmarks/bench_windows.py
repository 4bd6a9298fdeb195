"""Speed and memory of long texts (issue 9): `long_texts="window"` on documents far past the model's window.

Documents are runs of consecutive WMT lines (`tests/data/wmt/*_long.txt`, seeded starting lines, wrapping
round), candidate documents from the system outputs and reference documents from the same lines' references.

* time: N candidate documents of about T tokens against N reference documents (updates + compute), as a
  ratio to "the limit": the bare forward pass of the same windows (every window of every distinct document,
  batched by the metric's own token budget, no stitching, no matching). Configurations take turns, round
  after round, and each round is divided by its own limit (the machine drifts).
* memory: the peak of live tensor memory over updates and compute, recorded by torch's profiler (as in
  `bench.py`), for those documents; for very long documents against others (`--long A:B`, default one of
  200,000 tokens against another of 200,000); and, for comparison, for today's setting (truncation) on
  1,000 WMT sentence pairs. `--long-layers 1` runs the long documents through one block instead of five:
  the same table, tiles and forward batch (the model frees each block's activations before the next), so
  the same peak, at a fifth of the forward passes' cost.

    python benchmarks/bench_windows.py                         # 100 x 3,000 tokens, 200,000 vs 200,000
    python benchmarks/bench_windows.py --docs 20 --repeats 1 --long 200000:3000 --long 40000:40000 --long-layers 1

The results go to benchmarks/RESULTS.md as its section "Long texts (issue 9)", between the lines
`<!-- bench_windows: begin -->` and `<!-- bench_windows: end -->` (replaced on each run; `bench.py` keeps
marked blocks when it rewrites the file).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import platform
import random
import subprocess
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DATA = REPO / "tests" / "data" / "wmt"
MINILM = "sentence-transformers/all-MiniLM-L6-v2"
UPDATE = 16  # documents per update()
#: this benchmark's block of RESULTS.md (bench.py keeps marked blocks when it rewrites the file)
BEGIN, END = "<!-- bench_windows: begin -->", "<!-- bench_windows: end -->"
SECTION = "## Long texts (issue 9)"


def _documents(count: int, tokens: int, seed: int, first_line: int | None = None) -> tuple[list[str], list[str]]:
    """`count` candidate documents of about `tokens` tokens and their reference documents."""
    from transformers import AutoTokenizer

    from bertscore_tm.models.loading import resolve_model_path

    hyps = (DATA / "hyps_long.txt").read_text(encoding="utf-8").splitlines()
    refs = (DATA / "refs_long.txt").read_text(encoding="utf-8").splitlines()
    tokenizer = AutoTokenizer.from_pretrained(str(resolve_model_path(MINILM)))
    sizes = [len(x) for x in tokenizer([h.strip() for h in hyps], add_special_tokens=False)["input_ids"]]
    rng = random.Random(seed)
    cands, targets = [], []
    for _ in range(count):
        i = rng.randrange(len(hyps)) if first_line is None else first_line
        lines, total = [], 0
        while total < tokens:
            lines.append(i)
            total += sizes[i]
            i = (i + 1) % len(hyps)
        cands.append(" ".join(hyps[j].strip() for j in lines))
        targets.append(" ".join(refs[j].strip() for j in lines))
    return cands, targets


def _limit_runner(cands: list[str], refs: list[str], threads: int):
    """The bare forward pass of every window of every distinct document, batched as the metric batches."""
    import torch

    from bertscore_tm import BERTScore
    from bertscore_tm.embedding.batches import length_batches
    from bertscore_tm.models.windows import piece_ids, plan_pieces

    metric = BERTScore(MINILM, long_texts="window")
    rule, embedder = metric.windows, metric.embedder
    docs = [metric.token_ids(t) for t in dict.fromkeys(t.strip() for t in cands + refs)]
    pieces = plan_pieces([len(d) for d in docs], rule)
    seqs = [piece_ids(docs[p.text], p, rule) for p in pieces]
    model = embedder.model

    def run() -> dict:
        with torch.inference_mode():
            for batch in length_batches([len(s) for s in seqs], embedder.batch_size, embedder.max_tokens):
                longest = max(len(seqs[i]) for i in batch)
                ids = torch.zeros((len(batch), longest), dtype=torch.long)
                mask = torch.zeros((len(batch), longest), dtype=torch.long)
                for row, i in enumerate(batch):
                    ids[row, : len(seqs[i])] = seqs[i]
                    mask[row, : len(seqs[i])] = 1
                model(input_ids=ids, attention_mask=mask)
        return {"windows": len(seqs), "documents": len(docs), "window_tokens": sum(len(s) for s in seqs)}

    return run


def _ours_runner(cands: list[str], refs: list[str], long_texts: str = "window", layers: int = 5):
    from bertscore_tm import BERTScore

    metric = BERTScore(MINILM, num_layers=layers, long_texts=long_texts)

    def run() -> dict:
        metric.reset()
        before = metric.embedder.rows_embedded
        for i in range(0, len(cands), UPDATE):
            metric.update(cands[i : i + UPDATE], refs[i : i + UPDATE])
        f1 = metric.compute()["f1"]
        return {"f1_mean": float(f1.mean()), "sequences_run": metric.embedder.rows_embedded - before}

    return run, metric


def _worker(args: argparse.Namespace) -> dict:
    import torch

    from bench import _pairs, _tensor_peak

    warnings.filterwarnings("ignore")
    torch.set_num_threads(args.threads)
    out: dict = {"kind": args.worker}
    if args.worker == "timing":
        cands, refs = _documents(args.docs, args.tokens, args.seed)
        runners = {"limit": _limit_runner(cands, refs, args.threads), "ours": _ours_runner(cands, refs)[0]}
        rounds = []
        for _ in range(args.repeats):
            seconds = {}
            for name, run in runners.items():
                start = time.perf_counter()
                out[name] = run()
                seconds[name] = time.perf_counter() - start
            rounds.append(seconds)
        out["rounds"] = rounds
        return out
    if args.worker == "memory":
        cands, refs = _documents(args.docs, args.tokens, args.seed)
    elif args.worker == "long":
        a, b = (int(x) for x in args.long[0].split(":"))
        cands, _ = _documents(1, a, args.seed, first_line=0)
        _, refs = _documents(1, b, args.seed, first_line=1000)
    else:  # "truncate": today's setting on WMT sentence pairs
        cands, refs = _pairs(DATA, 1000)
    layers = args.long_layers if args.worker == "long" else 5
    run, metric = _ours_runner(cands, refs, "truncate" if args.worker == "truncate" else "window", layers)
    start = time.perf_counter()
    result, out["tensor_peak_mib"] = _tensor_peak(run)
    out["seconds"] = time.perf_counter() - start
    out.update(result)
    out["tokens"] = [int(sum(int(x.sum()) for x in metric.cand_lens)), int(sum(int(x.sum()) for x in metric.ref_lens))]
    out["per_token_mib"] = sum(t.numel() * t.element_size() for t in (*metric.cand_best, *metric.ref_best)) / 2**20
    out["state_mib"] = (
        sum(
            t.numel() * t.element_size()
            for t in (*metric.cand_ids, *metric.ref_ids, *metric.cand_lens, *metric.ref_lens)
        )
        / 2**20
    )
    out["block_mib"] = metric.embedder.block_bytes / 2**20
    return out


def _run(kind: str, args: argparse.Namespace, extra: tuple[str, ...] = ()) -> dict:
    cmd = [sys.executable, __file__, "--worker", kind, *_passed(args), *extra]
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(HERE), str(REPO / "src"), env.get("PYTHONPATH", "")) if p)
    print(f"  running {kind} ...", file=sys.stderr, flush=True)
    done = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env)
    return json.loads(done.stdout.strip().splitlines()[-1])


def _passed(args: argparse.Namespace) -> list[str]:
    return [
        "--docs",
        str(args.docs),
        "--tokens",
        str(args.tokens),
        "--threads",
        str(args.threads),
        "--repeats",
        str(args.repeats),
        "--seed",
        str(args.seed),
        "--long-layers",
        str(args.long_layers),
    ]


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def _write(section: str, path: Path) -> None:
    """This benchmark's section of RESULTS.md, between its begin/end lines (replaced on each run; bench.py and
    the other benchmarks keep such marked blocks as they are)."""
    text = path.read_text(encoding="utf-8") if path.exists() else "# Benchmark results\n"
    block = f"{BEGIN}\n{section.strip()}\n{END}"
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        text = head + block + rest.split(END, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    path.write_text(text, encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=100, help="candidate documents (and as many references)")
    parser.add_argument("--tokens", type=int, default=3000, help="tokens per document, about")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3, help="timing rounds")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--long",
        action="append",
        metavar="A:B",
        help="a document of about A tokens against one of B (repeatable; default 200000:200000)",
    )
    parser.add_argument("--long-layers", type=int, default=5, help="blocks the long documents run through")
    parser.add_argument("--out", type=Path, default=HERE / "RESULTS.md")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(_worker(args)))
        return

    import torch
    import transformers

    timing = _run("timing", args)
    ratios = [r["ours"] / r["limit"] for r in timing["rounds"]]
    ratio = _median(ratios)
    limit_s = _median([r["limit"] for r in timing["rounds"]])
    args.long = args.long or ["200000:200000"]
    memory, today = _run("memory", args), _run("truncate", args)
    longs = [_run("long", args, ("--long", spec)) for spec in args.long]
    cpu = "unknown"
    with contextlib.suppress(OSError, StopIteration):
        cpu = next(
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        )
    lim = timing["limit"]
    section = "\n".join(
        [
            SECTION,
            "",
            f"Measured {dt.date.today().isoformat()} by `python benchmarks/bench_windows.py {' '.join(_passed(args))} "
            f"{' '.join('--long ' + spec for spec in args.long)}`"
            f" on {platform.machine()}, {cpu}, {os.cpu_count()} cores, torch threads {args.threads}, no GPU; torch "
            f"{torch.__version__}, transformers {transformers.__version__}; {MINILM} cut to 5 layers, "
            '`long_texts="window"` (windows of 510 tokens every 255).',
            "",
            f"- documents: {args.docs} candidate documents of about {args.tokens} tokens against {args.docs} reference "
            f"documents (the same WMT lines' references): {lim['documents']} distinct documents, {lim['windows']} "
            f"windows ({lim['window_tokens']} tokens run through the model)",
            "- the limit: the bare forward pass of those windows, batched by the metric's token budget; time ratio = "
            f"ours (updates + compute) / the limit, median of {args.repeats} round(s) "
            f"(rounds: {', '.join(f'{r:.2f}x' for r in ratios)})",
            "- peak tensors: the peak of live tensor memory over updates and compute (torch's profiler; the model's "
            "weights excluded); per-token results: the best similarities the metric keeps after compute; state: "
            "token ids and lengths",
            "",
            "| run | tokens (cand + ref) | sequences run | seconds | time ratio to the limit | peak tensors MiB | "
            "per-token results MiB | state MiB |",
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
            f"| limit: bare forward pass of the windows | {lim['window_tokens']} | {lim['windows']} | {limit_s:.1f} | "
            "1.00x | - | - | - |",
            f"| {args.docs} x {args.tokens}-token documents, window | {sum(memory['tokens'])} | "
            f"{memory['sequences_run']} | {memory['seconds']:.1f} | {ratio:.2f}x | {memory['tensor_peak_mib']:.1f} | "
            f"{memory['per_token_mib']:.1f} | {memory['state_mib']:.1f} |",
            *(
                f"| one {spec.split(':')[0]}-token document vs one of {spec.split(':')[1]}, window"
                f"{'' if args.long_layers == 5 else f' (model cut to {args.long_layers} block(s))'} | "
                f"{long['tokens'][0]} + {long['tokens'][1]} | {long['sequences_run']} | {long['seconds']:.1f} | - | "
                f"{long['tensor_peak_mib']:.1f} | "
                f"{long['per_token_mib']:.1f} | {long['state_mib']:.1f} |"
                for spec, long in zip(args.long, longs, strict=True)
            ),
            f"| today's setting: 1000 WMT sentence pairs, truncate | {sum(today['tokens'])} | "
            f"{today['sequences_run']} | {today['seconds']:.1f} | - | "
            f"{today['tensor_peak_mib']:.1f} | {today['per_token_mib']:.1f} | {today['state_mib']:.1f} |",
            "",
            f"The working budget of compute() is {memory['block_mib']:.0f} MiB on a CPU (one table of token vectors, "
            "the plan and the per-token results), plus one tile of similarities (at most 4 Mi elements) and one "
            "forward batch. Seconds include the profiler's own overhead.",
            "",
        ]
    )
    _write(section, args.out)
    print(section)


if __name__ == "__main__":
    main()
