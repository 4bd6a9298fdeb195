"""Human judgements, read from a tab-separated file (every bad line named, or skipped and counted) or made from
lists. The format: docs/tuning.md."""

from __future__ import annotations

import contextlib
import csv
import math
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from bertscore_tm.errors import ArgumentValueError, JudgementFileError, JudgementsError, warn_user
from bertscore_tm.settings import rules
from bertscore_tm.settings.texts import check_texts

#: Fewest judgements tuning accepts (a correlation needs 3 points).
MIN_ROWS = 3


@dataclass(frozen=True)
class Judgements:
    """Judged segments: candidate, reference, human score, and optional group, system and context (the
    metric's ``context=``). `lines` are file line numbers for messages; `skipped` counts bad lines left out."""

    candidates: list[str]
    references: list[str]
    human: list[float]
    groups: list[str] | None = None
    systems: list[str] | None = None
    lines: list[int] = field(default_factory=list)
    skipped: int = 0
    source: str | None = None
    contexts: list[str] | None = None

    def __post_init__(self) -> None:
        _check_columns(self, "candidates", ("references", "groups", "systems", "contexts"), "human")

    @classmethod
    def from_columns(
        cls,
        candidates: Sequence[str],
        references: Sequence[str],
        human: Sequence[float],
        groups: Sequence[str] | None = None,
        systems: Sequence[str] | None = None,
        contexts: Sequence[str] | None = None,
    ) -> Judgements:
        """Judgements from parallel lists, one entry per segment."""
        return cls(candidates, references, human, groups, systems, contexts=contexts)  # type: ignore[arg-type]

    def __len__(self) -> int:
        return len(self.candidates)

    def select(self, indices: Sequence[int]) -> Judgements:
        return _select(self, indices, ("candidates", "references", "human", "groups", "systems", "contexts"))


@dataclass(frozen=True)
class RelativeRankings:
    """Relative-ranking judgements (WMT's DARR): a reference and two candidates of one source, `better` the one
    humans preferred; the rest as in `Judgements`."""

    references: list[str]
    better: list[str]
    worse: list[str]
    groups: list[str] | None = None
    lines: list[int] = field(default_factory=list)
    skipped: int = 0
    source: str | None = None
    contexts: list[str] | None = None

    def __post_init__(self) -> None:
        _check_columns(self, "references", ("better", "worse", "groups", "contexts"))

    @classmethod
    def from_columns(
        cls,
        references: Sequence[str],
        better: Sequence[str],
        worse: Sequence[str],
        groups: Sequence[str] | None = None,
        contexts: Sequence[str] | None = None,
    ) -> RelativeRankings:
        """Relative rankings from parallel lists, one entry per judgement."""
        return cls(references, better, worse, groups, contexts=contexts)  # type: ignore[arg-type]

    def __len__(self) -> int:
        return len(self.references)

    def select(self, indices: Sequence[int]) -> RelativeRankings:
        return _select(self, indices, ("references", "better", "worse", "groups", "contexts"))

    def as_pairs(self) -> Judgements:
        """The 2n pairs to score: every better candidate with its reference (human score 1), then every worse one."""
        n = len(self)
        groups = None if self.groups is None else self.groups * 2
        contexts = None if self.contexts is None else self.contexts * 2
        return Judgements(
            self.better + self.worse, self.references * 2, [1.0] * n + [0.0] * n, groups, contexts=contexts
        )


def _select(made: Any, indices: Sequence[int], columns: tuple[str, ...]) -> Any:
    """`made` (judgements or rankings) with the rows `indices` of its columns and lines only."""
    rows = rules.indexes("indices", indices, below=len(made))
    picked = {name: getattr(made, name) for name in columns if getattr(made, name) is not None}
    if made.lines:
        picked["lines"] = made.lines
    return replace(made, **{name: [column[i] for i in rows] for name, column in picked.items()})


#: Columns that may be None (not given).
_OPTIONAL = frozenset({"groups", "systems", "contexts"})


