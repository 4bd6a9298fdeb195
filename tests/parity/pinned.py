"""Scores of today's code, pinned across settings, so that restructuring the package cannot move them.

`python tests/parity/pinned.py` records them into `tests/data/pinned_scores.json` (done once, before the scoring core
was restructured, from the code at 982c09c); `tests/parity/test_pinned.py` recomputes every case and compares to 1e-6.
Only public names are used, so the cases survive any move of the code behind them.
"""

from __future__ import annotations

import json
import os
import sys
import warnings
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch

REPO = Path(__file__).resolve().parents[2]
WMT = REPO / "tests" / "data" / "wmt"
PINNED = REPO / "tests" / "data" / "pinned_scores.json"
#: WMT pairs: the 10 short ones and 6 of the long file (lines 200-205); two references each for some cases.
N_LONG = slice(200, 206)


def _lines(name: str) -> list[str]:
    return (WMT / f"{name}.txt").read_text(encoding="utf-8").splitlines()


def _pairs() -> tuple[list[str], list[str], list[str]]:
    hyps = _lines("hyps") + _lines("hyps_long")[N_LONG]
    refs = _lines("refs") + _lines("refs_long")[N_LONG]
    refs2 = _lines("refs2") + _lines("refs")[:6]  # a second reference (another line's, for the long ones)
    return hyps, refs, refs2


def _model() -> str:
    return "sentence-transformers/all-MiniLM-L6-v2"  # the packaged MiniLM (bertscore_tm.PACKAGED_MINILM)


def _listed(scores: dict) -> dict[str, list]:
    return {k: torch.as_tensor(scores[k]).double().tolist() for k in ("precision", "recall", "f1")}


def _metric(cands: list[str], refs: list, **kwargs: object) -> dict[str, list]:
    from bertscore_tm import BERTScore

    metric = BERTScore(_model(), **kwargs)
    metric.update(cands, refs)
    return _listed(metric.compute())


def _cases() -> dict[str, Callable[[], dict]]:
    from bertscore_tm.engines import mbr_select, pairwise_bert_score
    from bertscore_tm.engines.functional import score

    hyps, refs, refs2 = _pairs()
    multi = [[a, b] for a, b in zip(refs, refs2, strict=True)]
    # long texts for windows: two WMT references joined into one text of about 150 tokens, window 64
    long_c = [" ".join(hyps[i : i + 4]) for i in range(0, 12, 4)]
    long_r = [" ".join(refs[i : i + 4]) for i in range(0, 12, 4)]
    return {
        "plain": lambda: _metric(hyps, refs),
        "idf": lambda: _metric(hyps, refs, idf=True),
        "idf_texts": lambda: _metric(hyps, refs, idf=True, idf_texts=refs2 + hyps),
        "rescaled": lambda: _metric(hyps, refs, rescale_with_baseline=True),
        "idf_rescaled": lambda: _metric(hyps, refs, idf=True, rescale_with_baseline=True),
        "all_layers": lambda: _metric(hyps, refs, all_layers=True),
        "all_layers_idf_rescaled": lambda: _metric(hyps, refs, all_layers=True, idf=True, rescale_with_baseline=True),
        "layer_2": lambda: _metric(hyps, refs, num_layers=2),
        "multi_refs": lambda: _metric(hyps, multi),
        "multi_refs_idf": lambda: _metric(hyps, multi, idf=True),
        "max_length_24": lambda: _metric(hyps, refs, max_length=24),
        "windows": lambda: _metric(long_c, long_r, max_length=64, long_texts="window"),
        "windows_idf": lambda: _metric(long_c, long_r, max_length=64, long_texts="window", window_stride=20, idf=True),
        "bfloat16": lambda: _metric(hyps, refs, model_dtype=torch.bfloat16),
        "score_fn": lambda: dict(
            zip(("precision", "recall", "f1"), (t.tolist() for t in score(hyps, refs, _model(), idf=True)), strict=True)
        ),
        "pairwise": lambda: _listed(pairwise_bert_score(hyps[:6], refs[:5], _model())),
        "pairwise_idf_rescaled": lambda: _listed(
            pairwise_bert_score(hyps[:6], refs[:5], _model(), idf=True, rescale_with_baseline=True)
        ),
        "mbr": lambda: _mbr(mbr_select, hyps),
        "mbr_idf": lambda: _mbr(mbr_select, hyps, idf=True),
    }


def _mbr(mbr_select: Callable, hyps: list[str], **kwargs: object) -> dict:
    groups = [hyps[0:5], hyps[5:11], hyps[11:16]]
    chosen, utilities = mbr_select(groups, model_name_or_path=_model(), return_utilities=True, **kwargs)
    return {"chosen": chosen, "utilities": [u.double().tolist() for u in utilities]}


def compute(name: str) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _cases()[name]()


def names() -> list[str]:
    return list(_cases())


if __name__ == "__main__":
    torch.set_num_threads(2)
    recorded = {name: compute(name) for name in names()}
    PINNED.write_text(json.dumps(recorded, indent=1) + "\n", encoding="utf-8")
    print(f"recorded {len(recorded)} cases into {PINNED}", file=sys.stderr)
