"""Distributed compute on torch.distributed: two gloo processes on the loopback interface.

One pair of spawned processes runs every distributed check in turn (starting processes and loading the model
is the expensive part); each rank saves what it saw and the tests below compare it, in this process, with
one process scoring the same pairs and with the reference bert-score.

What is checked: each rank embeds only its own pairs; IDF document counts and reference counts are
all-reduced before any weight is applied; only per-pair results (and a few counts) cross ranks; every rank
gets the same full result in rank-major order; shards may be uneven or empty; `indexes` reorder by dataset
index and drop the repeats a DistributedSampler pads in (from the IDF counts too).
"""

from __future__ import annotations

import warnings
from contextlib import contextmanager
from itertools import pairwise

import pytest
import torch

from bertscore_tm import PACKAGED_MINILM, BERTScore
from tests.spawn import process_group, run_ranks, save_rank

WORLD = 2
TIMEOUT_S = 240  # the whole two-process run; a collective gives up after COLLECTIVE_TIMEOUT_S
COLLECTIVE_TIMEOUT_S = 90
TOL = 1e-5


# -- the plan: which pairs each rank holds, fixed here so both sides of the test agree ---------------------


def _plan(wmt: dict[str, list[str]]) -> dict:
    hyps, refs, refs2 = wmt["hyps"], wmt["refs"], wmt["refs2"]
    long_c, long_r = wmt["hyps_long"], wmt["refs_long"]
    # 10 candidates with two references each, then 24 with one
    cands = hyps + long_c[:24]
    targets = [[a, b] for a, b in zip(refs, refs2, strict=True)] + [[r] for r in long_r[:24]]
    # uneven shards that interleave the input, so that rank-major order differs from input order
    shards = [[i for i in range(len(cands)) if i % 3 != 2], [i for i in range(len(cands)) if i % 3 == 2]]
    chunks = [[7, 9], [5]]  # update() call sizes (the rest in one more call)
    # a rank without any pair: rank 0 holds nothing, rank 1 seven pairs
    empty = {"cands": long_c[40:47], "targets": long_r[40:47]}
    # DistributedSampler padding: 23 items over 2 ranks -> 24 draws, one repeated
    idx_cands = long_c[50:70] + hyps[:3]
    idx_targets = [[r] for r in long_r[50:70]] + [[a, b] for a, b in zip(refs[:3], refs2[:3], strict=True)]
    # per-pair context (issue 39): 16 pairs, each with a context text, split unevenly over the ranks
    context = {
        "cands": long_c[24:40],
        "targets": [[r] for r in long_r[24:40]],
        "context": long_c[70:86],
        "shards": [[i for i in range(16) if i % 4 != 3], [i for i in range(16) if i % 4 == 3]],
    }
    return {
        "main": {"cands": cands, "targets": targets, "shards": shards, "chunks": chunks},
        "context": context,
        "empty": empty,
        "indexed": {"cands": idx_cands, "targets": idx_targets, "batch": 5, "seed": 7},
    }


def _rank_major(plan: dict) -> tuple[list[str], list[list[str]]]:
    order = [i for shard in plan["main"]["shards"] for i in shard]
    return [plan["main"]["cands"][i] for i in order], [plan["main"]["targets"][i] for i in order]


# -- the worker (runs in each spawned process) -------------------------------------------------------------

_DATA_OPS = (
    "all_reduce",
    "all_gather",
    "all_gather_into_tensor",
    "all_gather_object",
    "broadcast",
    "broadcast_object_list",
    "reduce",
    "gather",
    "gather_object",
    "scatter",
    "scatter_object_list",
    "all_to_all",
    "all_to_all_single",
    "reduce_scatter",
    "reduce_scatter_tensor",
    "send",
    "recv",
    "isend",
    "irecv",
)


@contextmanager
def _record_traffic(log: list[tuple[str, str, tuple[int, ...]]]):
    """Record every data-moving collective called through torch.distributed: (op, dtype, shape)."""
    import torch.distributed as dist

    saved = {name: getattr(dist, name) for name in _DATA_OPS if hasattr(dist, name)}

    def wrap(name, fn):
        def recorded(*args, **kwargs):
            payload = args[1] if name == "all_gather" else (args[0] if args else None)
            if isinstance(payload, torch.Tensor):
                log.append((name, str(payload.dtype), tuple(payload.shape)))
            else:
                log.append((name, type(payload).__name__, ()))
            return fn(*args, **kwargs)

        return recorded

    for name, fn in saved.items():
        setattr(dist, name, wrap(name, fn))
    try:
        yield
    finally:
        for name, fn in saved.items():
            setattr(dist, name, fn)


def _tensors(result: dict) -> dict:
    return {k: v.detach().cpu().clone() for k, v in result.items() if isinstance(v, torch.Tensor)}


