"""The sweep: every door of the package (each public name: the root's `__all__` and the moved names its folders
export, `bertscore_tm.MOVED`; the public methods of its classes)
fed, one parameter at a time, a value of each awkward class (`CLASSES`), the other parameters valid. Each call
ends in a `BERTScoreError` that names the parameter (its `argument`, or its message), or in a result the
parameter's own rule accepts (`VALID`: the settings' rules, the text rule, ...), and that result then works (a
metric computes, a stream is drained). The doors are found, not listed: a new one whose parameters are known here
is swept without a new test, and one with a parameter unknown here fails, asking for a valid value and its rule.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import json
import math
import re
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import bertscore_tm
from bertscore_tm.comparison.significance import as_scores
from bertscore_tm.errors import ArgumentValueError, BERTScoreError
from bertscore_tm.models.tokenizing import PairTokenizer
from bertscore_tm.settings import rules
from bertscore_tm.settings.arguments import MAX_RESAMPLES, RULES, SETTINGS
from bertscore_tm.settings.config import Config
from bertscore_tm.settings.texts import (
    check_contexts,
    check_groups,
    check_pairs,
    check_stream,
    check_text,
    check_texts,
    sequence_of,
)
from bertscore_tm.tuning import Judgements, RelativeRankings
from bertscore_tm.tuning.layer_tuning import LayerScores, tune_from_scores
from tests.tiny_models import build_tiny_model

pytestmark = pytest.mark.usefixtures("one_thread")

#: The awkward classes of value, each made afresh (a generator is used up once read).
CLASSES: dict[str, Callable[[], object]] = {
    "None": lambda: None,
    "a bare string": lambda: "A bare string.",
    "bytes": lambda: b"A cat.",
    "an int": lambda: 7,
    "a lone surrogate": lambda: "a\ud800b",
    "0": lambda: 0,
    "a negative": lambda: -1,
    "nan": lambda: math.nan,
    "inf": lambda: math.inf,
    "1e200": lambda: 1e200,
    "2**63": lambda: 2**63,
    "numpy int": lambda: np.int64(2),
    "numpy float": lambda: np.float32(0.5),
    "numpy bool": lambda: np.bool_(True),
    "a generator": lambda: (t for t in ("A cat.", "A dog.")),
    "an empty sequence": lambda: [],
}

#: Classes the package builds and returns (results): their constructors are not doors, their methods are.
RESULTS = frozenset({"Scores", "PairExplanation", "LayerTuning"})
#: Methods torch and torchmetrics call with their own values (the Metric's protocol), not doors of ours: forward's
#: arguments are update's (swept there); set_dtype is the module cast's hook, documented to change nothing.
PROTOCOL = frozenset(
    {"forward", "sync", "set_dtype", "get_extra_state", "set_extra_state", "with_pair_axis", "reset", "clear_cache"}
)
#: Callables a class's instances hold as attributes (documented doors), with their class.
ATTRIBUTES = {"BERTScore": {"tokenize": PairTokenizer.__call__}}
#: What each door's ``**kwargs`` takes: the metric's settings (each swept), or torchmetrics' own (its to check).
SETTINGS_KWARGS = ("kwargs", "metric_arguments", "metric_kwargs")
TORCHMETRICS_KWARGS = frozenset({"BERTScore", "BERTScore.from_config"})
#: Keyword arguments a door takes in its **kwargs beside the settings.
EXTRA_KWARGS = {"bert_score": ("context",)}


@dataclasses.dataclass
class Ctx:
    """What valid values are made of: the tiny model, a folder for files, and objects built once."""

    model: str
    root: Path
    objects: dict[str, Any] = dataclasses.field(default_factory=dict)

    def once(self, name: str, make: Callable[[], Any]) -> Any:
        if name not in self.objects:
            self.objects[name] = make()
        return self.objects[name]

    def folder(self) -> str:
        self.objects["folders"] = self.objects.get("folders", 0) + 1
        path = self.root / f"folder{self.objects['folders']}"
        return str(path)

    def metric(self, **settings: Any) -> bertscore_tm.BERTScore:
        key = "metric" + json.dumps(sorted(settings.items()))
        return self.once(key, lambda: bertscore_tm.BERTScore(self.model, **settings))

    def layer_scores(self) -> LayerScores:
        f1 = np.array([[0.5, 0.6, 0.9], [0.4, 0.8, 0.7], [0.9, 0.1, 0.5]])
        return LayerScores(f1, f1, f1, self.model, "a-hash", False)

    def judgement_file(self) -> str:
        path = self.root / "judgements.tsv"
        lines = ["candidate\treference\thuman"] + [
            f"{c}\t{r}\t{h}" for c, r, h in zip(ROWS["candidates"], ROWS["references"], ROWS["human"], strict=True)
        ]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return str(path)

    def ranking_file(self) -> str:
        path = self.root / "rankings.tsv"
        rows = zip(RANKED["references"], RANKED["better"], RANKED["worse"], strict=True)
        lines = ["reference\tbetter\tworse"] + ["\t".join(row) for row in rows]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return str(path)


#: A rule: raises a `BERTScoreError` where the value is refused.
Rule = Callable[[str, object], object]


@dataclasses.dataclass(frozen=True)
class Param:
    """A parameter's valid value (made from the context) and the package's rule for it, a function of the
    argument's name and value that raises a `BERTScoreError` where the value is refused; `aliases`: other names
    an error may give it (a batch's cells are the command line's ``--data``)."""

    valid: Callable[[Ctx], object]
    rule: Rule
    aliases: tuple[str, ...] = ()


CANDIDATE, REFERENCE = "The cat sat on the mat.", "A cat was sitting on the mat."
#: Judged segments: three candidates, their references and human scores (varying, as tuning needs).
ROWS = {
    "candidates": ["The cat sat.", "A dog ran.", "It rained."],
    "references": ["A cat sat.", "The dog ran.", "Rain fell."],
    "human": [0.9, 0.2, 0.5],
}
RANKED = {"references": ["A cat sat.", "The dog ran.", "Rain fell."], "better": ["The cat sat.", "A dog ran.", "Rain."]}
RANKED["worse"] = ["Dogs.", "Cats.", "Sun."]


def _optional(rule: Rule) -> Rule:
    return lambda name, value: None if value is None else rule(name, value)


def _texts(name: str, value: object) -> object:
    return check_texts(value, name, empty=False)


def _rows_of(count: int) -> Rule:
    return lambda name, value: _same_length(check_texts(value, name), count, name)


def _same_length(items: list[Any], count: int, name: str) -> None:
    if len(items) != count:
        raise ArgumentValueError(f"{name}: {len(items)} for {count}", argument=name, allowed=str(count), value=items)


def _groups(name: str, value: object) -> object:
    return check_groups(value, name)


def _corpus(name: str, value: object) -> None:
    """References to count, read as they come (a generator too): at least one text."""
    items = list(check_stream([value] if isinstance(value, str) else value, name))
    _texts(name, [t for i, item in enumerate(items) for t in check_texts(item, f"{name}[{i}]")])


def _systems(name: str, value: object) -> None:
    systems = sequence_of(value, name, "systems")
    if not systems:
        raise ArgumentValueError("no system", argument=name, allowed="one or more", value=value)
    for i, system in enumerate(systems):
        check_pairs(system, [REFERENCE], names=(f"{name}[{i}]", "target"))


def _never(name: str, value: object) -> None:
    """No value of the classes is valid here (a metric, a batch of rows, judgements...)."""
    raise ArgumentValueError(f"{name} takes none of the classes", argument=name, allowed="", value=value)


def _numbers(count: int) -> Rule:
    return lambda name, value: _same_length(rules.real_numbers(name, value), count, name)


#: Seeds and resamples, as every door drawing resamples takes them.
SEED = Param(lambda c: 0, rules.SEED)
RESAMPLES = Param(lambda c: 20, rules.integer(1, maximum=MAX_RESAMPLES))
PROBABILITY = Param(lambda c: 0.95, rules.probability)
COLUMN = Param(lambda c: "reference", rules.text())
OPTIONAL_COLUMN = Param(lambda c: None, rules.text(optional=True))
FLAG = Param(lambda c: False, rules.boolean)
#: The valid value and the rule of every parameter name (``door:name`` where a door's differs); the settings'
#: (`SETTINGS`) come from the table.
VALID: dict[str, Param] = {
    # texts, by the one text rule
    "preds": Param(lambda c: [CANDIDATE], lambda n, v: check_pairs(v, [REFERENCE])),
    "target": Param(lambda c: [REFERENCE], lambda n, v: check_pairs([CANDIDATE], v)),
    "cands": Param(lambda c: [CANDIDATE, "A dog."], _texts),
    "refs": Param(lambda c: [REFERENCE, "A dog ran."], _texts),
    "score_resumable:refs": Param(lambda c: [REFERENCE, "A dog ran."], lambda n, v: check_pairs(["a", "b"], v)),
    "candidate": Param(lambda c: CANDIDATE, lambda n, v: check_text(v, n)),
    "references": Param(lambda c: [REFERENCE], _texts),
    "idf_references": Param(lambda c: None, _optional(_texts)),
    "context": Param(lambda c: None, lambda n, v: check_contexts(v, 1, n)),
    "score_resumable:context": Param(lambda c: None, lambda n, v: check_contexts(v, 2, n)),
    "text": Param(lambda c: CANDIDATE, lambda n, v: check_text(v, n)),
    "groups": Param(lambda c: [["A cat.", "A cat sat.", "The cat sat."]], _groups),
    "mbr_select:references": Param(lambda c: None, _optional(_groups)),
    "corpus_idf:references": Param(lambda c: [REFERENCE, "A dog ran."], lambda n, v: _corpus(n, v)),
    "pairs": Param(lambda c: [(CANDIDATE, REFERENCE)], lambda n, v: check_stream(v, n)),
    # the metric's engines
    "threshold": Param(lambda c: None, rules.finite_number(optional=True)),
    "layer": Param(lambda c: None, rules.integer(0, optional=True)),
    "indexes": Param(lambda c: [0], _optional(lambda n, v: _same_length(rules.indexes(n, v), 1, n))),
    "return_utilities": FLAG,
    "utility": Param(lambda c: "f1", rules.choice(("f1", "f_beta", "precision", "recall"))),
    "incoming_state": Param(lambda c: c.metric(), _never),
    "mode": FLAG,
    "config": Param(lambda c: Config.of({"model_name_or_path": c.model}), _never),
    # bert-score's own names (`score`) and torchmetrics' (`bert_score`: its num_threads=0 is torch's own threads)
    "model_type": Param(lambda c: c.model, rules.path(optional=True), ("model_name_or_path",)),
    "nthreads": Param(lambda c: None, RULES["num_threads"]),
    "score:idf": Param(
        lambda c: False, lambda n, v: (rules.boolean if not isinstance(v, dict) else rules.weight_mapping)(n, v)
    ),
    "bert_score:num_threads": Param(lambda c: None, lambda n, v: v == 0 or RULES["num_threads"](n, v)),
    # corpora
    "metric": Param(lambda c: c.metric(), _never),
    "checkpoint_dir": Param(lambda c: c.folder(), rules.path()),
    "shard_size": Param(lambda c: 1, rules.integer(1)),
    "batch": Param(lambda c: {"candidate": [CANDIDATE], "reference": [REFERENCE]}, _never, ("data",)),
    "first_row": Param(lambda c: 0, rules.integer(0)),
    "rank": Param(lambda c: None, rules.integer(0, optional=True)),
    "candidate_column": Param(lambda c: "candidate", rules.text()),
    "reference_column": Param(lambda c: "reference", rules.column_names),
    "context_column": OPTIONAL_COLUMN,
    "prefix": Param(lambda c: "bertscore_", rules.text(blank=True)),
    "several_references": Param(lambda c: None, _optional(rules.boolean)),
    # comparison
    "scores": Param(lambda c: [0.5, 0.7, 0.6], lambda n, v: as_scores(v, n)),
    "scores_a": Param(lambda c: [0.5, 0.7, 0.6], lambda n, v: as_scores(v, n)),
    "scores_b": Param(lambda c: [0.6, 0.8, 0.5], lambda n, v: as_scores(v, n)),
    "confidence": PROBABILITY,
    "alpha": Param(lambda c: 0.05, rules.probability),
    "num_samples": RESAMPLES,
    "seed": SEED,
    "method": Param(lambda c: "bootstrap", rules.choice(("bootstrap", "randomization"))),
    "score_systems:metric": Param(lambda c: bertscore_tm.BERTScore(c.model), _never),
    "score_systems:systems": Param(lambda c: [[CANDIDATE], ["A dog."]], lambda n, v: _systems(n, v)),
    "score_systems:target": Param(lambda c: [REFERENCE], lambda n, v: check_pairs([CANDIDATE], v)),
    "shard_sizes": Param(lambda c: None, _optional(lambda n, v: rules.indexes(n, v) == [1] or _never(n, v))),
    # tuning
    "rows": Param(lambda c: Judgements(**ROWS), _never),
    "rankings": Param(lambda c: RelativeRankings(**RANKED), _never),
    "tune_from_scores:scores": Param(lambda c: c.layer_scores(), _never),
    "tune_layers:model": Param(lambda c: c.model, rules.path()),
    "score_all_layers:model": Param(lambda c: c.model, rules.path()),
    "tune_layers_on_rankings:model": Param(lambda c: c.model, rules.path()),
    "idf": FLAG,
    "criterion": Param(lambda c: "pearson", rules.choice(("pearson", "spearman", "kendall"))),
    "score": Param(lambda c: "f1", rules.choice(("precision", "recall", "f1"))),
    "bootstrap": Param(lambda c: 20, rules.integer(0, maximum=MAX_RESAMPLES)),
    "default_layer": Param(lambda c: None, rules.integer(0, optional=True)),
    "layer_table": Param(lambda c: None, rules.path(optional=True)),
    "progress": FLAG,
    "path": Param(lambda c: c.judgement_file(), rules.file_argument),
    "read_relative_rankings:path": Param(lambda c: c.ranking_file(), rules.file_argument),
    "add_to_layer_table:path": Param(lambda c: c.folder() + ".json", rules.path()),
    "save_to_layer_table:path": Param(lambda c: c.folder() + ".json", rules.path()),
    "model_name": Param(lambda c: "a-model", rules.text()),
    "add_to_layer_table:layer": Param(lambda c: 1, rules.integer(0)),
    "figures:layer": Param(lambda c: 1, lambda n, v: rules.integer(0, maximum=2)(n, v)),
    "figures:method": Param(lambda c: None, rules.choice(("pearson", "spearman", "kendall"), optional=True)),
    "figures:score": Param(lambda c: None, rules.choice(("precision", "recall", "f1"), optional=True)),
    "all_scores": FLAG,
    "indent": Param(lambda c: 2, rules.integer(0, optional=True, maximum=64)),
    "skip_bad": FLAG,
    "read_judgements:candidate": Param(lambda c: "candidate", rules.text()),
    "read_judgements:reference": COLUMN,
    "read_relative_rankings:reference": COLUMN,
    "human": Param(lambda c: "human", rules.text()),
    "better": Param(lambda c: "better", rules.text()),
    "worse": Param(lambda c: "worse", rules.text()),
    "group": OPTIONAL_COLUMN,
    "system": OPTIONAL_COLUMN,
    "read_judgements:context": OPTIONAL_COLUMN,
    "read_relative_rankings:context": OPTIONAL_COLUMN,
    # judgements made from lists: three rows
    "candidates": Param(lambda c: ROWS["candidates"], _rows_of(3)),
    "Judgements:references": Param(lambda c: ROWS["references"], _rows_of(3)),
    "RelativeRankings:references": Param(lambda c: RANKED["references"], _rows_of(3)),
    "Judgements:human": Param(lambda c: ROWS["human"], _numbers(3)),
    "Judgements:groups": Param(lambda c: None, _optional(_rows_of(3))),
    "RelativeRankings:groups": Param(lambda c: None, _optional(_rows_of(3))),
    "systems": Param(lambda c: None, _optional(_rows_of(3))),
    "Judgements:contexts": Param(lambda c: None, _optional(_rows_of(3))),
    "contexts": Param(lambda c: None, _optional(_rows_of(3))),
    "RelativeRankings:better": Param(lambda c: RANKED["better"], _rows_of(3)),
    "RelativeRankings:worse": Param(lambda c: RANKED["worse"], _rows_of(3)),
    "lines": Param(lambda c: [], lambda n, v: (lines := rules.indexes(n, v)) and _same_length(lines, 3, n)),
    "skipped": Param(lambda c: 0, rules.integer(0)),
    "source": Param(lambda c: None, rules.text(optional=True)),
    "indices": Param(lambda c: [0, 2], lambda n, v: rules.indexes(n, v, below=3)),
    # bert-score's class (its own names)
    "BERTScorer:idf_sents": Param(lambda c: None, _optional(_texts)),
    "compute_idf:sents": Param(lambda c: [REFERENCE, "A dog ran."], _texts),
    "plot_example:reference": Param(lambda c: REFERENCE, lambda n, v: check_text(v, n)),
    "plot_example:fname": Param(lambda c: c.folder() + ".png", rules.path()),
}


def param(door: str, name: str) -> Param:
    """The parameter's entry, or a failure asking for one."""
    for key in (f"{door}:{name}", f"{door.split('.')[-1]}:{name}", f"{door.split('.')[0]}:{name}", name):
        if key in VALID:
            return VALID[key]
    if name in SETTINGS:
        return Param(lambda c: SETTINGS[name].default, RULES[name])
    pytest.fail(f"{door}({name}=...): the sweep does not know this parameter: add its valid value and rule to VALID")


