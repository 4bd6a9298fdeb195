"""Human judgements to correlate a metric with: candidate, reference and human score per segment, with optional
group (e.g. language pair) and system labels and an optional context (the source sentence, a code snippet's
description: scored as the metric's ``context=``), read from a tab-separated file with a header or made from
lists.

Why a module of its own: the layer tuning (`bertscore_tm.tuning.layer_tuning`) and the ``tune-layers`` command both read
judgements, and a reader that names every bad line (or skips it and counts it) is worth keeping apart from the
statistics. The file format and the command's messages: docs/tuning.md.
"""

from __future__ import annotations

import contextlib
import csv
import math
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from bertscore_tm.errors import ArgumentValueError, JudgementFileError, JudgementsError, warn_user
from bertscore_tm.settings import rules
from bertscore_tm.settings.texts import check_texts

#: Fewest judgements tuning accepts (a correlation needs 3 points).
MIN_ROWS = 3


@dataclass(frozen=True)
class Judgements:
    """Judged segments: candidate, reference and human score each, with optional group and system labels and an
    optional context per segment (`contexts`: scored as the metric's ``context=``; a blank one adds nothing).

    `lines` are the file's line numbers of the rows (1 is the header) for messages, empty for judgements made
    from lists; `skipped` counts the bad lines `read_judgements(skip_bad=True)` left out. Every column is checked
    when made (texts by the one text rule, a bare string one text; the scores finite numbers; all one length).
    """

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
        """Judgements from parallel lists (one entry per segment), checked as every `Judgements` is."""
        return cls(candidates, references, human, groups, systems, contexts=contexts)  # type: ignore[arg-type]

    def __len__(self) -> int:
        return len(self.candidates)

    def select(self, indices: Sequence[int]) -> Judgements:
        """These rows only (a slice of a file, or the pairs left after undefined scores are dropped)."""
        rows = rules.indexes("indices", indices, below=len(self))

        def pick(values: list[Any] | None) -> Any:
            return None if values is None else [values[i] for i in rows]

        return Judgements(
            pick(self.candidates),
            pick(self.references),
            pick(self.human),
            pick(self.groups),
            pick(self.systems),
            pick(self.lines) if self.lines else [],
            self.skipped,
            self.source,
            pick(self.contexts),
        )


@dataclass(frozen=True)
class RelativeRankings:
    """Relative-ranking judgements (WMT's DARR): per judgement a reference and two candidates of the same source,
    `better` the one humans judged better, with optional group labels (e.g. the language pair) and an optional
    context per judgement (`contexts`, as in `Judgements`: both candidates are scored with it). `lines`,
    `skipped` and `source` as in `Judgements`, and checked alike."""

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
        """Relative rankings from parallel lists (one entry per judgement), checked as every one is."""
        return cls(references, better, worse, groups, contexts=contexts)  # type: ignore[arg-type]

    def __len__(self) -> int:
        return len(self.references)

    def select(self, indices: Sequence[int]) -> RelativeRankings:
        """These judgements only."""
        rows = rules.indexes("indices", indices, below=len(self))
        refs, better, worse = ([column[i] for i in rows] for column in (self.references, self.better, self.worse))
        groups = None if self.groups is None else [self.groups[i] for i in rows]
        lines = [self.lines[i] for i in rows] if self.lines else []
        contexts = None if self.contexts is None else [self.contexts[i] for i in rows]
        return RelativeRankings(refs, better, worse, groups, lines, self.skipped, self.source, contexts)

    def as_pairs(self) -> Judgements:
        """The 2n pairs to score: every better candidate with its reference, then every worse one (human scores
        1 and 0: which of the two was judged better)."""
        n = len(self)
        groups = None if self.groups is None else self.groups * 2
        contexts = None if self.contexts is None else self.contexts * 2
        return Judgements(
            self.better + self.worse, self.references * 2, [1.0] * n + [0.0] * n, groups, contexts=contexts
        )


#: Columns that may be None (not given).
_OPTIONAL = frozenset({"groups", "systems", "contexts"})


def _check_columns(made: Any, first: str, texts: tuple[str, ...], scores: str | None = None) -> None:
    """Check and set `made`'s columns: `first` and `texts` by the one text rule (the optional ones may be None),
    `scores` finite numbers, all as long as `first`; `lines` empty or one per row, `skipped` a count, `source`
    a name or None."""
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
    """Each wanted column's position in the header; the missing ones named together (the context column alone
    with its own remedy: it is named by another argument than the others)."""
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


def _parse_row(row: list[str], at: dict[str, int]) -> tuple[str, str, float, str | None, str | None, str | None]:
    """One data row's fields; ValueError saying what is wrong with it."""
    cell = row[at["human"]].strip()
    if not cell:
        raise ValueError("has no human score")
    try:
        human = float(cell)
    except ValueError:
        raise ValueError(f"has a human score that is not a number: {cell!r}") from None
    if not math.isfinite(human):
        raise ValueError(f"has a human score that is not finite: {cell!r}")
    labels = _label(row, at, "group"), _label(row, at, "system")
    return row[at["candidate"]], row[at["reference"]], human, *labels, _context(row, at)


