"""The per-layer correlation table of docs/tuning.md: BERTScore F1 of the packaged MiniLM at every layer, beside
sentence BLEU and chrF, against the 2,800 WMT17 segment-level direct assessments to English.

    python benchmarks/wmt17_table.py                 # all rows, 1000 resamples, seed 0
    python benchmarks/wmt17_table.py --rows 200      # a quick look on a slice

Every figure is the Pearson correlation of a metric's segment scores with the human (z-scored DA) scores within
each language pair, and their unweighted average, as the WMT17 metrics task reports segment-level DA
(`bertscore_tm.tuning.correlation`); the average's 95% interval is the percentile bootstrap over 1000 resamples drawn
within the language pairs, the same resamples for every row (`GroupedBootstrap`, seed 0), so that the paired
tests below the table compare rows on the same draws. BERTScore comes from one all-layers pass
(`bertscore_tm.tuning.layer_tuning.score_all_layers`); sentence BLEU and chrF from sacrebleu's `sentence_bleu` and
`sentence_chrf` with their defaults (BLEU with exponential smoothing and effective order, chrF with character
6-grams and beta 2). sacrebleu is a test and docs tool here, not a dependency: ``pip install sacrebleu``.
Prints markdown for docs/tuning.md.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "tests" / "data" / "wmt17-da" / "da-seglevel-toen.tsv"
MINILM = "sentence-transformers/all-MiniLM-L6-v2"


def sentence_metrics(candidates: list[str], references: list[str]) -> dict[str, np.ndarray]:
    """Sentence BLEU and chrF of every pair (sacrebleu's defaults)."""
    try:
        import sacrebleu
    except ImportError:
        raise SystemExit("this table needs sacrebleu: pip install sacrebleu") from None
    pairs = list(zip(candidates, references, strict=True))
    return {
        f"sentence BLEU (sacrebleu {sacrebleu.__version__})": np.array(
            [sacrebleu.sentence_bleu(c, [r]).score for c, r in pairs]
        ),
        "chrF (sacrebleu)": np.array([sacrebleu.sentence_chrf(c, [r]).score for c, r in pairs]),
    }


def table(rows, columns: dict[str, np.ndarray], boot) -> list[str]:
    """One markdown row per metric column: Pearson per language pair, the average and its interval."""
    from bertscore_tm.tuning.correlation import grouped_correlation

    pairs = list(dict.fromkeys(rows.groups))
    lines = [
        "| metric | " + " | ".join(pairs) + " | average | 95% interval |",
        "| --- | " + " | ".join("---:" for _ in pairs) + " | ---: | ---: |",
    ]
    for name, values in columns.items():
        result = grouped_correlation(values, rows.human, rows.groups, "pearson")
        low, high = boot.interval(values, "pearson", 0.95)
        cells = " | ".join(f"{result.groups[p]:.3f}" for p in pairs)
        lines.append(f"| {name} | {cells} | {result.mean:.3f} | [{low:.3f}, {high:.3f}] |")
    return lines


def other_methods(rows, columns: dict[str, np.ndarray]) -> list[str]:
    """The averages of Spearman's rho and Kendall's tau-b, for the same columns (no intervals)."""
    from bertscore_tm.tuning.correlation import METHODS, grouped_correlation

    lines = ["| metric | Pearson | Spearman | Kendall tau-b |", "| --- | ---: | ---: | ---: |"]
    for name, values in columns.items():
        means = [grouped_correlation(values, rows.human, rows.groups, m).mean for m in METHODS]
        lines.append(f"| {name} | " + " | ".join(f"{m:.3f}" for m in means) + " |")
    return lines


def tests(columns: dict[str, np.ndarray], boot, best: str, against: list[str]) -> list[str]:
    lines = []
    for other in against:
        test = boot.paired_test(columns[other], columns[best], "pearson")
        low, high = test.interval
        lines.append(
            f"- {best} against {other}: difference of the averaged Pearson r {test.difference:+.3f} "
            f"(95% interval [{low:+.3f}, {high:+.3f}]), one-sided p = {test.p_value:.4f} "
            f"({'significant' if test.significant else 'not significant'} at 0.05, {test.num_samples} resamples)"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--rows", type=int, default=None, help="a slice of this many rows (default: all)")
    parser.add_argument("--model", default=MINILM)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--bootstrap", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch

    torch.set_num_threads(args.threads)
    from bertscore_tm.models.registry import default_num_layers
    from bertscore_tm.tuning.correlation import GroupedBootstrap
    from bertscore_tm.tuning.layer_tuning import read_judgements, score_all_layers

    rows = read_judgements(args.data, group="lp", system="system")
    if args.rows is not None:
        rows = rows.select(list(range(0, len(rows), max(1, len(rows) // args.rows)))[: args.rows])
    scores = score_all_layers(rows, args.model)
    default = default_num_layers(args.model)
    columns = {
        f"BERTScore F1, layer {k}{' (default)' if k == default else ''}": scores.f1[k] for k in range(scores.depth + 1)
    }
    columns.update(sentence_metrics(rows.candidates, rows.references))
    boot = GroupedBootstrap(rows.human, rows.groups, args.bootstrap, args.seed)
    names = list(columns)
    layer_means = [boot.estimate(scores.f1[k], "pearson").mean for k in range(scores.depth + 1)]
    best = names[int(np.argmax(layer_means))]
    command = " ".join(["python", f"benchmarks/{Path(__file__).name}", *sys.argv[1:]])
    print(f"Computed by `{command}`:")
    print(f"{len(rows)} judgements, model {args.model}, F1 without IDF, {args.bootstrap} resamples, seed {args.seed}.")
    print()
    print("\n".join(table(rows, columns, boot)))
    print()
    print("\n".join(other_methods(rows, columns)))
    print()
    print("\n".join(tests(columns, boot, best, [names[default], names[-2], names[-1]])))


if __name__ == "__main__":
    main()
