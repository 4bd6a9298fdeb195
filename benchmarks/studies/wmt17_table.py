"""The per-layer correlation table of docs/tuning.md: BERTScore F1 of the packaged MiniLM at every layer, beside
sentence BLEU and chrF, against the 2,800 WMT17 segment-level direct assessments to English. Prints markdown for
docs/tuning.md (it times nothing).

Every figure is the Pearson correlation of a metric's segment scores with the human (z-scored DA) scores within
each language pair, and their unweighted average, as the WMT17 metrics task reports segment-level DA; the
average's 95% interval is the percentile bootstrap over resamples drawn within the language pairs, the same
resamples for every row, so that the paired tests below the table compare rows on the same draws. BERTScore comes
from one all-layers pass; sentence BLEU and chrF from sacrebleu's defaults (a test and docs tool here, not a
dependency: ``pip install sacrebleu``).

    python benchmarks/studies/wmt17_table.py                 # all rows, 1000 resamples, seed 0
    python benchmarks/studies/wmt17_table.py --rows 200      # a quick look on a slice
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import harness
import knobs


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


def tables(rows, columns: dict[str, np.ndarray], boot, best: str, against: list[str]) -> list[str]:
    """Pearson per language pair, the average and its interval; the averages of the three methods; the tests."""
    corr = knobs.correlation()
    pairs = list(dict.fromkeys(rows.groups))
    lines = [
        "| metric | " + " | ".join(pairs) + " | average | 95% interval |",
        "| --- | " + "---: | " * (len(pairs) + 2),
    ]
    for name, values in columns.items():
        result = corr.grouped_correlation(values, rows.human, rows.groups, "pearson")
        low, high = boot.interval(values, "pearson", 0.95)
        cells = " | ".join(f"{result.groups[p]:.3f}" for p in pairs)
        lines.append(f"| {name} | {cells} | {result.mean:.3f} | [{low:.3f}, {high:.3f}] |")
    lines += ["", "| metric | Pearson | Spearman | Kendall tau-b |", "| --- | ---: | ---: | ---: |"]
    for name, values in columns.items():
        means = [corr.grouped_correlation(values, rows.human, rows.groups, m).mean for m in corr.METHODS]
        lines.append(f"| {name} | " + " | ".join(f"{m:.3f}" for m in means) + " |")
    lines.append("")
    for other in against:
        test = boot.paired_test(columns[other], columns[best], "pearson")
        low, high = test.interval
        lines.append(
            f"- {best} against {other}: difference of the averaged Pearson r {test.difference:+.3f} (95% interval "
            f"[{low:+.3f}, {high:+.3f}]), one-sided p = {test.p_value:.4f} "
            f"({'significant' if test.significant else 'not significant'} "
            f"at 0.05, {test.num_samples} resamples)"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=harness.WMT17)
    parser.add_argument("--rows", type=int, default=None, help="a slice of this many rows (default: all)")
    parser.add_argument("--model", default=harness.MINILM)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--bootstrap", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    rows = harness.read_judgements(args.data)
    if args.rows is not None:
        rows = rows.select(list(range(0, len(rows), max(1, len(rows) // args.rows)))[: args.rows])
    scores, default = knobs.score_all_layers(rows, args.model), knobs.default_layers(args.model)
    columns = {
        f"BERTScore F1, layer {k}{' (default)' if k == default else ''}": scores.f1[k] for k in range(scores.depth + 1)
    }
    columns.update(sentence_metrics(rows.candidates, rows.references))
    boot = knobs.correlation().GroupedBootstrap(rows.human, rows.groups, args.bootstrap, args.seed)
    names = list(columns)
    best = names[int(np.argmax([boot.estimate(scores.f1[k], "pearson").mean for k in range(scores.depth + 1)]))]
    print(f"Computed by `{' '.join(['python', 'benchmarks/studies/wmt17_table.py', *sys.argv[1:]])}`:")
    print(
        f"{len(rows)} judgements, model {args.model}, F1 without IDF, {args.bootstrap} resamples, seed {args.seed}.\n"
    )
    print("\n".join(tables(rows, columns, boot, best, [names[default], names[-2], names[-1]])))


if __name__ == "__main__":
    main()