def _run_checks(rank: int, plan: dict) -> dict:
    import torch.distributed as dist
    from torch.utils.data import DistributedSampler

    metric = BERTScore(PACKAGED_MINILM, idf=True)
    emb = metric.embedder
    out: dict = {}

    # 1. uneven shards, several references, IDF
    main = plan["main"]
    mine = main["shards"][rank]
    cuts = [0]
    for size in main["chunks"][rank]:
        cuts.append(cuts[-1] + size)
    cuts.append(len(mine))
    for lo, hi in pairwise(cuts):
        metric.update([main["cands"][i] for i in mine[lo:hi]], [main["targets"][i] for i in mine[lo:hi]])
    before = emb.rows_embedded
    traffic: list = []
    with _record_traffic(traffic):
        out["main"] = _tensors(metric.compute())
    out["main_rows"] = emb.rows_embedded - before
    out["main_traffic"] = traffic
    out["main_local_pairs"] = len(mine)
    metric.reset()

    # 2. a rank with no pairs at all (rank 0 here): it still joins the IDF all-reduce and the gathers
    if rank == 1:
        metric.update(plan["empty"]["cands"], plan["empty"]["targets"])
    before = emb.rows_embedded
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*was called before the ``update`` method")  # rank 0 by design
        out["empty"] = _tensors(metric.compute())
    out["empty_rows"] = emb.rows_embedded - before
    metric.reset()

    # 3. DistributedSampler pads with repeats; indexes make the result the dataset's, in dataset order
    idx = plan["indexed"]
    sampler = DistributedSampler(
        range(len(idx["cands"])), num_replicas=WORLD, rank=rank, shuffle=True, seed=idx["seed"]
    )
    drawn = list(sampler)
    for lo in range(0, len(drawn), idx["batch"]):
        batch = drawn[lo : lo + idx["batch"]]
        metric.update([idx["cands"][i] for i in batch], [idx["targets"][i] for i in batch], indexes=torch.tensor(batch))
    out["indexed"] = _tensors(metric.compute())
    out["indexed_drawn"] = drawn
    metric.reset()

    # 4. per-pair context: kept with the pairs in each rank's state; IDF counts the references alone
    ctx = plan["context"]
    mine = ctx["shards"][rank]
    metric.update(
        [ctx["cands"][i] for i in mine], [ctx["targets"][i] for i in mine], context=[ctx["context"][i] for i in mine]
    )
    out["context"] = _tensors(metric.compute())
    out["context_hash"] = metric.hash_code  # every rank's pairs had contexts: the code names them on each rank
    metric.reset()

    # 5. torchmetrics' own options keep their meaning: dist_sync_fn gathers, sync_on_compute=False and forward()
    # score this process's pairs alone
    pick = [main["cands"][i] for i in main["shards"][rank]][:4], [main["targets"][i] for i in main["shards"][rank]][:4]
    _GATHERED.clear()
    gathering = BERTScore(PACKAGED_MINILM, idf=True, dist_sync_fn=_counted_gather)
    gathering.update(*pick)
    out["own_gather"] = (_tensors(gathering.compute()), len(_GATHERED))
    alone = BERTScore(PACKAGED_MINILM, idf=True, sync_on_compute=False)
    alone.update(*pick)
    out["alone"] = _tensors(alone.compute())
    out["forward"] = _tensors(metric(*pick))
    out["pick"] = pick
    dist.barrier()
    return out


_GATHERED: list[tuple[int, ...]] = []


def _counted_gather(tensor: torch.Tensor, group=None) -> list[torch.Tensor]:  # a user's dist_sync_fn
    from torchmetrics.utilities.distributed import gather_all_tensors

    _GATHERED.append(tuple(tensor.shape))
    return gather_all_tensors(tensor, group=group)


def _worker(rank: int, port: int, plan: dict, out_dir: str) -> None:
    with process_group(rank, port, WORLD, timeout_s=COLLECTIVE_TIMEOUT_S):
        save_rank(out_dir, rank, _run_checks(rank, plan))


# -- fixtures: run the workers once; reference and single-process values once -----------------------------


@pytest.fixture(scope="module")
def plan(wmt) -> dict:
    return _plan(wmt)


@pytest.fixture(scope="module")
def ranks(plan) -> list[dict]:
    return run_ranks(_worker, plan, world=WORLD, timeout_s=TIMEOUT_S)


@pytest.fixture(scope="module")
def single():
    """One process, one metric (no process group): the same pairs scored locally."""
    return BERTScore(PACKAGED_MINILM, idf=True)


def _close(actual: torch.Tensor, expected: torch.Tensor) -> None:
    assert actual.shape == expected.shape
    torch.testing.assert_close(actual.double(), expected.double(), atol=TOL, rtol=0)


def _check_all(result: dict, p, r, f) -> None:
    _close(result["precision"], p)
    _close(result["recall"], r)
    _close(result["f1"], f)


# -- the tests ---------------------------------------------------------------------------------------------


def test_every_rank_gets_the_same_full_result(ranks):
    for name in ("main", "empty", "indexed"):
        for key in ("precision", "recall", "f1"):
            assert torch.equal(ranks[0][name][key], ranks[1][name][key]), (name, key)


def test_uneven_shards_equal_reference_in_rank_major_order(ranks, plan, reference_score):
    cands, targets = _rank_major(plan)
    assert ranks[0]["main"]["f1"].shape == (len(cands),)
    _check_all(ranks[0]["main"], *reference_score(cands, targets, idf=True))


