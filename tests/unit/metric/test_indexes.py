"""Index de-duplication is a pure function of the gathered indexes: tested here without any process group,
on the indexes a real `DistributedSampler` draws for each rank."""

from __future__ import annotations

import torch
from torch.utils.data import DistributedSampler

from bertscore_tm.metric.indexes import conflicting_indexes, deduplicate


def _drawn(size: int, world: int, seed: int) -> list[list[int]]:
    return [
        list(DistributedSampler(range(size), num_replicas=world, rank=r, shuffle=True, seed=seed)) for r in range(world)
    ]


def test_every_index_is_kept_once_in_index_order_and_the_repeats_are_dropped_where_they_are():
    for size, world in ((23, 2), (10, 3), (7, 4), (8, 2)):
        per_rank = _drawn(size, world, seed=size)
        gathered = torch.tensor([i for shard in per_rank for i in shard])
        offset = 0
        dropped = []
        for shard in per_rank:
            result = deduplicate(gathered, offset, len(shard))
            assert gathered[result.keep].tolist() == list(range(size))  # each index once, ordered
            dropped += result.dropped.tolist()
            offset += len(shard)
        # a pair is dropped exactly when an earlier pair (rank-major) has its index
        seen: set[int] = set()
        for index, was_dropped in zip(gathered.tolist(), dropped, strict=True):
            assert was_dropped == (index in seen)
            seen.add(index)
        assert sum(dropped) == len(gathered) - size


def test_the_first_pair_of_an_index_wins_in_rank_major_order():
    result = deduplicate(torch.tensor([5, 5, 1, 5]), offset=0, num_local=4)
    assert result.keep.tolist() == [2, 0]
    assert result.dropped.tolist() == [False, True, False, True]


def test_no_repeats_only_reorders():
    result = deduplicate(torch.tensor([3, 1, 2, 0]), offset=2, num_local=2)
    assert result.keep.tolist() == [3, 1, 2, 0]
    assert result.dropped.tolist() == [False, False]


def test_a_repeat_scoring_exactly_as_the_pair_kept_is_no_conflict_but_another_score_is():
    # rank-major: rank 0 holds indexes 0, 1, 2; rank 1 holds 3 and pads with 0 and 1, the same pairs as rank
    # 0's (the same scores, to the last bit on a CPU, within SAME_PAIR_ATOL anywhere) or, under index 1, another
    # pair
    indexes = torch.tensor([0, 1, 2, 3, 0, 1])
    keep = deduplicate(indexes, offset=3, num_local=3).keep
    assert keep.tolist() == [0, 1, 2, 3]  # the first pair of each index
    same = torch.tensor([0.5, 0.6, 0.7, 0.8, 0.5, 0.6])[:, None, None].expand(6, 1, 3)
    assert conflicting_indexes(indexes, keep, same).tolist() == []
    rounded = same.clone()
    rounded[4] += 1e-5  # index 0's repeat, rounded otherwise (an accelerator's kernels): still the same pair
    assert conflicting_indexes(indexes, keep, rounded).tolist() == []
    other = same.clone()
    other[5, 0, 1] = 0.61  # its recall alone differs
    assert conflicting_indexes(indexes, keep, other).tolist() == [1]


def test_undefined_scores_repeated_are_the_same_pair():
    nan = float("nan")
    scores = torch.tensor([[[nan, 0.5, nan]], [[nan, 0.5, nan]]])
    assert conflicting_indexes(torch.tensor([7, 7]), torch.tensor([0]), scores).tolist() == []
