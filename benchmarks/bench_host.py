"""The host's share of a compute() in accelerator batching, measured on a CPU (issue 37): the whole metric over
the WMT pairs repeated (the device suite's pairs: `gpu_suite.wmt_pairs`), with the forward pass replaced by a
stand-in that returns unit vectors at once, so what is left is the host's work (finding the distinct texts,
planning blocks, packs and matching batches, building index tensors, Python) and matching at the dry shape's
small width. On a GPU that work runs beside the device's, and where anything makes the host wait it adds to
it: the 2026-11-28 H100 run's compute() took 9.3 s for 100,000 bfloat16 pairs where the bare pass would take
about 6.2 s. A CPU proxy, so that the host's part can be cut and measured in sessions without a GPU; it is
not a GPU figure.

`--loop` measures tokenising ahead instead (`BERTScore.tokenise_ahead`): a validation loop whose every step
waits 4 ms for a device (a sleep) and then calls update() with 64 pairs, tokenising in the caller's thread
against ahead, in turns; the whole loop's seconds, the queue taken in at its end.

    python benchmarks/bench_host.py                  # 100,000 pairs, 2 rounds
    python benchmarks/bench_host.py --pairs 20000 --rounds 1
    python benchmarks/bench_host.py --loop --pairs 20000 --rounds 4
    python benchmarks/bench_host.py --ops --pairs 20000

`--ops` counts the top-level torch ops a compute() dispatches (`op_counts`): a GPU launches a kernel or more
for each, so where launches set the pace they are the host's cost per pair.

`--overlap` measures compute()'s scoring in chunks while the tokenising thread still works
(`queued.CHUNK_TEXTS`) against scoring once everything is tokenised: update() in a tight loop (a corpus fed
to the metric, as the device suite feeds it), tokenising ahead, then compute(); the stand-in pass waits (a sleep,
the host's view of a device busy) as long as the H100's bare packed bfloat16 pass took for as many tokens
(`DEVICE_TOKENS_PER_S`), so the tokenizer and the device's time can overlap or not.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import torch

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "src")]  # this checkout's package, not an installed copy

UPDATE = 64  # pairs per update(), as a validation loop feeds them (the device suite's)
DEVICE_WAIT = 0.004  # seconds a `--loop` step waits for its device
ROBERTA_LARGE_WIDTH = 1024  # the device suite's model's: `--ops` cuts matching batches as that width does
DEVICE_TOKENS_PER_S = 836_529  # the H100's bare packed bfloat16 pass, roberta-large to layer 17 (RESULTS-gpu.md)
DEVICE_WAITS: list[float] = []  # `--overlap`: the seconds each stand-in pass waited


def stand_in(model: Any, seqs: Any, score_budget: int, fused: bool = False, lengths: Any = None) -> tuple:
    """`packed_forward`'s result without the model: a unit-norm row a token (the model's width), each
    sequence's first row."""
    sizes = [len(s) for s in seqs] if lengths is None else lengths
    starts = [0, *torch.tensor(sizes).cumsum(0).tolist()]
    width = model.config.hidden_size
    return torch.full((starts[-1], width), width**-0.5), starts[:-1]


def stand_in_pass(model: Any, ids: Any, lengths: Any, score_budget: int, fused: bool = False) -> Any:
    """`packed_pass`'s result without the model: a unit-norm row a token (the model's width)."""
    width = model.config.hidden_size
    return torch.full((len(ids), width), width**-0.5)


def device_pass(model: Any, ids: Any, lengths: Any, score_budget: int, fused: bool = False) -> Any:
    """`stand_in_pass` after as long a wait as the device would take for the pack (`DEVICE_TOKENS_PER_S`)."""
    DEVICE_WAITS.append(len(ids) / DEVICE_TOKENS_PER_S)
    time.sleep(DEVICE_WAITS[-1])
    return stand_in_pass(model, ids, lengths, score_budget, fused)


def one_round(
    path: str, layers: int, cands: list[str], refs: list[str], ahead: bool | None = None
) -> tuple[float, float]:
    """(update seconds, compute seconds) of one metric over the pairs, in accelerator batching."""
    from bertscore_tm import BERTScore

    metric = BERTScore(path, num_layers=layers)
    metric.tokenise_ahead = ahead
    metric.embedder._batching = "accelerator"  # the packs, blocks and batches of a GPU's compute()
    metric.embedder.max_tokens = 16384  # the accelerator's budget (a CPU's default is 2,048)
    start = time.perf_counter()
    for i in range(0, len(cands), UPDATE):
        metric.update(cands[i : i + UPDATE], refs[i : i + UPDATE])
    updated = time.perf_counter()
    metric.compute()
    return updated - start, time.perf_counter() - updated


def loop_round(path: str, layers: int, cands: list[str], refs: list[str], ahead: bool) -> float:
    """Seconds of a loop of steps that each wait `DEVICE_WAIT` s and then update() `UPDATE` pairs."""
    from bertscore_tm import BERTScore

    metric = BERTScore(path, num_layers=layers)
    metric.tokenise_ahead = ahead
    start = time.perf_counter()
    for i in range(0, len(cands), UPDATE):
        time.sleep(DEVICE_WAIT)  # the host waiting for the device's step (it holds no lock: the thread runs)
        metric.update(cands[i : i + UPDATE], refs[i : i + UPDATE])
    len(metric.cand_ids)  # a read of the state: the queued pairs join it
    return time.perf_counter() - start


