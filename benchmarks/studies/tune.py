"""Layer tuning: `bertscore-tm tune-layers` on the WMT17 judgements (the whole command in this process, its model
loading included) or `tune_layers` itself (`--way library`), against the bare forward pass of their distinct texts
through every layer (tokenised once, batches of one length, the model loaded once), taking turns; then the
tuning's parts, each timed once: reading, the one all-layers pass, the correlations without and with the bootstrap.

    python benchmarks/studies/tune.py                           # all 2,800 rows, 3 rounds
    python benchmarks/studies/tune.py --rows 40 --rounds 1 --bootstrap 20 --out /tmp/smoke
"""

from __future__ import annotations

import contextlib
import io
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import harness
import knobs

PARTS = (
    "read the file",
    "the all-layers pass",
    "correlations without the bootstrap",
    "correlations with the bootstrap",
)


def judgements(rows: int | None) -> Path:
    """The judgements' file, or its header and `rows` rows spread evenly over it (every language pair kept)."""
    if rows is None:
        return harness.WMT17
    header, *lines = harness.WMT17.read_text(encoding="utf-8").splitlines(keepends=True)
    out = Path(tempfile.mkdtemp(prefix="bench-tune.")) / f"judgements-{rows}.tsv"
    out.write_text(header + "".join(lines[:: max(1, len(lines) // rows)][:rows]), encoding="utf-8")
    return out


def configure(name: str, p: dict) -> harness.Runner:
    from bertscore_tm.tuning import tune_from_scores, tune_layers

    data, model = judgements(p["rows"]), p["model"]
    rows = harness.read_judgements(data)
    if name == "bare":
        return harness.bare_runner(knobs.model_path(model), 0, rows.candidates + rows.references)
    if name == "tune-layers":
        argv = ["tune-layers", "--data", str(data), "--group-by", "lp", "--system-column", "system", "-m", model]
        argv += ["--bootstrap", str(p["bootstrap"]), "--format", "json", "--no-progress"]

        def command() -> dict:
            with contextlib.redirect_stdout(io.StringIO()):
                if knobs.cli(argv) != 0:
                    raise SystemExit("tune-layers failed")
            return {}

        def library() -> dict:
            return {
                "best_layer": tune_layers(harness.read_judgements(data), model, bootstrap=p["bootstrap"]).best_layer
            }

        return command if p["way"] == "cli" else library
    scores = knobs.score_all_layers(rows, model) if name.startswith("correlations") else None
    return {
        PARTS[0]: lambda: {"rows": len(harness.read_judgements(data))},
        PARTS[1]: lambda: {"depth": knobs.score_all_layers(rows, model).depth},
        PARTS[2]: lambda: (tune_from_scores(rows, scores, bootstrap=0), {})[1],
        PARTS[3]: lambda: (tune_from_scores(rows, scores, bootstrap=p["bootstrap"]), {})[1],
    }[name]


def run(args: Any) -> dict:
    p = {"rows": args.rows, "model": args.model, "bootstrap": args.bootstrap, "way": args.way, "threads": args.threads}
    module = harness.module_name(__file__)
    timing = harness.timed_apart(module, ["bare", "tune-layers"], p, args.rounds)
    rows = [harness.row("tuning", k, p, timing, "bare") for k in ("bare", "tune-layers")]
    for part in PARTS:  # each part alone in its process, its inputs made before its timing
        rows.append(harness.row("where the time goes", part, p, harness.timed_apart(module, [part], p, 1), None))
    check = harness.check("the tuning at most 1.15x the bare pass through every layer", rows[1]["ratio"], 1.15)
    return {
        "suite": "tune",
        "title": "Layer tuning against the bare pass through every layer",
        "rows": rows,
        "checks": [check],
    }


ARGUMENTS = (
    (("--rows",), dict(type=int, default=None, help="a slice of this many judgements (default: all)")),
    (("--model",), dict(default=harness.MINILM)),
    (("--rounds",), dict(type=int, default=3)),
    (("--bootstrap",), dict(type=int, default=1000)),
    (("--way",), dict(choices=("cli", "library"), default="cli")),
)

if __name__ == "__main__":
    sys.exit(harness.main(__doc__, ARGUMENTS, run))