def _check_columns(made: Any, first: str, texts: tuple[str, ...], scores: str | None = None) -> None:
    """Check and set `made`'s columns: `first` and `texts` texts, `scores` finite numbers, all of one length."""
    count = len(check_texts(getattr(made, first), first))
    for name in (first, *texts, *([scores] if scores else [])):
        value = getattr(made, name)
        if value is None and name in _OPTIONAL:
            continue
        column = rules.real_numbers(name, value) if name == scores else check_texts(value, name)
        if len(column) != count:
            raise ArgumentValueError(
                f"{name} has {len(column)} entries for {count} {first}: give one per row",
                argument=name,
                allowed=f"{count} entries",
                value=len(column),
                others=(first,),
            )
        object.__setattr__(made, name, column)
    lines = rules.indexes("lines", made.lines)
    if lines and len(lines) != count:
        raise ArgumentValueError(
            f"lines has {len(lines)} entries for {count} rows",
            argument="lines",
            allowed=f"{count} or none",
            value=lines,
        )
    object.__setattr__(made, "lines", lines)
    rules.integer(0)("skipped", made.skipped)
    rules.path(optional=True)("source", made.source)


def _header_positions(header: list[str], wanted: dict[str, str | None], path: str) -> dict[str, int]:
    """Each wanted column's position in the header; the missing ones named together."""
    names = [h.strip() for h in header]
    lacking = [role for role, column in wanted.items() if column and column not in names]
    if lacking:
        missing = [f"{wanted[role]!r} (the {role} column)" for role in lacking]
        raise JudgementFileError(
            f"{path}: the header has no column {', no column '.join(missing)}; its columns are "
            f"{', '.join(repr(n) for n in names)}",
            path=path,
            line=1,
            remedy="context_column" if lacking == ["context"] else "columns",
        )
    return {role: names.index(column) for role, column in wanted.items() if column}


def _cell(row: list[str], at: dict[str, int], role: str) -> str | float | None:
    """The row's `role` field (None without such a column): a text as it is, a group or system label not blank,
    the human score a finite number; a ValueError saying what is wrong with it."""
    if role not in at:
        return None
    if role not in ("group", "system", "human"):
        return row[at[role]]
    cell = row[at[role]].strip()
    if role != "human":
        if not cell:
            raise ValueError(f"has an empty {role} label")
        return cell
    if not cell:
        raise ValueError("has no human score")
    try:
        human = float(cell)
    except ValueError:
        raise ValueError(f"has a human score that is not a number: {cell!r}") from None
    if not math.isfinite(human):
        raise ValueError(f"has a human score that is not finite: {cell!r}")
    return human


def read_judgements(
    path: str | os.PathLike[str],
    candidate: str = "candidate",
    reference: str = "reference",
    human: str = "human",
    group: str | None = None,
    system: str | None = None,
    skip_bad: bool = False,
    context: str | None = None,
) -> Judgements:
    """Read a UTF-8 tab-separated file with a header: candidate, reference and human score, optionally group,
    system and context (quotes literal, blank lines ignored). A bad line is a `JudgementFileError` naming it,
    or with `skip_bad` skipped, counted and warned about."""
    wanted = {"candidate": candidate, "reference": reference, "human": human, "group": group, "system": system}
    columns, lines, skipped = _read_rows(path, {**wanted, "context": context}, skip_bad)
    cands, refs, scores, groups, systems, contexts = columns
    return Judgements(cands, refs, scores, groups, systems, lines, skipped, _name(path), contexts)


