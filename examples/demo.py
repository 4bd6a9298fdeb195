"""Score the example files with the packaged MiniLM: P, R, F1 per pair, raw and rescaled, and the hash code."""

from pathlib import Path

from bertscore_tm import PACKAGED_MINILM, BERTScore

HERE = Path(__file__).resolve().parent
KEYS = ("precision", "recall", "f1")


def show(title: str, metric: BERTScore, cands: list[str], refs: list[str]) -> None:
    metric.update(cands, refs)
    result = metric.compute()
    print(f"{title}\n   P        R        F1      candidate")
    for cand, p, r, f in zip(cands, *(result[k] for k in KEYS), strict=True):
        print(f"{p:9.6f} {r:9.6f} {f:9.6f}  {cand}")
    p, r, f = (float(result[k].mean()) for k in KEYS)
    print(f"{result['hash']} P: {p:.6f} R: {r:.6f} F1: {f:.6f}\n")


def main() -> None:
    cands = (HERE / "cands.txt").read_text(encoding="utf-8").splitlines()
    refs = (HERE / "refs.txt").read_text(encoding="utf-8").splitlines()
    raw = BERTScore(PACKAGED_MINILM, return_hash=True)
    print(f"model {PACKAGED_MINILM}, layer {raw.num_layers}, {len(cands)} pairs\n")
    show("Raw scores", raw, cands, refs)
    rescaled = BERTScore(PACKAGED_MINILM, lang="en", rescale_with_baseline=True, return_hash=True)
    show("Rescaled with the packaged baseline (unrelated sentences score about 0)", rescaled, cands, refs)


if __name__ == "__main__":
    main()