#: Arguments some doors always get (the model), unless swept.
MODEL = ("BERTScore", "bert_score", "pairwise_bert_score", "mbr_select", "explain", "corpus_idf", "BatchScorer")
BASE: dict[str, Callable[[Ctx], dict[str, Any]]] = {
    **{door: (lambda c: {"model_name_or_path": c.model}) for door in MODEL},
    "score": lambda c: {"model_type": c.model},
    "tune_layers": lambda c: {"bootstrap": 20},
    "tune_layers_on_rankings": lambda c: {"bootstrap": 20},
    "tune_from_scores": lambda c: {"bootstrap": 20},
}


@dataclasses.dataclass(frozen=True)
class Door:
    """One door: its name, how to get the callable, and its parameters (name -> required)."""

    name: str
    get: Callable[[Ctx], Callable[..., Any]]
    params: dict[str, bool]


def _parameters(fn: Callable[..., Any], door: str, skip_self: bool) -> dict[str, bool]:
    out: dict[str, bool] = {}
    items = list(inspect.signature(fn).parameters.values())
    for p in items[1:] if skip_self else items:
        if p.kind is p.VAR_POSITIONAL or (p.kind is p.VAR_KEYWORD and door in TORCHMETRICS_KWARGS):
            continue
        if p.kind is p.VAR_KEYWORD:
            assert p.name in SETTINGS_KWARGS, f"{door}(**{p.name}): say in the sweep what it takes"
            out.update({s: False for s in [*SETTINGS, *EXTRA_KWARGS.get(door, ())] if s not in out})
        else:
            out[p.name] = p.default is p.empty
    return out


