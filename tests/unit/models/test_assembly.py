"""A batch's ids assembled from its distinct texts' (`TextEncoder._compact`, `_assembled`): each text gets its
distinct text's ids and truncation flag, in order, checked against the plain per-text lists."""

from __future__ import annotations

import random

import torch

from bertscore_tm.models.tokenizing import TextEncoder


def test_each_text_gets_its_distinct_texts_ids_and_flag_in_order() -> None:
    rng = random.Random(0)
    for _ in range(200):
        distinct = [f"t{i}" for i in range(rng.randint(0, 6))]
        ids = {t: [rng.randrange(30_000) for _ in range(rng.randint(0, 5))] for t in distinct}
        cut = {t: rng.random() < 0.3 for t in distinct}
        stripped = distinct + [rng.choice(distinct) for _ in range(rng.randint(0, 8))] if distinct else []
        rng.shuffle(stripped)  # every distinct text, some again, in any order
        distinct = list(dict.fromkeys(stripped))  # as `_distinct` gives them: in order of first appearance
        compact = TextEncoder._compact([ids[t] for t in distinct], [cut[t] for t in distinct])
        flat, lens, flags = TextEncoder._assembled(stripped, distinct, *compact)
        assert flat.dtype == torch.int32 and lens.dtype == torch.int32 and flags.dtype == torch.bool
        assert flat.tolist() == [i for t in stripped for i in ids[t]]
        assert lens.tolist() == [len(ids[t]) for t in stripped]
        assert flags.tolist() == [cut[t] for t in stripped]