def test_uneven_shards_equal_one_process(ranks, plan, single):
    cands, targets = _rank_major(plan)
    single.reset()
    single.update(cands, targets)
    result = single.compute()
    for key in ("precision", "recall", "f1"):
        _close(ranks[1]["main"][key], result[key])


def test_each_rank_embeds_only_its_share(ranks, plan, single):
    def distinct(cands: list[str], targets: list) -> int:
        """How many distinct token sequences the pairs hold: what one process embeds for them."""
        texts = set(cands) | {r for group in targets for r in ([group] if isinstance(group, str) else group)}
        return len({tuple(single.tokenizer(t.strip())["input_ids"]) for t in texts})

    main = plan["main"]
    everything = distinct(main["cands"], main["targets"])
    for rank in range(WORLD):
        mine = main["shards"][rank]
        # each distinct text of its own pairs once, never another rank's
        assert ranks[rank]["main_rows"] == distinct(
            [main["cands"][i] for i in mine], [main["targets"][i] for i in mine]
        )
        assert ranks[rank]["main_rows"] < everything
    assert ranks[0]["empty_rows"] == 0  # the rank without pairs runs nothing through the model
    assert ranks[1]["empty_rows"] == distinct(plan["empty"]["cands"], plan["empty"]["targets"])


def test_only_counts_and_per_pair_results_cross_ranks(ranks, single):
    vocab = single.doc_freq.numel()
    n_max = max(r["main_local_pairs"] for r in ranks)
    for rank in ranks:
        traffic = rank["main_traffic"]
        ops = {op for op, _, _ in traffic}
        assert ops <= {"all_gather", "all_reduce"}, ops
        reduces = [(dtype, shape) for op, dtype, shape in traffic if op == "all_reduce"]
        # the IDF document counts and the reference count, once each
        expected = [("torch.int64", ()), ("torch.int64", (vocab,))]
        assert sorted(reduces, key=lambda x: len(x[1])) == expected
        for op, dtype, shape in traffic:
            if op != "all_gather":
                continue
            if dtype == "torch.float32":  # per-pair P, R, F and best reference (padded to the longest shard)
                assert len(shape) == 3 and shape[0] <= n_max and shape[1:] == (1, 4), shape
            else:  # settings digest, shapes, pair, index and context counts, dataset indexes (none here): never token
                # ids or embeddings
                assert dtype == "torch.int64" and len(shape) <= 1 and (not shape or shape[0] <= 3), (dtype, shape)


def test_rank_without_pairs(ranks, plan, single):
    # the IDF of the seven pairs of rank 1 alone; one process's scores equal the reference (tested above)
    single.reset()
    single.update(plan["empty"]["cands"], plan["empty"]["targets"])
    expected = single.compute()
    for key in ("precision", "recall", "f1"):
        _close(ranks[0]["empty"][key], expected[key])


def test_indexes_drop_sampler_repeats_and_order_by_index(ranks, plan, reference_score):
    idx = plan["indexed"]
    drawn = ranks[0]["indexed_drawn"] + ranks[1]["indexed_drawn"]
    assert len(drawn) > len(idx["cands"]) and sorted(set(drawn)) == list(range(len(idx["cands"])))
    assert drawn != sorted(drawn)  # shuffled: the order comes from the indexes
    # exact with IDF: the repeated pair's references are not counted twice
    _check_all(ranks[0]["indexed"], *reference_score(idx["cands"], idx["targets"], idf=True))


def test_context_across_ranks_equals_one_process(ranks, plan, single):
    ctx = plan["context"]
    order = [i for shard in ctx["shards"] for i in shard]  # rank-major
    pick = lambda key: [ctx[key][i] for i in order]  # noqa: E731
    single.reset()
    single.update(pick("cands"), pick("targets"), context=pick("context"))
    expected = single.compute()
    single.reset()
    single.update(pick("cands"), pick("targets"))
    without = single.compute()
    single.reset()
    for rank in ranks:
        _check_all(rank["context"], expected["precision"], expected["recall"], expected["f1"])
    assert (expected["f1"] - without["f1"]).abs().max() > 1e-3  # the context did shape the vectors


def test_torchmetrics_options_keep_their_meaning(ranks, single):
    """`dist_sync_fn` makes every gather of compute(); `sync_on_compute=False` and forward() score this
    process's pairs alone, as one process scores them."""
    both = ranks[0]["pick"][0] + ranks[1]["pick"][0], ranks[0]["pick"][1] + ranks[1]["pick"][1]
    single.reset()
    single.update(*both)
    together = single.compute()
    for rank in ranks:
        scores, gathers = rank["own_gather"]
        assert gathers >= 3  # the settings digest, the counts, the indexes, the scores: all through it
        _check_all(scores, together["precision"], together["recall"], together["f1"])
        single.reset()
        single.update(*rank["pick"])
        alone = single.compute()
        for name in ("alone", "forward"):
            _check_all(rank[name], alone["precision"], alone["recall"], alone["f1"])
        assert rank["context_hash"].endswith("_context")
    single.reset()