#: The folders whose every exported name is a user's door.
USER_FOLDERS = frozenset({"engines", "explanations", "corpus", "comparison", "tuning"})


def public() -> dict[str, Any]:
    """The root's names and those of the folders its moved names live in (all of a user's folder's names; of
    `models`, whose other names serve the layers above it, the moved one alone)."""
    names = {name: getattr(bertscore_tm, name) for name in bertscore_tm.__all__}
    for name, folder in bertscore_tm.MOVED.items():
        package = importlib.import_module(f"bertscore_tm.{folder}")
        names[name] = getattr(package, name)
        if folder in USER_FOLDERS:
            names.update({other: getattr(package, other) for other in package.__all__})
    return names


def doors() -> list[Door]:
    """Every door of the public names: its functions, its classes but the results, their public methods."""
    found = []
    for name, obj in public().items():
        if (isinstance(obj, type) and issubclass(obj, BaseException)) or not callable(obj):
            continue  # the errors (their own test below), the constants
        if not isinstance(obj, type) or name not in RESULTS:
            found.append(Door(name, lambda c, obj=obj: obj, _parameters(obj, name, False)))
        if not isinstance(obj, type):
            continue
        for attr, value in vars(obj).items():
            door = f"{name}.{attr}"
            if (attr.startswith("_") and attr != "__call__") or attr in PROTOCOL:
                continue
            if isinstance(value, (staticmethod, classmethod)):
                found.append(
                    Door(door, lambda c, o=obj, a=attr: getattr(o, a), _parameters(getattr(obj, attr), door, False))
                )
            elif inspect.isfunction(value):
                found.append(
                    Door(door, lambda c, n=name, a=attr: getattr(instance(c, n), a), _parameters(value, door, True))
                )
        for attr, method in ATTRIBUTES.get(name, {}).items():
            door = f"{name}.{attr}"
            found.append(
                Door(door, lambda c, n=name, a=attr: getattr(instance(c, n), a), _parameters(method, door, True))
            )
    return found


