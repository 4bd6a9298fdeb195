"""Speed of layer tuning: `bertscore-tm tune-layers` on the WMT17 judgements against the bare forward pass of
their distinct texts through every layer.

The limit is the model alone: loaded once, the distinct texts (candidates and references) tokenised once,
then run with ``output_hidden_states=True`` in batches of one length within the metric's token budget, with
no matching and nothing else. The tuning is the whole command, run in this process as a user runs it: reading
the file, loading the model, tokenising, embedding every layer once, matching at every layer, correlating
P/R/F per layer and language pair, the bootstrap intervals and the paired test, writing the JSON. Both take
turns, limit first and last (limit, tuning, limit, tuning, ..., limit), and each round's ratio is a tuning's
time over the mean of the limits run just before and just after it (the median round is reported), so that the
machine's drift, which moves the limit itself by 10% over minutes on a shared 2-core machine, cancels to first
order. Target: at most 1.15x.

    python benchmarks/bench_tune.py                      # all 2,800 rows, 3 rounds, 2 threads
    python benchmarks/bench_tune.py --rows 400 --rounds 1  # a quick look
    python benchmarks/bench_tune.py --way library        # time tune_layers() instead of the command

A last, untimed-against-the-limit run splits the tuning into its parts (reading, the one all-layers pass,
the correlations with and without the bootstrap) to say where the time goes. Prints a markdown section for
benchmarks/RESULTS.md, to paste between its `<!-- bench_tune: begin -->` and `end` lines. Times are
wall-clock and this process's CPU time (all threads), which moves less when other work shares the machine.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import io
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "tests" / "data" / "wmt17-da" / "da-seglevel-toen.tsv"
MINILM = "sentence-transformers/all-MiniLM-L6-v2"


def slice_file(path: Path, rows: int | None, folder: str) -> Path:
    """The judgement file, or its header and `rows` rows spread evenly over it (every language pair kept)."""
    if rows is None:
        return path
    header, *lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    step = max(1, len(lines) // rows)
    out = Path(folder) / f"judgements-{rows}.tsv"
    out.write_text(header + "".join(lines[::step][:rows]), encoding="utf-8")
    return out


def bare_pass(model_name: str, texts: list[str]):
    """The limit: a function running the distinct texts through every layer of the loaded model."""
    import torch
    from transformers import AutoTokenizer

    from bertscore_tm.embedding.batches import length_batches
    from bertscore_tm.models.loading import load_encoder, resolve_model_path

    path = resolve_model_path(model_name)
    model, _ = load_encoder(path, 0, all_layers=True)
    ids = AutoTokenizer.from_pretrained(str(path))(texts, truncation=True, max_length=512)["input_ids"]
    lengths = [len(x) for x in ids]

    def run() -> int:
        batches = 0
        with torch.inference_mode():
            for batch in length_batches(lengths, None, 2048):  # the metric's token budget on a CPU
                inp = torch.tensor([ids[i] for i in batch])
                model(input_ids=inp, attention_mask=torch.ones_like(inp), output_hidden_states=True)
                batches += 1
        return batches

    return run, sum(lengths)


def tuning_run(way: str, data: Path, model_name: str, bootstrap: int):
    """The tuning as timed: the command in this process (its JSON kept), or `tune_layers` itself."""
    if way == "cli":
        from bertscore_tm.cli import main

        argv = ["tune-layers", "--data", str(data), "--group-by", "lp", "--system-column", "system"]
        argv += ["-m", model_name, "--bootstrap", str(bootstrap), "--format", "json", "--no-progress"]

        def run() -> dict:
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                code = main(argv)
            if code != 0:
                raise SystemExit(f"tune-layers exited with {code}")
            return json.loads(out.getvalue())

        return run
    from bertscore_tm.tuning.layer_tuning import read_judgements, tune_layers

    def run_library() -> dict:
        rows = read_judgements(data, group="lp", system="system")
        return tune_layers(rows, model_name, bootstrap=bootstrap).to_dict()

    return run_library


def timed(fn):
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn()
    return time.perf_counter() - wall, time.process_time() - cpu, result


def parts(data: Path, model_name: str, bootstrap: int) -> dict[str, tuple[float, float]]:
    """Where the tuning's time goes: each part on its own (wall and CPU seconds)."""
    from bertscore_tm.tuning.layer_tuning import read_judgements, score_all_layers, tune_from_scores

    took: dict[str, tuple[float, float]] = {}
    seconds, cpu, rows = timed(lambda: read_judgements(data, group="lp", system="system"))
    took["read the file"] = seconds, cpu
    seconds, cpu, scores = timed(lambda: score_all_layers(rows, model_name))
    took["the all-layers pass (model load, tokenising, embedding, matching)"] = seconds, cpu
    seconds, cpu, _ = timed(lambda: tune_from_scores(rows, scores, bootstrap=0))
    took["correlations without bootstrap (P/R/F x 3 methods x layers, system level)"] = seconds, cpu
    seconds, cpu, _ = timed(lambda: tune_from_scores(rows, scores, bootstrap=bootstrap))
    took[f"correlations with {bootstrap} resamples and the paired test"] = seconds, cpu
    return took