def _label(row: list[str], at: dict[str, int], role: str) -> str | None:
    """The row's `role` label (None where the file has no such column); ValueError where it is empty."""
    if role not in at:
        return None
    value = row[at[role]].strip()
    if not value:
        raise ValueError(f"has an empty {role} label")
    return value


def _context(row: list[str], at: dict[str, int]) -> str | None:
    """The row's context (None where the file has no context column; a blank cell: no context, as the metric
    takes a blank ``context=``)."""
    return row[at["context"]] if "context" in at else None


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
    """Read a UTF-8 tab-separated file with a header line: a candidate, its reference and a human score per
    line (column names as given), optionally a group (e.g. language pair), a system and a context column (the
    source sentence, a description: each pair is scored with its line's context, a blank cell meaning none).
    Quotes are literal (no CSV quoting), blank lines are ignored.

    A line with a missing or non-numeric human score, an empty label or the wrong number of fields (with a
    context column, most often a tab or a line break inside a context, which the format cannot hold) is a
    `JudgementFileError` naming the line, or, with `skip_bad`, left out and counted (`Judgements.skipped`,
    with a warning). Missing columns are named; fewer than 3 judgements is an error.
    """
    wanted = {"candidate": candidate, "reference": reference, "human": human, "group": group, "system": system}
    rows, lines, skipped = _read_rows(path, {**wanted, "context": context}, _parse_row, skip_bad)
    return _judgements(rows, lines, skipped, _name(path), (group, system, context))


def _read_rows(
    path: str | os.PathLike[str], wanted: dict[str, str | None], parse: Callable[..., Any], skip_bad: bool
) -> tuple[list[Any], list[int], int]:
    """The parsed rows of a judgement file (`parse(row, positions)` each, once the row has the header's number
    of fields), their line numbers, and how many bad lines were skipped; a bad line is an error naming it
    unless `skip_bad`."""
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
                    rows.append(parse(row, at))
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
    return rows, lines, skipped


#: The roles a judgement file may lack (each read function names a role's column by an argument of its name).
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
    """What most often gives a line the wrong number of fields in a file with a context column: a context
    (source code, a description) holding a tab or a line break, which split the line."""
    if context is None:
        return ""
    return f" (a context, column {context!r}, cannot hold a tab or a line break: they split its line)"


def _enough(kept: int, skipped: int, where: str) -> None:
    if skipped:
        warn_user(f"{where}: {skipped} bad line(s) left out; {kept} judgements kept")
    if kept < MIN_ROWS:
        raise JudgementFileError(
            f"{where} has {kept} usable judgement(s){f' ({skipped} bad line(s) left out)' if skipped else ''}: "
            f"a correlation needs at least {MIN_ROWS}",
            path=where,
        )


def read_relative_rankings(
    path: str | os.PathLike[str],
    reference: str = "reference",
    better: str = "better",
    worse: str = "worse",
    group: str | None = None,
    skip_bad: bool = False,
    context: str | None = None,
) -> RelativeRankings:
    """Read relative-ranking judgements (WMT's DARR) from a UTF-8 tab-separated file with a header line: a
    reference, the candidate judged better and the one judged worse per line (column names as given), optionally
    a group and a context column (both candidates are scored with it). The format's rules and errors are
    `read_judgements`'."""
    wanted = {"reference": reference, "better": better, "worse": worse, "group": group, "context": context}
    rows, lines, skipped = _read_rows(path, wanted, _parse_ranking, skip_bad)
    _enough(len(rows), skipped, _name(path))
    refs, betters, worses, groups, contexts = (list(column) for column in zip(*rows, strict=True))
    return RelativeRankings(
        refs, betters, worses, groups if group else None, lines, skipped, _name(path), contexts if context else None
    )


def _parse_ranking(row: list[str], at: dict[str, int]) -> tuple[str, str, str, str | None, str | None]:
    return row[at["reference"]], row[at["better"]], row[at["worse"]], _label(row, at, "group"), _context(row, at)


def _judgements(
    rows: list[tuple[str, str, float, str | None, str | None, str | None]],
    lines: list[int],
    skipped: int,
    where: str,
    optional: tuple[str | None, str | None, str | None],
) -> Judgements:
    """The rows read as `Judgements`; `optional`: the group, system and context columns (None: not read)."""
    _enough(len(rows), skipped, where)
    cands, refs, human, *columns = (list(column) for column in zip(*rows, strict=True))
    groups, systems, contexts = (column if name else None for column, name in zip(columns, optional, strict=True))
    return Judgements(cands, refs, human, groups, systems, lines, skipped, where, contexts)


def check_variation(rows: Judgements) -> None:
    """Refuse judgements that no correlation can be computed on, before anything is scored: no group (or, without
    groups, not the whole) of at least `MIN_ROWS` segments, or human scores that are the same in every segment of
    a group counted. A constant group's correlation is undefined, and so is the average over groups (WMT's
    figure); smaller groups are left out later, with a warning."""
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