def _read_rows(
    path: str | os.PathLike[str], wanted: dict[str, str | None], skip_bad: bool
) -> tuple[list[Any], list[int], int]:
    """The columns in the order of `wanted` (None where not read), line numbers, and bad lines skipped."""
    rules.file_argument("path", path)
    for role, column in wanted.items():  # the columns' names: the roles of the file's header
        rules.text(optional=role in _OPTIONAL_ROLES)(role, column)
    rules.boolean("skip_bad", skip_bad)
    where = _name(path)
    try:
        with _opened(path) as handle:
            reader = csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
            header = next(reader, None)
            if header is None:
                raise JudgementFileError(f"{where} is empty: it needs a header line and judgements", path=where)
            at = _header_positions(header, wanted, where)
            rows, lines, skipped = [], [], 0
            for row in reader:
                if not any(cell.strip() for cell in row):
                    continue
                try:
                    if len(row) != len(header):
                        raise ValueError(
                            f"has {len(row)} tab-separated fields where the header has {len(header)}"
                            + _split_line(wanted.get("context"))
                        )
                    rows.append([_cell(row, at, role) for role in wanted])
                    lines.append(reader.line_num)
                except ValueError as err:
                    if not skip_bad:
                        raise JudgementFileError(
                            f"{where}, line {reader.line_num} {err}",
                            path=where,
                            line=reader.line_num,
                            remedy="skip_bad",
                        ) from None
                    skipped += 1
    except (OSError, UnicodeDecodeError) as err:
        raise JudgementFileError(f"{where} cannot be read: {err}", path=where) from None
    if skipped:
        warn_user(f"{where}: {skipped} bad line(s) left out; {len(rows)} judgements kept")
    if len(rows) < MIN_ROWS:
        raise JudgementFileError(
            f"{where} has {len(rows)} usable judgement(s){f' ({skipped} bad line(s) left out)' if skipped else ''}: "
            f"a correlation needs at least {MIN_ROWS}",
            path=where,
        )
    read = zip(wanted, zip(*rows, strict=True), strict=True)
    columns = [list(column) if wanted[role] else None for role, column in read]
    return columns, lines, skipped


#: The roles a judgement file may lack.
_OPTIONAL_ROLES = frozenset({"group", "system", "context"})


def _name(path: object) -> str:
    """What messages call the file: its path, or an open file's name."""
    return str(getattr(path, "name", path)) if not isinstance(path, (str, os.PathLike)) else str(path)


@contextlib.contextmanager
def _opened(path: object) -> Iterator[Any]:
    """The file as text lines: a path opened (UTF-8, a byte-order mark skipped), an open file as it is."""
    if isinstance(path, (str, os.PathLike)):
        with open(path, encoding="utf-8-sig", newline="") as handle:
            yield handle
    else:
        yield path


def _split_line(context: str | None) -> str:
    """Why a line of a file with a context column most often has the wrong number of fields."""
    if context is None:
        return ""
    return f" (a context, column {context!r}, cannot hold a tab or a line break: they split its line)"


def read_relative_rankings(
    path: str | os.PathLike[str],
    reference: str = "reference",
    better: str = "better",
    worse: str = "worse",
    group: str | None = None,
    skip_bad: bool = False,
    context: str | None = None,
) -> RelativeRankings:
    """Read relative rankings (WMT's DARR) as `read_judgements` reads scores: a reference, the better and the
    worse candidate per line, optionally a group and a context column."""
    wanted = {"reference": reference, "better": better, "worse": worse, "group": group, "context": context}
    columns, lines, skipped = _read_rows(path, wanted, skip_bad)
    refs, betters, worses, groups, contexts = columns
    return RelativeRankings(refs, betters, worses, groups, lines, skipped, _name(path), contexts)


def check_variation(rows: Judgements) -> None:
    """Refuse, before scoring, judgements with no group of `MIN_ROWS` segments or with constant human scores
    in a group: its correlation, and so the average, would be undefined."""
    members: dict[str, list[float]] = {}
    for label, score in zip(rows.groups or ["all"] * len(rows), rows.human, strict=True):
        members.setdefault(label, []).append(score)
    counted = {label: scores for label, scores in members.items() if len(scores) >= MIN_ROWS}
    where = f"{rows.source}: " if rows.source else ""
    if not counted:
        sizes = ", ".join(f"{label!r} {len(scores)}" for label, scores in list(members.items())[:5])
        raise JudgementsError(
            f"{where}no group has {MIN_ROWS} judgements or more ({sizes}{', ...' if len(members) > 5 else ''}): "
            "a correlation needs at least 3 segments",
            argument="group",
        )
    constant = [label for label, scores in counted.items() if min(scores) == max(scores)]
    if constant:
        name = "the judgements" if rows.groups is None else f"group {constant[0]!r}"
        raise JudgementsError(
            f"{where}the human scores of {name} are all {counted[constant[0]][0]!r}: a correlation with constant "
            f"scores is undefined{'' if rows.groups is None else ', and so is the average over groups'}"
            f"{f' ({len(constant)} groups are so)' if len(constant) > 1 else ''}: check the human column"
            f"{'' if rows.groups is None else ', or leave the group out'}",
            argument="human",
        )
