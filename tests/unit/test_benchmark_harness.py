"""The benchmarks' harness and renderer, their pure parts: the order configurations take turns in, medians and
ratios round by round, JSON rows, targets, padded batches, and JSON rows to RESULTS.md's rendered block (the
record below it untouched). And the rule that keeps the benchmarks adaptable: only `knobs.py` reaches into the
package's internals."""

from __future__ import annotations

import ast
import json
import math
import sys
from pathlib import Path

import pytest

import bertscore_tm

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import harness  # noqa: E402
import render  # noqa: E402


def test_turns_keep_one_order_or_reverse_it_every_other_round() -> None:
    assert harness.turns(["a", "b", "c"], 2) == [["a", "b", "c"], ["a", "b", "c"]]
    assert harness.turns(["a", "b"], 3, alternate=True) == [["a", "b"], ["b", "a"], ["a", "b"]]
    assert harness.turns(["a"], 0) == []


def test_interleave_runs_each_configuration_once_a_round_and_keeps_every_round_s_figures() -> None:
    calls: list[str] = []

    def runner(name: str):
        def run() -> dict:
            calls.append(name)
            return {"n": len(calls), "f1": [0.5], "note": name}

        return run

    timing = harness.interleave({"bare": runner("bare"), "ours": runner("ours")}, 3, alternate=True)
    assert calls == ["bare", "ours", "ours", "bare", "bare", "ours"]
    assert [len(timing["seconds"][k]) for k in ("bare", "ours")] == [3, 3]
    assert all(s >= 0 for s in timing["cpu_seconds"]["ours"])
    assert timing["results"]["ours"] == {"n": 6, "f1": [0.5], "note": "ours"}  # the last round's
    assert [f["n"] for f in timing["figures"]["bare"]] == [1, 4, 5]  # numbers and words, no lists
    assert "f1" not in timing["figures"]["bare"][0]


def test_median_and_per_item_ratios_round_by_round() -> None:
    assert harness.median([3.0, 1.0, 2.0]) == 2.0
    assert harness.median([4.0, 1.0, 2.0, 3.0]) == 2.5
    assert math.isnan(harness.median([]))
    # 100 items in 2 s against a base of 200 items in 2 s: twice the time per item
    assert harness.ratios([2.0, 3.0], [2.0, 6.0], items=100, base_items=200) == [2.0, 1.0]
    with pytest.raises(ValueError):
        harness.ratios([1.0], [1.0, 2.0])


def _timing() -> dict:
    return {
        "seconds": {"bare": [1.0, 2.0, 1.0], "fp32": [1.1, 2.4, 1.3]},
        "cpu_seconds": {"bare": [2.0, 2.0, 2.0], "fp32": [2.2, 2.2, 2.6]},
        "results": {"fp32": {"f1": [0.25, 0.5], "state_bytes_per_pair": 210.0, "kept": [1, 2], "label": "x"}},
    }


def test_a_row_holds_the_median_the_ratio_to_the_bare_pass_each_round_and_the_figures() -> None:
    got = harness.row("paired", "metric, float32", {"pairs": 2}, _timing(), "bare", 2, key="fp32", extra=1.5, none=None)
    assert got["seconds"] == [1.1, 2.4, 1.3] and got["median_s"] == 1.3
    assert got["ratio_rounds"] == [1.1, 1.2, 1.3] and got["ratio"] == 1.2 and got["base"] == "bare"
    assert got["cpu_ratio"] == 1.1
    assert got["checksum"] == 0.75
    assert got["figures"] == {"state_bytes_per_pair": 210.0, "label": "x", "extra": 1.5}  # no lists, no None
    bare = harness.row("paired", "bare", {}, _timing())
    assert "ratio" not in bare and bare["median_s"] == 1.0


def test_a_row_of_a_memory_run_takes_its_seconds_and_peaks() -> None:
    memory = {"seconds": 3.25, "rss_mib": 120.04, "tensor_mib": 33.06, "f1": [1.0], "tokens": 9}
    got = harness.row("scale", "1000 pairs", {}, memory=memory)
    assert got["median_s"] == 3.25 and got["memory"] == {"tensor_mib": 33.1, "rss_mib": 120.0}
    assert got["checksum"] == 1.0 and got["figures"] == {"tokens": 9}


def test_a_target_is_met_at_its_bound_and_not_measured_without_a_value() -> None:
    assert harness.check("at most", 1.10, 1.10)["met"] is True
    assert harness.check("at most", 1.11, 1.10)["met"] is False
    assert harness.check("at least", 0.9, 1.0, at_least=True)["met"] is False
    assert harness.check("skipped", None, 1.0)["met"] is None
    assert harness.check("nan", float("nan"), 1.0)["met"] is None


def test_padded_batches_sort_longest_first_within_the_budget() -> None:
    lengths = [3, 10, 5, 10, 2]
    batches = harness.padded_batches(lengths, budget=20)
    assert sorted(i for b in batches for i in b) == list(range(5))
    assert batches[0] == [1, 3]  # two texts of 10: 20 padded tokens
    for batch in batches:
        assert len(batch) * max(lengths[i] for i in batch) <= 20
        assert all(lengths[batch[0]] >= lengths[i] for i in batch)