def instance(c: Ctx, cls: str) -> Any:
    """A valid object of a class whose methods are swept (made afresh where a method may change it)."""
    if cls == "BERTScore":
        metric = c.metric()
        metric.reset()
        return metric
    made: dict[str, Callable[[], Any]] = {
        "BatchScorer": lambda: bertscore_tm.BatchScorer(c.model),
        "BERTScorer": lambda: bertscore_tm.BERTScorer(model_type=c.model),
        "Judgements": lambda: Judgements(**ROWS),
        "RelativeRankings": lambda: RelativeRankings(**RANKED),
        "LayerTuning": lambda: tune_from_scores(Judgements(**ROWS), c.layer_scores(), bootstrap=20),
        "Scores": lambda: _scores(c.metric()),
        "PairExplanation": lambda: c.metric().explain(CANDIDATE, REFERENCE),
    }
    assert cls in made, f"the sweep has no valid {cls} object: add one to instance()"
    return c.once(cls, made[cls])


def _scores(metric: bertscore_tm.BERTScore) -> bertscore_tm.Scores:
    metric.update([CANDIDATE], [REFERENCE])
    scores = metric.compute_scores()
    metric.reset()
    return scores


def names(err: BaseException, name: str, aliases: tuple[str, ...]) -> bool:
    """Whether `err` names the argument `name` (or an alias): its field, or its message."""
    wanted = (name, *aliases)
    return getattr(err, "argument", None) in wanted or any(
        re.search(rf"\b{re.escape(w)}\b", str(err)) is not None for w in wanted
    )