def op_counts(path: str, layers: int, cands: list[str], refs: list[str]) -> dict[str, int]:
    """Top-level torch ops (each one kernel launch or more on a GPU) that a compute() in accelerator batching
    dispatches in its packed passes and in the rest (matching, planning, copies), the dry shape's model running,
    variable-length attention stood in for by one op a block (as CUDA's bfloat16 runs it) and matching batches
    holding as many pairs as at roberta-large's width: the host's work per pair where launches set the pace (the
    H100's bare bfloat16 pass ran at 36% of its peak)."""
    from torch.profiler import ProfilerActivity, profile, record_function

    import bertscore_tm.embedding.attention as attention
    import bertscore_tm.embedding.embedder as embedder_module
    import bertscore_tm.scoring.matching as matching
    from bertscore_tm import BERTScore

    attention._varlen = lambda query: lambda q, *args, **kwargs: torch.empty_like(q)  # type: ignore[assignment]
    real = embedder_module.packed_pass

    def marked(*args: Any, **kwargs: Any) -> Any:
        with record_function("packed pass"):
            return real(*args, **kwargs)

    metric = BERTScore(path, num_layers=layers, model_dtype=torch.bfloat16)
    metric.embedder._batching, metric.embedder.max_tokens = "accelerator", 16384
    width = metric.embedder.hidden_size  # matching batches of as many pairs as roberta-large's (1,024 wide) hold
    matching.gather_elements = lambda device: (1 << 22) * width // ROBERTA_LARGE_WIDTH  # type: ignore[assignment]
    for i in range(0, len(cands), UPDATE):
        metric.update(cands[i : i + UPDATE], refs[i : i + UPDATE])
    embedder_module.packed_pass = marked
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        metric.compute()
    counts = {"packed passes": 0, "the rest": 0}
    for event in prof.events():
        parent = event.cpu_parent
        if not event.name.startswith("aten::") or (parent is not None and parent.name.startswith("aten::")):
            continue
        while parent is not None and parent.name != "packed pass":
            parent = parent.cpu_parent
        counts["the rest" if parent is None else "packed passes"] += 1
    return counts


def overlap(path: str, layers: int, cands: list[str], refs: list[str], rounds: int) -> None:
    """update() + compute() seconds tokenising ahead, with compute() scoring in chunks as pairs join and with
    one chunk (`CHUNK_TEXTS` past the texts), in turns; the stand-in pass waits as the device would."""
    import bertscore_tm.embedding.embedder as embedder_module
    from bertscore_tm.metric import queued

    embedder_module.packed_pass = device_pass
    chunk, whole = queued.CHUNK_TEXTS, 1 << 40
    one_round(path, layers, cands[:UPDATE], refs[:UPDATE], ahead=True)  # warm up
    DEVICE_WAITS.clear()
    seconds: dict[int, list[tuple[float, float]]] = {chunk: [], whole: []}
    for k in range(rounds):
        for size in (chunk, whole) if k % 2 == 0 else (whole, chunk):
            queued.CHUNK_TEXTS = size
            update, compute = one_round(path, layers, cands, refs, ahead=True)
            seconds[size].append((round(update, 2), round(compute, 2)))
    queued.CHUNK_TEXTS = chunk
    for size, runs in seconds.items():
        name = f"chunks of {size} texts" if size == chunk else "one chunk"
        totals = [round(u + c, 2) for u, c in runs]
        print(f"{len(cands)} pairs, {name}: (update, compute) s {runs}, totals {totals}")
    print(f"the device's share of a round (its waits): {sum(DEVICE_WAITS) / (2 * rounds):.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--loop", action="store_true", help="tokenising ahead in a loop that waits for a device")
    parser.add_argument("--ops", action="store_true", help="count the torch ops of a compute(), the model running")
    parser.add_argument("--overlap", action="store_true", help="compute() scoring while the tokenizer still works")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    import bertscore_tm.embedding.embedder as embedder_module
    import gpu_suite

    path, layers, _ = gpu_suite.build_model(True, None)  # the dry run's tiny shape: its width, MiniLM's tokenizer
    cands, refs = gpu_suite.wmt_pairs(args.pairs)
    if args.ops:
        counts = op_counts(path, layers, cands, refs)
        per_pair = ", ".join(f"{name} {n} ({n / args.pairs:.2f} a pair)" for name, n in counts.items())
        print(f"{args.pairs} pairs, top-level torch ops in compute(), a {layers}-block model: {per_pair}")
        return
    embedder_module.packed_forward, embedder_module.packed_pass = stand_in, stand_in_pass
    if args.overlap:
        overlap(path, layers, cands, refs, args.rounds)
        return
    if args.loop:
        seconds: dict[bool, list[float]] = {False: [], True: []}
        for k in range(args.rounds):
            for ahead in (False, True) if k % 2 else (True, False):
                seconds[ahead].append(round(loop_round(path, layers, cands, refs, ahead), 2))
        waits = len(range(0, args.pairs, UPDATE)) * DEVICE_WAIT
        print(f"{args.pairs} pairs: caller's thread {seconds[False]} s, ahead {seconds[True]} s (waits {waits:.2f} s)")
        return
    one_round(path, layers, cands[:UPDATE], refs[:UPDATE])  # warm up
    rounds = [one_round(path, layers, cands, refs) for _ in range(args.rounds)]
    update, compute = min(r[0] for r in rounds), min(r[1] for r in rounds)
    print(f"{args.pairs} pairs, best of {args.rounds}: update() {update:.2f} s, compute() {compute:.2f} s (host work)")


if __name__ == "__main__":
    main()