def test_cells_are_formatted_for_a_table() -> None:
    assert render.fmt(None) == "-" and render.fmt(float("nan")) == "-"
    assert render.fmt(0.123456) == "0.1235" and render.fmt(123456.7) == "123,457" and render.fmt(12) == "12"
    assert render.fmt(True) == "yes" and render.fmt([1, 2.5]) == "1, 2.5" and render.fmt({"a": 1}) == "a 1"
    assert render.fmt("a|b") == "a\\|b"


def _results(key: str = "throughput") -> dict:
    rows = [
        harness.row("paired", "bare", {"pairs": 2, "dtype": "float32"}, _timing()),
        harness.row("paired", "metric, float32", {"pairs": 2, "dtype": "bf16"}, _timing(), "bare", 2, key="fp32"),
    ]
    env = {"date": "2026-12-01 10:00 UTC", "commit": "abc1234", "machine": "x86_64, a CPU", "cores": 2, "torch": "2.13"}
    checks = [harness.check("float32 at most 1.10x the bare pass", rows[1]["ratio"], 1.10)]
    return {"suite": "throughput", "key": key, "title": "Throughput", "command": "python bench.py", "environment": env,
            "notes": ["a note"], "rows": rows, "checks": checks}  # fmt: skip


def test_a_table_drops_empty_columns_and_shows_only_the_params_that_differ() -> None:
    lines = render.table(_results()["rows"])
    head = [c.strip() for c in lines[0].strip("|").split("|")]
    assert head[:3] == ["configuration", "params", "items"]
    assert "peak tensors MiB" not in head and "checksum" in head
    assert "dtype bf16" in lines[3] and "pairs" not in lines[3].split("|")[2]
    assert "1.200x (bare)" in lines[3] and "1.1, 1.2, 1.3" in lines[3]


def test_a_section_names_its_machine_commit_and_command_and_its_targets() -> None:
    text = render.section(_results())
    assert text.startswith("<!-- rendered: throughput -->\n## Throughput\n")
    assert "at commit abc1234 by `python bench.py`: x86_64, a CPU, 2 cores" in text
    assert "Params: pairs 2." in text and "- a note" in text
    assert "| float32 at most 1.10x the bare pass | 1.2 | 1.1 | NOT met |" in text
    assert text.endswith("<!-- rendered: throughput end -->")


def test_publishing_writes_the_json_and_renders_only_between_the_markers(tmp_path: Path) -> None:
    record = "## The record\n\nMeasured 2026-11-22: 1.09x.\n"
    (tmp_path / "RESULTS.md").write_text(f"# Results\n\n{render.BEGIN}\n{render.NOTHING}\n{render.END}\n\n{record}")
    render.publish(_results("scale") | {"suite": "scale", "title": "Scale"}, tmp_path)
    render.publish(_results(), tmp_path)
    assert json.loads((tmp_path / "results" / "throughput.json").read_text())["rows"][1]["ratio"] == 1.2
    text = (tmp_path / "RESULTS.md").read_text()
    assert text.startswith("# Results\n\n") and text.endswith(record) and render.NOTHING not in text
    assert text.index("## Throughput") < text.index("## Scale")  # the suites in their order
    render.render(tmp_path)  # again from the JSON alone: the same file
    assert (tmp_path / "RESULTS.md").read_text() == text


def test_rendering_into_a_missing_file_makes_one(tmp_path: Path) -> None:
    render.render(tmp_path)
    assert render.NOTHING in (tmp_path / "RESULTS.md").read_text()


#: attributes of the package's objects that only `knobs.py` may touch (besides any `_private` name)
INTERNAL = {"embedder", "scorer", "tokenise_ahead", "embedding_cache", "cand_ids", "cand_lens", "cand_best", "windows"}


#: the folders a user imports public names from (the root's moved names live there)
PUBLIC_FOLDERS = {f"bertscore_tm.{folder}" for folder in bertscore_tm.MOVED.values()}


@pytest.mark.parametrize("path", sorted(p for p in BENCHMARKS.rglob("*.py") if p.name != "knobs.py"), ids=str)
def test_only_knobs_reaches_into_the_package_s_internals(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("bertscore_tm."):
            public = node.module in PUBLIC_FOLDERS and not any(a.name.startswith("_") for a in node.names)
            assert public, f"{path.name}:{node.lineno} imports {node.module}"
        if isinstance(node, ast.Import):
            assert not any(a.name.startswith("bertscore_tm.") for a in node.names), f"{path.name}:{node.lineno}"
        if isinstance(node, ast.Attribute) and not (isinstance(node.value, ast.Name) and node.value.id == "self"):
            private = node.attr.startswith("_") and not node.attr.startswith("__")
            assert not private and node.attr not in INTERNAL, f"{path.name}:{node.lineno} reads .{node.attr}"