def accepted(rule: Rule, name: str, value: object) -> bool:
    try:
        rule(name, value)
    except BERTScoreError:
        return False
    return True


def used(result: Any) -> None:
    """Use a door's result, so that one accepted and broken fails here rather than later."""
    if isinstance(result, bertscore_tm.BERTScore):
        result.update([CANDIDATE], [REFERENCE])
        result.compute()
    elif isinstance(result, bertscore_tm.BatchScorer):
        result({"candidate": [CANDIDATE], "reference": [REFERENCE]})
    elif isinstance(result, Iterator):
        list(result)


def sweep_call(c: Ctx, door: Door, name: str, kind: str) -> str | None:
    """One call: None where it ends as it should, else what went wrong."""
    arguments = BASE.get(door.name, lambda c: {})(c)
    for other, required in door.params.items():  # the settings' defaults are theirs; every other is given
        if other != name and other not in arguments and (required or other not in SETTINGS):
            arguments[other] = param(door.name, other).valid(c)
    entry = param(door.name, name)
    arguments[name] = CLASSES[kind]()
    shown = f"{door.name}({name}=<{kind}>)"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            used(door.get(c)(**arguments))
    except BERTScoreError as err:
        return None if names(err, name, entry.aliases) else f"{shown}: {type(err).__name__} not naming {name}: {err}"
    except Exception as err:
        return f"{shown}: raw {type(err).__name__}: {str(err)[:200]}"
    if not accepted(entry.rule, name, CLASSES[kind]()):
        return f"{shown}: accepted, but its rule refuses it"
    return None


