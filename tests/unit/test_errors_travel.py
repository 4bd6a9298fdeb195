"""Every error class of the package crosses a process boundary whole: pickled and unpickled (as Ray, a
`datasets` worker or another rank does), it is an error of the same class with the same message and fields.
The classes are found in `bertscore_tm.errors`, their fields from their signatures: a new class is covered
without a new test."""

from __future__ import annotations

import inspect
import pickle

import pytest

from bertscore_tm import errors
from bertscore_tm.errors import BERTScoreError

CLASSES = sorted(
    (c for c in vars(errors).values() if isinstance(c, type) and issubclass(c, BERTScoreError)),
    key=lambda c: c.__name__,
)
#: A value for each keyword field an error class takes (its signature names it).
FIELDS = {
    "argument": "num_layers",
    "expected": "int",
    "allowed": "an integer >= 1",
    "value": 0,
    "others": ("batch_size",),
    "model": "a-model",
    "revision": "main",
    "path": "/a/file.tsv",
    "tokens": 512,
    "lang": "en",
    "row": 3,
    "column": "reference",
    "setting": "idf",
    "values": [True, False],
    "what": "judgements",
    "line": 4,
    "remedy": None,
}


def made(kind: type[BERTScoreError]) -> BERTScoreError:
    params = list(inspect.signature(kind.__init__).parameters.values())[1:]
    keywords = {p.name: FIELDS[p.name] for p in params if p.kind is p.KEYWORD_ONLY}
    return kind("What went wrong, and what to do.", **keywords)


def test_the_classes_are_found() -> None:
    assert {"ArgumentTypeError", "ArgumentValueError", "ColumnDataError", "JudgementFileError"} <= {
        c.__name__ for c in CLASSES
    }


@pytest.mark.parametrize("kind", CLASSES, ids=lambda c: c.__name__)
def test_each_error_pickles_to_an_equal_error(kind: type[BERTScoreError]) -> None:
    err = made(kind)
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is kind
    assert str(back) == str(err) and back.args == err.args
    assert vars(back) == vars(err)
    assert isinstance(back, BERTScoreError)
