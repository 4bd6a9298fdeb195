"""Ranks set up differently fail on every rank with SettingsMismatchError naming the difference, at once,
never hanging (different `idf` settings used to hang until the process group's timeout: the IDF counts had
different shapes); a rank with no pairs computes without a warning.

Two gloo processes run every case in turn, in one process group (after a mismatch the group is still in step,
so the next case runs in it); each rank records what it saw and the tests compare.
"""

from __future__ import annotations

import tempfile
import time
import warnings
from pathlib import Path

import pytest
import torch

from bertscore_tm import PACKAGED_MINILM, BERTScore
from tests.spawn import process_group, run_ranks, save_rank

WORLD = 2
COLLECTIVE_TIMEOUT_S = 30  # a hang fails in 30 s, not the default 30 minutes
TIMEOUT_S = 180

PAIRS = (["The cat sat on the mat.", "It rained."], ["A cat was sitting on the mat.", "It was raining."])
#: case -> (rank 0's arguments, rank 1's arguments, the setting that must be named)
MISMATCHES = {
    "idf": ({"idf": False}, {"idf": True}, "idf"),
    "layer": ({"num_layers": 4}, {"num_layers": 5}, "num_layers"),
    "rescaling": ({"rescale_with_baseline": True}, {}, "rescaled"),
    "all_layers": ({"all_layers": True}, {}, "all_layers"),
    "max_length": ({"max_length": 8}, {}, "max_length"),
    "baseline values": (
        {"rescale_with_baseline": True, "baseline_path": "{b1}"},
        {"rescale_with_baseline": True, "baseline_path": "{b2}"},
        "baseline",
    ),
}


def _arguments(arguments: dict, files: dict) -> dict:
    return {k: (v.format(**files) if isinstance(v, str) else v) for k, v in arguments.items()}


def _run_cases(rank: int, files: dict) -> dict:
    out: dict = {}
    for case, (first, second, _) in MISMATCHES.items():
        metric = BERTScore(PACKAGED_MINILM, **_arguments(first if rank == 0 else second, files))
        metric.update(*PAIRS)
        start = time.monotonic()
        try:
            metric.compute()
            out[case] = ("no error",)
        except Exception as err:  # recorded for the test to judge
            out[case] = (type(err).__name__, getattr(err, "setting", None), getattr(err, "values", None), str(err))
        out[case + " seconds"] = time.monotonic() - start
    # a rank without pairs (rank 0) computes the other's pairs without a warning
    metric = BERTScore(PACKAGED_MINILM, idf=True)
    if rank == 1:
        metric.update(*PAIRS)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        out["empty"] = metric.compute()["f1"].clone()
    out["empty warnings"] = [str(w.message) for w in seen]
    torch.distributed.barrier()
    return out


def _worker(rank: int, port: int, files: dict, out_dir: str) -> None:
    with process_group(rank, port, WORLD, timeout_s=COLLECTIVE_TIMEOUT_S):
        save_rank(out_dir, rank, _run_cases(rank, files))


@pytest.fixture(scope="module")
def ranks() -> list[dict]:
    with tempfile.TemporaryDirectory() as tmp:
        files = {}
        for name, value in (("b1", 0.5), ("b2", 0.6)):
            path = Path(tmp) / f"{name}.tsv"
            path.write_text("LAYER,P,R,F\n" + "".join(f"{n},{value},{value},{value}\n" for n in range(7)))
            files[name] = str(path)
        return run_ranks(_worker, files, world=WORLD, timeout_s=TIMEOUT_S)


@pytest.mark.parametrize("case", list(MISMATCHES))
def test_different_settings_fail_on_every_rank_naming_the_difference(ranks, case):
    setting = MISMATCHES[case][2]
    for rank in ranks:
        kind, named, values, message = rank[case]
        assert kind == "SettingsMismatchError", rank[case]
        assert named == setting, message
        assert f"{setting} is" in message and "on rank 0" in message and "on rank 1" in message
        assert len(values) == WORLD and values[0] != values[1]
        assert rank[case + " seconds"] < 20  # at once: no collective waited for its timeout


def test_a_rank_without_pairs_does_not_warn(ranks):
    assert ranks[0]["empty warnings"] == [] and ranks[1]["empty warnings"] == []
    assert torch.equal(ranks[0]["empty"], ranks[1]["empty"]) and ranks[0]["empty"].shape == (2,)