def report(args: argparse.Namespace, rounds: list[dict], info: dict, split: dict[str, tuple[float, float]]) -> str:
    ratios = [r["tune"] / r["bare"] for r in rounds]
    cpu_ratios = [r["tune_cpu"] / r["bare_cpu"] for r in rounds]
    median, cpu_median = statistics.median(ratios), statistics.median(cpu_ratios)
    import torch

    lines = [
        "## Issue 25: `tune-layers` against the bare forward pass through every layer",
        "",
        f"Measured {dt.date.today().isoformat()} by `{info['command']}`.",
        "",
        f"- machine: {platform.machine()}, {os.cpu_count()} cores, torch threads {args.threads}, torch "
        f"{torch.__version__}; load average {info['load_start']} at the start, {info['load_end']} at the end",
        f"- data: {info['rows']} WMT17 judgements (`{info['data']}`), {info['texts']} distinct texts, "
        f"{info['tokens']} tokens; model {args.model}, float32, CPU",
        f"- limit: the full model with `output_hidden_states=True` over the distinct texts, tokenised once, in "
        f"{info['batches']} batches of one length (2048-token budget), model loaded once; tuning: "
        + (
            "`bertscore-tm tune-layers --group-by lp --system-column system --format json`, run in-process "
            "(model load included)"
            if args.way == "cli"
            else "`read_judgements` + `tune_layers` (model load included)"
        )
        + f", {args.bootstrap} resamples; best layer {info['best']}",
        "",
        "| round | limit s | tune-layers s | ratio | limit CPU s | tune-layers CPU s | CPU ratio |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for n, r in enumerate(rounds, 1):
        lines.append(
            f"| {n} | {r['bare']:.1f} | {r['tune']:.1f} | {r['tune'] / r['bare']:.3f} | {r['bare_cpu']:.1f} | "
            f"{r['tune_cpu']:.1f} | {r['tune_cpu'] / r['bare_cpu']:.3f} |"
        )
    verdict = "met" if median <= 1.15 else "NOT met"
    lines += [
        "",
        "- a round's limit is the mean of the limits run just before and just after its tuning",
        f"- median ratio {median:.3f} (CPU {cpu_median:.3f}): target at most 1.15x, {verdict}",
        "- where the tuning's time goes (one more run, each part alone, wall s / CPU s): "
        + "; ".join(f"{name} {wall:.2f} / {cpu:.2f}" for name, (wall, cpu) in split.items()),
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--rows", type=int, default=None, help="a slice of this many rows (default: all)")
    parser.add_argument("--model", default=MINILM)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--bootstrap", type=int, default=1000)
    parser.add_argument("--way", choices=("cli", "library"), default="cli")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import torch

    torch.set_num_threads(args.threads)
    from bertscore_tm.tuning.judgements import read_judgements

    with tempfile.TemporaryDirectory() as folder:
        data = slice_file(args.data, args.rows, folder)
        rows = read_judgements(data, group="lp", system="system")
        texts = list(dict.fromkeys(rows.candidates + rows.references))
        load_start = "/".join(f"{x:.1f}" for x in os.getloadavg())
        bare, tokens = bare_pass(args.model, texts)
        tune = tuning_run(args.way, data, args.model, args.bootstrap)
        bare()  # warm-up: first-call allocations and kernel choices, for both
        result = tune()
        rounds = []
        before = timed(bare)[:2]
        for _ in range(args.rounds):  # limit, tuning, limit, tuning, ..., limit: each tuning between two limits
            tune_s, tune_cpu, result = timed(tune)
            after_s, after_cpu, batches = timed(bare)
            bare_s, bare_cpu = (before[0] + after_s) / 2, (before[1] + after_cpu) / 2
            rounds.append({"bare": bare_s, "bare_cpu": bare_cpu, "tune": tune_s, "tune_cpu": tune_cpu})
            print(f"limit {before[0]:.1f} s / {after_s:.1f} s, tune-layers {tune_s:.1f} s, ratio {tune_s / bare_s:.3f}")
            before = after_s, after_cpu
        split = parts(data, args.model, args.bootstrap)
        info = {
            "command": " ".join(["python", "benchmarks/bench_tune.py", *sys.argv[1:]]),
            "load_start": load_start,
            "load_end": "/".join(f"{x:.1f}" for x in os.getloadavg()),
            "rows": len(rows),
            "data": os.path.relpath(args.data, REPO),
            "texts": len(texts),
            "tokens": tokens,
            "batches": batches,
            "best": result["best_layer"],
        }
    print(report(args, rounds, info, split))


if __name__ == "__main__":
    main()
