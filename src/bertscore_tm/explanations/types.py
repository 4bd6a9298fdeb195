"""What an explanation of one pair holds (`bertscore_tm.explanations.explanation` makes them): its tokens, its words,
its scores, and where its weights and weak-word threshold come from; each with its JSON form. Semantics:
docs/explain.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class TokenExplanation:
    """One token of one side: `match` is the index of its best match among the other side's tokens (None when
    that side has no token), `similarity` their cosine, `contribution` weight x similarity / the side's sum of
    weights (0 for a pair with a blank side, NaN where the weights sum to 0). `start`/`end`: its characters in
    the original text (None for a special token); `word`: the index of its word (None for a special token).
    `role`: None for a token of the text that takes part in the matching; "masked" for one the mask
    (``ignore=``) leaves out, "prompt" for one of the side's fixed prompt, "context" for one of the pair's
    context: each encoded with the text, but no match for the other side and weighing 0 (no match of its own,
    similarity 0, contribution 0)."""

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
            "token": self.token,
            "start": self.start,
            "end": self.end,
            "special": self.special,
            "match": self.match,
            "similarity": _number(self.similarity),
            "weight": _number(self.weight),
            "contribution": _number(self.contribution),
        }


@dataclass(frozen=True)
class WordExplanation:
    """A word of the original text (a run of non-space characters) and its tokens: `weight` their weights'
    sum, `support` their weight-averaged similarity (their plain mean where they weigh 0), `contribution` their
    contributions' sum; `counterpart` the other side's word holding the best match of its heaviest token (None
    where that is a special token, named in `counterpart_text`); `weak` whether its support is below the
    threshold (a word weighing 0 never is)."""

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
            "start": self.start,
            "end": self.end,
            "tokens": list(self.tokens),
            "weight": _number(self.weight),
            "support": _number(self.support),
            "contribution": _number(self.contribution),
            "counterpart": self.counterpart,
            "counterpart_text": self.counterpart_text,
            "weak": self.weak,
        }


@dataclass(frozen=True)
class ScoreTriple:
    """Precision, recall and F1, and F-beta where the setting has a beta."""

    precision: float
    recall: float
    f1: float
    f_beta: float | None = None

    def to_json(self) -> dict[str, float | None]:
        out = {"precision": _number(self.precision), "recall": _number(self.recall), "f1": _number(self.f1)}
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
    """Below what support a word is weak: `candidate` for the candidate's words, `reference` for the
    reference's (None: none known, no word is weak); `source` says where the values come from."""

    candidate: float | None
    reference: float | None
    source: str


@dataclass(frozen=True)
class PairExplanation:
    """The explanation of one pair (docs/explain.md).

    `precision`, `recall`, `f1` are what `score()` gives for the pair (each the maximum over the references,
    rescaled when the setting rescales); `reference_scores` each reference's own (rescaled likewise);
    `best_reference` the index of the one with the highest F (the lowest index on a tie). The tokens and words
    are those of the candidate and of the best reference: the candidate's contributions add up to `raw.precision`
    and the reference's to `raw.recall`, the best reference's P and R before rescaling (`baseline` holds the
    (P, R, F) baseline that maps them: x' = (x - b) / (1 - b)). With a `beta` setting, `f_beta` is the pair's
    F-beta as `score()` gives it (the best reference is then the one with the highest F-beta); None otherwise.
    """

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
    #: the token mask's label (``ignore=``: "punctuation", "re:<pattern>", "callable:<name>"), None without one:
    #: what a token of role "masked" was left out by, for a reader
    ignore: str | None = None

    @property
    def reference(self) -> str:
        """The best reference's text."""
        return self.references[self.best_reference]

    def to_json(self) -> dict[str, Any]:
        """The explanation as JSON: scores, each reference's scores, the tokens and words (NaN as null)."""
        return {
            "precision": _number(self.precision),
            "recall": _number(self.recall),
            "f1": _number(self.f1),
            **({} if self.f_beta is None else {"f_beta": _number(self.f_beta)}),
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
            "weak_threshold": {
                "candidate": self.threshold.candidate,
                "reference": self.threshold.reference,
                "source": self.threshold.source,
            },
            "hash": self.hash_code,
            "layer": self.layer,
            "weights": self.weighting,
            "blank": self.blank,
            "notes": list(self.notes),
        }


def _number(x: float) -> float | None:
    return x if math.isfinite(x) else None
