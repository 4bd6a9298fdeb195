"""What an explanation of one pair holds, each with its JSON form (docs/explain.md)."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class TokenExplanation:
    """One token of one side: `match` its best match's index on the other side (None: none), `similarity`
    their cosine, `contribution` weight x similarity / the side's sum of weights. `role`: None for a token taking
    part in the matching; "masked", "prompt" or "context" for one encoded with the text that is no match and
    weighs 0."""

    index: int
    token: str
    token_id: int
    start: int | None
    end: int | None
    special: bool
    match: int | None
    similarity: float
    weight: float
    contribution: float
    word: int | None
    role: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The token as JSON (NaN as null); `role` only where the token is out of the matching."""
        shown = {} if self.role is None else {"role": self.role}
        return {
            **shown,
            **_json(self, "token", "start", "end", "special", "match", "similarity", "weight", "contribution"),
        }


@dataclass(frozen=True)
class WordExplanation:
    """A word (a run of non-space characters) and its tokens: `support` their weight-averaged similarity,
    `counterpart` the other side's word holding its heaviest token's best match (None where a special token:
    named in `counterpart_text`), `weak` whether support is below the threshold (never for a word weighing 0)."""

    index: int
    text: str
    start: int
    end: int
    tokens: tuple[int, ...]
    weight: float
    support: float
    contribution: float
    counterpart: int | None
    counterpart_text: str
    weak: bool

    def to_json(self) -> dict[str, Any]:
        """The word as JSON (NaN as null)."""
        return {
            "word": self.text,
            **_json(self, "start", "end"),
            "tokens": list(self.tokens),
            **_json(self, "weight", "support", "contribution", "counterpart", "counterpart_text", "weak"),
        }


@dataclass(frozen=True)
class ScoreTriple:
    """Precision, recall and F1, and F-beta where the setting has a beta."""

    precision: float
    recall: float
    f1: float
    f_beta: float | None = None

    def to_json(self) -> dict[str, float | None]:
        out = _json(self, "precision", "recall", "f1")
        return out if self.f_beta is None else {**out, "f_beta": _number(self.f_beta)}


@dataclass(frozen=True)
class PairScores:
    """A pair's scores as `score()` gives them, each reference's, the best reference's raw ones and its index."""

    pair: ScoreTriple
    references: tuple[ScoreTriple, ...]
    raw: ScoreTriple
    best: int


@dataclass(frozen=True)
class Threshold:
    """Below what support a word is weak, per side (None: no word is), and where the values come from."""

    candidate: float | None
    reference: float | None
    source: str


@dataclass(frozen=True)
class PairExplanation:
    """The explanation of one pair (docs/explain.md).

    `precision`, `recall`, `f1` (and `f_beta`) are what `score()` gives: the maximum over the references, rescaled
    where the setting rescales. The tokens and words are the candidate's and the best reference's (the highest F,
    or F-beta): their contributions add up to `raw.precision` and `raw.recall`, before rescaling by `baseline`."""

    candidate: str
    references: tuple[str, ...]
    precision: float
    recall: float
    f1: float
    best_reference: int
    reference_scores: tuple[ScoreTriple, ...]
    raw: ScoreTriple
    candidate_tokens: tuple[TokenExplanation, ...]
    reference_tokens: tuple[TokenExplanation, ...]
    candidate_words: tuple[WordExplanation, ...]
    reference_words: tuple[WordExplanation, ...]
    hash_code: str
    layer: int
    baseline: tuple[float, float, float] | None
    threshold: Threshold
    weighting: str
    blank: bool
    notes: tuple[str, ...]
    f_beta: float | None = None
    #: the token mask's label (``ignore=``): what a token of role "masked" was left out by
    ignore: str | None = None

    @property
    def reference(self) -> str:
        """The best reference's text."""
        return self.references[self.best_reference]

    def to_json(self) -> dict[str, Any]:
        """The explanation as JSON (NaN as null)."""
        return {
            **ScoreTriple(self.precision, self.recall, self.f1, self.f_beta).to_json(),
            **({} if self.ignore is None else {"ignore": self.ignore}),
            "best_reference": self.best_reference,
            "references": [s.to_json() for s in self.reference_scores],
            "raw": self.raw.to_json(),
            "baseline": None if self.baseline is None else list(self.baseline),
            "candidate": self.candidate,
            "reference_texts": list(self.references),
            "candidate_tokens": [t.to_json() for t in self.candidate_tokens],
            "reference_tokens": [t.to_json() for t in self.reference_tokens],
            "candidate_words": [w.to_json() for w in self.candidate_words],
            "reference_words": [w.to_json() for w in self.reference_words],
            "weak_threshold": dataclasses.asdict(self.threshold),
            "hash": self.hash_code,
            "layer": self.layer,
            "weights": self.weighting,
            "blank": self.blank,
            "notes": list(self.notes),
        }


def _number(x: float) -> float | None:
    return x if math.isfinite(x) else None


def _json(item: object, *names: str) -> dict[str, Any]:
    """The named fields of `item`, a float that is not finite as None (JSON's null)."""
    return {n: _number(v) if isinstance(v := getattr(item, n), float) else v for n in names}
