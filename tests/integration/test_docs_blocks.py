"""Every ```python block of README.md and docs/ runs as pasted: a page's blocks in order, in one namespace, in a
process of their own, as a user with network would run them. Hub names the pages use are served by a stand-in for
the Hub (tests/hub_server.py) with tiny models of their depth, so the default layers exist; the files a page reads
are made here. A block that cannot run on this machine says why in a marker right before it:
``<!-- not run: a GPU cluster and S3 -->``."""

from __future__ import annotations

import csv
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from hub_server import REPO, HubServer, client_env
from tiny_models import build_tiny_model

FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<lang>[\w-]*)[^\n]*\n(?P<body>.*?)^(?P=indent)```[ \t]*$", re.M | re.S)
NOT_RUN = re.compile(r"<!--\s*not run:\s*(?P<why>[^>]*?)\s*-->\s*$")
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
#: Hub names the pages score with, and the depth of the stand-in that serves each (its default layer must exist).
SERVED = {"roberta-large": 24, "neulab/codebert-python": 12}


def python_blocks(page: Path) -> tuple[list[str], list[str]]:
    """The page's python blocks that run (dedented), and the reasons of those that do not."""
    text, run, skipped = page.read_text(encoding="utf-8"), [], []
    for block in FENCE.finditer(text):
        if block.group("lang") != "python":
            continue
        before = text[: block.start()].rstrip().splitlines()
        marker = NOT_RUN.search(before[-1]) if before else None
        if marker:
            skipped.append(marker.group("why"))
            continue
        cut = len(block.group("indent"))
        run.append("\n".join(line[cut:] for line in block.group("body").splitlines()))
    return run, skipped


def test_every_marker_gives_a_reason() -> None:
    for page in PAGES:
        assert all(why.strip() for why in python_blocks(page)[1]), page.name


def test_every_shell_block_runs_or_says_why_not() -> None:
    """Blocks of shell commands other than our own transcripts (pip, make) are not run here: each says why."""
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for block in FENCE.finditer(text):
            if block.group("lang") in ("bash", "sh", "shell"):
                before = text[: block.start()].rstrip().splitlines()
                assert before and NOT_RUN.search(before[-1]), f"{page.name}: {block.group('body')[:60]!r}"


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("served")
    with HubServer() as server:
        for name, depth in SERVED.items():
            server.publish(name, build_tiny_model("roberta", root, depth=depth))
        yield server, build_tiny_model("bert", root, depth=12)


def made_files(work: Path, encoder: Path) -> None:
    """What the pages read: judgements, relative rankings, a Parquet file of pairs, an encoder folder."""
    with open(REPO / "tests/data/wmt17-da/da-seglevel-toen.tsv", encoding="utf-8", newline="") as src:
        rows = list(csv.DictReader(src, delimiter="\t"))
    judged = [row for lp in ("cs-en", "de-en") for row in [r for r in rows if r["lp"] == lp][:12]]
    with open(work / "judged.tsv", "w", encoding="utf-8", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=list(rows[0]), delimiter="\t")
        writer.writeheader()
        writer.writerows(judged)
    with open(work / "darr.tsv", "w", encoding="utf-8", newline="") as out:
        out.write("lp\treference\tbetter\tworse\n")
        for a, b in zip(judged[::2], judged[1::2], strict=True):
            better, worse = (a, b) if float(a["human"]) >= float(b["human"]) else (b, a)
            out.write(f"{a['lp']}\t{a['reference']}\t{better['candidate']}\t{worse['candidate']}\n")
    import pyarrow as pa
    import pyarrow.parquet as pq

    pairs = {"candidate": [r["candidate"] for r in judged[:6]], "reference": [r["reference"] for r in judged[:6]]}
    pq.write_table(pa.table(pairs), work / "pairs.parquet")
    (work / "path/to").mkdir(parents=True)
    (work / "path/to/my-fine-tuned-encoder").symlink_to(encoder, target_is_directory=True)


@pytest.mark.parametrize("page", [p for p in PAGES if python_blocks(p)[0]], ids=lambda p: p.name)
def test_the_pages_python_runs_as_pasted(page: Path, hub, tmp_path: Path) -> None:
    server, encoder = hub
    work = tmp_path / "work"
    work.mkdir()
    made_files(work, encoder)
    code = "\n\n".join(python_blocks(page)[0])
    (work / "page.py").write_text(code, encoding="utf-8")
    env = client_env(server.url, tmp_path / "home")
    done = subprocess.run([sys.executable, "page.py"], cwd=work, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{page.name}:\n{done.stderr[-3000:]}"


# -- command-line transcripts: each `$ bertscore-tm ...` line run on the vendored WMT files, its output compared ----

WMT = REPO / "tests" / "data" / "wmt"
VERSION = re.compile(r"hug_trans=[\d.]+")


def transcripts() -> list[tuple[str, int, str]]:
    """(page, line, block) of every console block that is not marked as not run."""
    found = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for block in FENCE.finditer(text):
            before = text[: block.start()].rstrip().splitlines()
            if block.group("lang") == "console" and not (before and NOT_RUN.search(before[-1])):
                found.append((page.name, text[: block.start()].count("\n") + 1, block.group("body")))
    return found


def steps(block: str) -> list[tuple[str, list[str]]]:
    """A transcript's commands (continuation lines joined) and the output lines shown after each."""
    out: list[tuple[str, list[str]]] = []
    lines = block.splitlines()
    while lines:
        line = lines.pop(0)
        assert line.startswith("$ "), line
        command = line[2:]
        while command.endswith("\\"):
            command = command[:-1] + lines.pop(0).strip()
        shown = []
        while lines and not lines[0].startswith("$ "):
            shown.append(lines.pop(0))
        out.append((command.split("#")[0].strip(), shown))
    return out


NUMBER = re.compile(r"-?\d+\.\d+")


def matches(shown: list[str], printed: list[str]) -> bool:
    """The printed lines are those shown, where a line `...` stands for any lines (as doctest's ELLIPSIS) and
    each decimal shown is printed to within 2e-6 (past the sixth digit they vary with the CPU)."""
    parts, expected = [], []
    for line in shown:
        if line.strip() == "...":
            parts.append(".*?")
            continue
        line = VERSION.sub("hug_trans=V", line)
        pieces = NUMBER.split(line)
        expected += [float(x) for x in NUMBER.findall(line)]
        parts.append(r"(-?\d+\.\d+)".join(re.escape(piece) for piece in pieces))
    text = "\n".join(VERSION.sub("hug_trans=V", line) for line in printed)
    found = re.fullmatch("\n".join(parts), text, re.S)
    return found is not None and all(abs(float(a) - b) <= 2e-6 for a, b in zip(found.groups(), expected, strict=True))


@pytest.mark.parametrize(("page", "line", "block"), transcripts(), ids=lambda x: str(x)[:20])
def test_the_pages_transcripts_print_what_they_show(page: str, line: int, block: str, tmp_path: Path) -> None:
    for name in ("hyps.txt", "refs.txt", "refs2.txt"):
        (tmp_path / name).symlink_to(WMT / name)
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "HF_HUB_OFFLINE": "1", "COLUMNS": "200"}
    for command, shown in steps(block):
        assert command.startswith("bertscore-tm "), f"{page}:{line}: {command}"
        argv = [sys.executable, "-m", "bertscore_tm", *shlex.split(command)[1:]]
        done = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
        printed = (done.stderr + done.stdout).splitlines()
        assert matches(shown, printed), (
            f"{page}:{line}: {command}\nshown:\n" + "\n".join(shown) + "\nprinted:\n" + ("\n".join(printed))
        )