def sweep(c: Ctx, door: Door) -> list[str]:
    """Every parameter of `door` with every class; a door without parameters called once."""
    if not door.params:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                used(door.get(c)())
        except BERTScoreError:
            return []
        except Exception as err:
            return [f"{door.name}(): raw {type(err).__name__}: {err}"]
        return []
    return [problem for name in door.params for kind in CLASSES if (problem := sweep_call(c, door, name, kind))]


DOORS = {door.name: door for door in doors()}


@pytest.fixture(scope="module")
def ctx(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Ctx]:
    root = tmp_path_factory.mktemp("sweep")
    model = build_tiny_model("distilbert", root)
    table = root / "layers.json"
    table.write_text(json.dumps({str(model): 1}), encoding="utf-8")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("BERTSCORE_TM_LAYERS", str(table))
        patch.chdir(root)  # a file named by a bare string lands there
        yield Ctx(str(model), root)


def _shown(problems: list[str]) -> str:
    return "\n".join(problems).encode("utf-8", "backslashreplace").decode()


@pytest.mark.slow
@pytest.mark.parametrize("door", sorted(DOORS))
def test_every_parameter_of_every_door(ctx: Ctx, door: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # a door given a bare string as a path makes it here, never where another door looks
    problems = sweep(ctx, DOORS[door])
    assert not problems, f"{len(problems)} problem(s):\n" + _shown(problems)


def test_the_doors_are_found() -> None:
    expected = {"BERTScore", "BERTScore.update", "BERTScore.merge_state", "BERTScore.tokenize", "BatchScorer.__call__"}
    assert expected <= set(DOORS)
    assert set(DOORS["BERTScore.update"].params) == {"preds", "target", "indexes", "context"}


# -- the command line -------------------------------------------------------------------------------------------

#: The awkward classes of a command-line value (every value is a string there).
CLI_CLASSES = {
    "blank": "",
    "a space": " ",
    "nan": "nan",
    "inf": "inf",
    "1e200": "1e200",
    "a negative": "-1",
    "0": "0",
    "2**63": str(2**63),
    "a lone surrogate": "a\udcffb",  # what Python makes of an undecodable byte in argv
    "no such path": "no/such/folder/x",
}
#: Classes each kind of option takes (documented results, scored as the Python API scores them and swept there):
#: every other class must end in exit 2 and one error line. An option of no kind here fails, asking for one.
ANY_NAME = frozenset({"nan", "inf", "1e200", "a negative", "0", "2**63", "a lone surrogate"})
ANY_TEXT = ANY_NAME - {"a lone surrogate"} | {"no such path"}
CLI_ACCEPTS: dict[str, frozenset[str]] = {
    # files written: any name the file system takes (a folder made where it is missing)
    **dict.fromkeys(("output", "html", "plot", "file", "add_to_table"), ANY_NAME),
    "checkpoint": ANY_NAME | {"no such path"},
    # free text: anything UTF-8 holds but blank (a language is looked up only where a baseline or a model is)
    **dict.fromkeys(("candidate_prompt", "reference_prompt", "lang", "ignore"), ANY_TEXT),
    # numbers: each the settings' rule
    "num_layers": frozenset({"0"}),  # the embeddings
    "beta": frozenset({"2**63"}),  # beta**2 is finite
    "threshold": frozenset({"0", "a negative", "2**63", "1e200"}),
    "worst": frozenset({"2**63"}),  # the worst tokens shown: all of them
    "seed": frozenset({"0", "2**63"}),  # resamples' seeds are in [0, 2**64)
    "bootstrap": frozenset({"0"}),
    "nthreads": frozenset({"0"}),  # bert-score's --nthreads 0: torch's own setting, as num_threads=0
    "default_layer": frozenset({"0"}),
}
#: The options that take a value but none of the classes (files read, models, columns, choices, counts...).
CLI_REFUSES_ALL = frozenset(
    {
        "cand", "ref", "data", "corpus", "input", "groups", "context", "idf_references", "baseline_path",
        "model", "revision", "device", "candidate_column", "reference_column",
        "context_column", "human_column", "group_by", "system_column", "num_layers", "window_stride", "batch_size",
        "confidence", "shard_size", "group_size", "pairs", "nthreads", "format",
        "long_texts", "dtype", "method", "utility", "criterion", "score",
    }
)  # fmt: skip


def cli_parsers() -> dict[str, Any]:
    """Every command's parser, and bert-score's own (arguments without a command)."""
    import argparse

    from bertscore_tm.cli.app import build_parser
    from bertscore_tm.cli.commands import bert_score

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return {**sub.choices, "(bert-score)": bert_score.build_parser()}


def cli_options(parser: Any) -> list[tuple[str, str]]:
    """(flag, dest) of each option that takes a value."""
    return [
        (a.option_strings[-1], a.dest)
        for a in parser._actions
        if a.option_strings and a.nargs != 0 and a.dest not in ("help", "version")
    ]


def cli_base(c: Ctx, command: str) -> list[str]:
    """A valid command line of `command` (the tiny model, small files), to which one option is added."""
    files = c.once("cli files", lambda: _cli_files(c.root))
    model = ["-m", c.model]
    bases = {
        "score": ["score", "-c", files["cands"], "-r", files["refs"], *model],
        "compare": ["compare", "-r", files["refs"], "-c", files["cands"], files["cands"], *model],
        "show": ["show", "-c", CANDIDATE, "-r", REFERENCE, *model],
        "explain": ["explain", "-c", files["cands"], "-r", files["refs"], *model],
        "baseline": ["baseline", "--corpus", files["cands"], "-o", str(c.root / "baseline.tsv"), *model],
        "pairwise": ["pairwise", "-c", files["cands"], "-r", files["refs"], *model],
        "mbr": ["mbr", "-i", files["cands"], "--group-size", "2", *model],
        "tune-layers": ["tune-layers", "--data", c.judgement_file(), *model],
        "(bert-score)": ["-c", files["cands"], "-r", files["refs"], *model],
    }
    assert command in bases, f"the sweep has no valid command line of {command}: add one to cli_base()"
    return bases[command]


def _cli_files(root: Path) -> dict[str, str]:
    out = {}
    for name, lines in (("cands", [CANDIDATE, "A dog."]), ("refs", [REFERENCE, "A dog ran."])):
        path = root / f"{name}.txt"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        out[name] = str(path)
    return out


def cli_call(argv: list[str], cwd: str) -> tuple[int, str]:
    """The exit code and standard error of one run, in this process (the command line's own code), in `cwd`
    (a fresh folder: a file one run writes is not another's input)."""
    import contextlib
    import io
    import os

    from bertscore_tm.cli import main

    err, out = io.StringIO(), io.StringIO()
    os.makedirs(cwd)
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out), warnings.catch_warnings():
        os.chdir(cwd)
        warnings.simplefilter("ignore")
        try:
            code = main(argv)
        except SystemExit as exit_:  # argparse's own errors
            code = exit_.code if isinstance(exit_.code, int) else 2
        except BaseException as raised:  # a traceback the user would see
            return -1, f"raw {type(raised).__name__}: {raised}"
        finally:
            os.chdir(os.path.dirname(cwd))
    return code, err.getvalue()


