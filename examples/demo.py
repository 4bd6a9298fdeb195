"""Score the example files with the packaged MiniLM and print P, R, F1 and the hash code."""

from pathlib import Path

from bertscore_tm import PACKAGED_MINILM, BERTScore

HERE = Path(__file__).resolve().parent


def main() -> None:
    cands = (HERE / "cands.txt").read_text(encoding="utf-8").splitlines()
    refs = (HERE / "refs.txt").read_text(encoding="utf-8").splitlines()
    metric = BERTScore(PACKAGED_MINILM, return_hash=True)
    metric.update(cands, refs)
    result = metric.compute()
    print(f"model {PACKAGED_MINILM}, layer {metric.num_layers}, {len(cands)} pairs\n")
    print("   P        R        F1      candidate")
    for cand, p, r, f in zip(cands, result["precision"], result["recall"], result["f1"]):
        print(f"{p:.6f} {r:.6f} {f:.6f}  {cand}")
    mean = {k: float(result[k].mean()) for k in ("precision", "recall", "f1")}
    print(f"\n{result['hash']} P: {mean['precision']:.6f} R: {mean['recall']:.6f} F1: {mean['f1']:.6f}")


if __name__ == "__main__":
    main()