def cli_problem(c: Ctx, command: str, flag: str, dest: str, kind: str) -> str | None:
    if kind in CLI_ACCEPTS.get(dest, frozenset()):
        return None  # a documented result, the Python door's (swept above)
    argv = [*cli_base(c, command), flag, CLI_CLASSES[kind]]
    code, stderr = cli_call(argv, c.folder())
    shown = f"{command} {flag} <{kind}>"
    lines = stderr.strip().splitlines()
    if code == -1:
        return f"{shown}: {stderr[:300]}"
    if code == 0:
        return f"{shown}: accepted (exit 0); declare it in CLI_ACCEPTS if that is right"
    if code != 2 or not lines or "Traceback" in stderr or not lines[-1].startswith("bertscore-tm"):
        return f"{shown}: exit {code}, stderr {stderr[-300:]!r}"
    # one line of our own; argparse's errors come after its usage lines, which end before the error line
    if len(lines) > 1 and not lines[0].startswith("usage:"):
        return f"{shown}: {len(lines)} lines on stderr: {stderr[-300:]!r}"
    return None


CLI = cli_parsers()


@pytest.mark.slow
@pytest.mark.parametrize("command", sorted(CLI))
def test_every_option_of_every_command(ctx: Ctx, command: str) -> None:
    problems = []
    for flag, dest in cli_options(CLI[command]):
        if dest not in CLI_ACCEPTS and dest not in CLI_REFUSES_ALL:
            problems.append(f"{command} {flag}: the sweep does not know this option: add it to CLI_ACCEPTS")
            continue
        for kind in CLI_CLASSES:
            if p := cli_problem(ctx, command, flag, dest, kind):
                problems.append(p)
    assert not problems, f"{len(problems)} problem(s):\n" + _shown(problems)
