"""Every constructor argument of `BERTScore`, declared once in `SETTINGS` and checked before any model loads, so
a wrong setting fails at once naming the argument rather than deep in transformers or as an odd score. Limits
that need the model (its depth, its window) are checked when it loads; torch is imported only for dtypes and
devices."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, get_args

from bertscore_tm.errors import ArgumentValueError
from bertscore_tm.settings.rules import (
    MODEL_DTYPES as MODEL_DTYPES,  # the dtype names, re-exported with the other choices
)
from bertscore_tm.settings.rules import (
    SQUARE_ROOT_OF_MAX,
    Rule,
    boolean,
    choice,
    device,
    finite_number,
    function,
    integer,
    model_dtype,
    module,
    path,
    text,
    texts,
    token_mask,
    tokenizer_object,
    weight_mapping,
)
from bertscore_tm.settings.texts import check_texts

if TYPE_CHECKING:
    import torch

#: What ``ignore`` takes: "punctuation", a regular expression (a string or a compiled pattern) over the pieces,
#: or a callable taking a piece and returning whether to ignore it.
IgnoreRule = str | re.Pattern[str] | Callable[[str], bool]
#: `forward_fn(model, input_ids, attention_mask) -> Tensor`: [B, T, D], or [B, T, L + 1, D] with all_layers.
ForwardFn = Callable[["torch.nn.Module", "torch.Tensor", "torch.Tensor"], "torch.Tensor"]

#: The values of ``reduction``: per-pair scores, or their means.
Reduction = Literal["none", "mean"]
#: The values of ``output``: which score to return alone.
OutputName = Literal["precision", "recall", "f1", "f_beta"]

#: The values of ``long_texts``: cut texts at the model's window (the reference), score them in windows, or in
#: CodeBERTScore's windows (SLED's rule, as `code-bert-score` embeds long code).
LongTexts = Literal["truncate", "window", "sled"]

REDUCTIONS: tuple[str, ...] = get_args(Reduction)
LONG_TEXTS: tuple[str, ...] = get_args(LongTexts)
OUTPUTS: tuple[str, ...] = get_args(OutputName)

#: The most resamples (or shuffles) an interval or a paired test may draw (`bertscore_tm.comparison.significance`, and
#: ``--bootstrap`` on the command line): their means take 8 bytes each per system, so 8 MB a system at most.
#: The usual 1000 to 10,000 are far below it; the smallest p-value is then about 1e-6.
MAX_RESAMPLES = 1_000_000

#: Pairs (or lines per system) per shard of a resumable run by default (`score_resumable`, `score_stream`,
#: ``score``/``compare --shard-size``): a kill loses at most one shard's work, and shards this large batch as
#: fully as a run without a checkpoint (docs/corpus-scale.md, "What a checkpoint costs").
SHARD_SIZE = 10_000
#: Candidates (matrix rows) per shard of a resumable all-pairs run by default (`pairwise_resumable`,
#: ``pairwise --shard-size``): each row is scored against every reference, so a row is much more work than a pair.
ROW_SHARD_SIZE = 1000


@dataclass(frozen=True)
class Setting:
    """One setting, declared once: the Metric's signature, the command line and the docs' table (docs/metric.md)
    are read from here, or checked against it by the tests. A dtype default is a name, so no torch is needed."""

    rule: Rule
    default: object
    help: str
    default_means: str = ""
    see: str = ""
    #: the command line's spelling, where a command takes the setting ("" where none does)
    flag: str = ""
    #: the value as the settings object keeps it, from a value the rule accepted (None: as given)
    convert: Callable[[Any], Any] | None = None


#: Every constructor argument of BERTScore, in the signature's order (torchmetrics' own are left to it).
SETTINGS: dict[str, Setting] = {
    "model_name_or_path": Setting(
        path(optional=True),
        None,
        "a local model directory, a name already in the local Hugging Face cache, or "
        '`"sentence-transformers/all-MiniLM-L6-v2"` (the packaged MiniLM; `bertscore_tm.PACKAGED_MINILM`). '
        "Nothing is ever downloaded",
        "the default model of `lang`",
        "[Models](models.md)",
        flag="-m/--model",
    ),
    "num_layers": Setting(
        integer(0, optional=True, why=" (0 is the embedding layer)"),
        None,
        "score with the output of this layer (0 = the embedding layer); the model is cut after it",
        "the model's tuned layer",
        "[Models](models.md#default-layer-per-model)",
        flag="-l/--num-layers",
    ),
    "all_layers": Setting(
        boolean, False, "score with every layer: each output gains a leading `L + 1` axis (embedding layer included)"
    ),
    "lang": Setting(
        text(optional=True),
        "en",
        "language code: picks the default model and the packaged rescale baseline",
        see="[Models](models.md#default-model-per-language)",
        flag="--lang",
    ),
    "idf": Setting(
        boolean,
        False,
        "weigh tokens by inverse document frequency over all references (of every rank), or over `idf_texts`, or "
        "with `idf_weights`",
        see="[Semantics](semantics.md#weights-precision-recall-f1)",
        flag="--idf",
    ),
    "rescale_with_baseline": Setting(
        boolean,
        False,
        "map each score through (x - b) / (1 - b) with the baseline of (`lang`, model) or of `baseline_path`",
        see="[Models](models.md#rescale-baselines)",
        flag="--rescale-with-baseline",
    ),
    "baseline_path": Setting(
        path(optional=True),
        None,
        "a `LAYER,P,R,F` baseline file of your own; needs `rescale_with_baseline=True` (alone it is an error, "
        "never silently ignored)",
        see="[CLI: baseline](cli.md#baseline)",
        flag="--baseline-path",
    ),
    "batch_size": Setting(
        integer(1, optional=True),
        None,
        "a cap on texts per forward pass; by default the token budget alone sizes the batches",
        flag="-b/--batch-size",
    ),
    "max_length": Setting(
        integer(2, optional=True, why=" (room for the special tokens)"),
        None,
        "the window in tokens, special tokens included: longer texts are truncated to it, or windowed with "
        '`long_texts="window"`',
        "the model's window",
        "[Long texts](long-texts.md)",
    ),
    "long_texts": Setting(
        choice(LONG_TEXTS),
        "truncate",
        '`"truncate"` (the reference\'s semantics), `"window"`: a longer text is embedded in overlapping windows '
        'and every token scored, or `"sled"`: in the windows CodeBERTScore embeds long code in',
        see="[Long texts](long-texts.md)",
        flag="--long-texts",
    ),
    "window_stride": Setting(
        integer(1, optional=True, why=" (and below the window's size)"),
        None,
        "tokens between the starts of consecutive windows",
        "half the window",
        "[Long texts](long-texts.md)",
        flag="--window-stride",
    ),
    "device": Setting(
        device,
        None,
        "where the model runs and the states live; by default wherever `metric.to(...)` puts the metric",
        "follow the metric",
        flag="--device",
    ),
    "model_dtype": Setting(
        model_dtype,
        "float32",
        "the model's compute dtype: float32 is exact; `torch.bfloat16` / `torch.float16` are opt-in and inexact "
        "(F1 within about 1e-3)",
        see="[Precision](#precision-float32-bfloat16-float16)",
        flag="--dtype",
    ),
    "reduction": Setting(choice(REDUCTIONS), "none", '`"none"`: one score per pair; `"mean"`: their means'),
    "output": Setting(
        choice(OUTPUTS, optional=True),
        None,
        '`"precision"`, `"recall"` or `"f1"`: return that tensor alone (so Lightning can log the metric object); '
        "`None` returns the dict",
        see="[Lightning](lightning.md)",
    ),
    "return_hash": Setting(
        boolean, False, 'add the setting\'s hash code to the dict, under `"hash"`', see="[Hash code](#hash-code)"
    ),
    "verbose": Setting(boolean, False, "a progress bar while embedding", flag="--progress"),
    "embedding_cache_mb": Setting(
        integer(0, why=" (MiB of cached vectors; 0 turns the cache off)"),
        0,
        "keep the vectors of texts already embedded, up to this many MiB, across `compute()` and `reset()`: a text "
        "scored again is never embedded again; scores unchanged",
        "off",
        "[Corpus scale](corpus-scale.md#the-embedding-cache)",
    ),
    "compile_model": Setting(
        boolean,
        False,
        "run a loaded model's forward pass through `torch.compile` (opt-in, inexact)",
        see="[compile_model](#compile_model)",
        flag="--compile",
    ),
    "model": Setting(
        module,
        None,
        "a model object of your own (any Hugging Face encoder) in place of `model_name_or_path`, scored through a "
        "view that never modifies, casts or moves it",
        see="[Your own model](own-model.md)",
    ),
    "tokenizer": Setting(
        tokenizer_object,
        None,
        "the tokenizer object of `model` (required with it, refused without it)",
        see="[Your own model](own-model.md)",
    ),
    "forward_fn": Setting(
        function,
        None,
        "`forward_fn(model, input_ids, attention_mask)` returning `[B, T, D]` (`[B, T, L + 1, D]` with "
        "`all_layers`), for a `model` whose forward is not the standard one",
        see="[Your own model](own-model.md#a-forward-of-your-own-forward_fn)",
    ),
    "idf_texts": Setting(
        texts,
        None,
        "with `idf=True`: count document frequencies in these texts instead of the references (bert-score's "
        "`idf_sents`)",
        see="[Your own model](own-model.md#idf-from-a-corpus-or-from-saved-weights)",
        convert=lambda value: None if value is None else check_texts(value, "idf_texts"),  # one string: one text
    ),
    "idf_weights": Setting(
        weight_mapping,
        None,
        "with `idf=True`: a mapping token id -> weight (`metric.idf_weights()` of another metric, or bert-score's "
        "`idf_dict`)",
        see="[Your own model](own-model.md#idf-from-a-corpus-or-from-saved-weights)",
    ),
    "beta": Setting(
        finite_number(
            optional=True, positive=True, why=" (recall weighs beta times precision)", below=SQUARE_ROOT_OF_MAX
        ),
        None,
        "also return F-beta, (1 + beta^2) P R / (beta^2 P + R), under `f_beta` (`beta=3`: CodeBERTScore's F3); "
        "the best reference is then the one with the highest F-beta",
        "no F-beta",
        "[Semantics](semantics.md#f-beta)",
        flag="--beta",
    ),
    "ignore": Setting(
        token_mask,
        None,
        'tokens encoded but left out of the matching on both sides and of the weights: `"punctuation"` '
        "(CodeBERTScore's `no_punc` rule), a regular expression matching a whole piece, or a callable taking a "
        "piece and returning True to ignore it",
        "every token counts",
        "[Semantics](semantics.md#token-masks)",
        flag="--ignore",
    ),
    "candidate_prompt": Setting(
        text(optional=True),
        None,
        'a fixed prompt before every candidate (E5\'s `"query: "`): encoded with it in one forward pass, left out '
        "of the matching, the weights and the IDF counts",
        "none",
        "[Semantics](semantics.md#prompts)",
        flag="--candidate-prompt",
    ),
    "reference_prompt": Setting(
        text(optional=True),
        None,
        "a fixed prompt before every reference, as `candidate_prompt`",
        "none",
        "[Semantics](semantics.md#prompts)",
        flag="--reference-prompt",
    ),
    "revision": Setting(
        text(optional=True),
        None,
        "the commit, branch or tag of a Hugging Face Hub model to score with (the commit used is "
        "`metric.model_commit`)",
        "the Hub's main branch",
        "[Models](models.md#downloads-offline-use-and-the-cache)",
        flag="--revision",
    ),
    "local_files_only": Setting(
        boolean,
        False,
        "never touch the network: a Hub model must be in the local cache already (as `HF_HUB_OFFLINE=1`)",
        see="[Models](models.md#downloads-offline-use-and-the-cache)",
        flag="--offline",
    ),
    "trust_remote_code": Setting(
        boolean,
        False,
        "run the code a Hub model ships in its repository (models that are not transformers' own need it)",
        see="[Models](models.md#downloads-offline-use-and-the-cache)",
        flag="--trust-remote-code",
    ),
    "use_fast_tokenizer": Setting(
        boolean,
        True,
        "load the model's fast (Rust) tokenizer; the hash code ends in `_fast-tokenizer` only then, as "
        "bert-score's does (under transformers 5 every tokenizer is the fast one, so only the code changes)",
        see="[Migrating](migrating.md)",
    ),
    "prefix_space": Setting(
        boolean,
        True,
        "a byte-level BPE tokenizer (RoBERTa, GPT-2, CodeBERT) gets a space before each text, as bert-score and "
        "its baselines give it; False tokenises as the tokenizer's own files say, as code-bert-score does (its "
        "published figures); the hash code then ends in `_no-prefix-space`",
        see="[Code](code.md#the-prefix-space)",
        flag="--no-prefix-space",
    ),
    "num_threads": Setting(
        integer(0, optional=True),
        None,
        "CPU threads torch uses while this metric embeds and matches (bert-score's `nthreads`, torchmetrics' "
        "`num_threads`: speed only, never the scores); 0 as None",
        "torch's own setting",
        convert=lambda n: n or None,
    ),
}

#: One rule per constructor argument of BERTScore (torchmetrics' own keyword arguments are left to it).
RULES: dict[str, Rule] = {name: setting.rule for name, setting in SETTINGS.items()}


def default(name: str) -> Any:
    """The declared default of setting `name` (a dtype by its name).

    >>> default("long_texts"), default("model_dtype")
    ('truncate', 'float32')
    """
    return SETTINGS[name].default


def settings_table() -> str:
    """The Markdown table of every setting (docs/metric.md shows it, made at docs build time)."""
    rows = ["| argument | default | what it does | see |", "| --- | --- | --- | --- |"]
    for name, s in SETTINGS.items():
        value = f"`torch.{s.default}`" if name == "model_dtype" else f"`{s.default!r}`".replace("'", '"')
        shown = f"{value}: {s.default_means}" if s.default_means else value
        rows.append(f"| `{name}` | {shown} | {s.help} | {s.see} |")
    return "\n".join(rows)


def _refused(
    arguments: Mapping[str, object], argument: str, other: str, allowed: str, message: str
) -> ArgumentValueError:
    """`argument` refused beside `other`: the error of every rule about arguments together."""
    return ArgumentValueError(
        message, argument=argument, allowed=allowed, value=arguments.get(argument), others=(other,)
    )


def _check_together(arguments: Mapping[str, object]) -> None:
    """The rules about arguments together, in order, run after every argument passed its own rule."""
    model, tokenizer, output = arguments.get("model"), arguments.get("tokenizer"), arguments.get("output")
    both_given = "model_name_or_path" in arguments and "lang" in arguments
    if both_given and model is None and arguments["model_name_or_path"] is None and arguments["lang"] is None:
        message = "Pass model_name_or_path or lang (which picks the language's default model)"
        raise _refused(arguments, "model_name_or_path", "lang", "a model, or lang", message)
    if model is not None and arguments.get("model_name_or_path") is not None:
        message = (
            f"Pass model_name_or_path={str(arguments['model_name_or_path'])!r} or a model object (model=...), not "
            "both: the metric scores with one model"
        )
        raise _refused(arguments, "model", "model_name_or_path", "None when model_name_or_path is given", message)
    if model is not None and tokenizer is None:
        message = (
            "model= needs its tokenizer: pass tokenizer=<the model's tokenizer object> too (e.g. "
            "AutoTokenizer.from_pretrained(...) of the same checkpoint)"
        )
        raise _refused(arguments, "tokenizer", "model", "a tokenizer object when model is given", message)
    if tokenizer is not None and model is None:
        message = (
            "tokenizer= goes with model=: pass the model object too (a model from model_name_or_path brings its own "
            "tokenizer)"
        )
        raise _refused(arguments, "tokenizer", "model", "None unless model is given", message)
    if arguments.get("forward_fn") is not None and model is None:
        message = (
            "forward_fn runs a model object: pass model= and tokenizer= too (load the model yourself, e.g. "
            "AutoModel.from_pretrained(path), to use forward_fn with a model on disk)"
        )
        raise _refused(arguments, "forward_fn", "model", "None unless model is given", message)
    given = [name for name in ("idf_texts", "idf_weights") if arguments.get(name) is not None]
    if len(given) == 2:
        message = (
            "Pass idf_texts (a corpus to count document frequencies in) or idf_weights (weights already made), not both"
        )
        raise _refused(arguments, "idf_weights", "idf_texts", "None when idf_texts is given", message)
    if given and not arguments.get("idf"):
        message = (
            f"{given[0]} is given but idf is False, so it would be ignored: pass idf=True to weigh tokens with it, "
            f"or leave out {given[0]}"
        )
        raise _refused(arguments, given[0], "idf", "None unless idf=True", message)
    if output is not None and arguments.get("return_hash"):
        message = "return_hash needs the dict output (output=None); the code is also at metric.hash_code"
        raise _refused(arguments, "return_hash", "output", "False when output is given", message)
    if arguments.get("baseline_path") is not None and not arguments.get("rescale_with_baseline"):
        message = (
            f"baseline_path={str(arguments['baseline_path'])!r} is given but rescale_with_baseline is False, so the "
            "file would be ignored: pass rescale_with_baseline=True to rescale with it, or leave out baseline_path"
        )
        raise _refused(
            arguments, "baseline_path", "rescale_with_baseline", "None unless rescale_with_baseline=True", message
        )
    stride, mode = arguments.get("window_stride"), arguments.get("long_texts", default("long_texts"))
    if stride is not None and mode != "window":
        message = f"window_stride={stride} applies only to long_texts='window' (long_texts is {mode!r})"
        raise _refused(arguments, "window_stride", "long_texts", "None unless long_texts='window'", message)
    if arguments.get("compile_model") and model is not None:
        message = (
            "compile_model compiles a model bertscore-tm loads; a model object of yours runs as you pass it: "
            "compile it yourself (torch.compile(model)) before passing it"
        )
        raise _refused(arguments, "compile_model", "model", "False when model is given", message)
    if output == "f_beta" and arguments.get("beta") is None:
        message = (
            "output='f_beta' returns F-beta, which needs beta: pass beta=<a number > 0> (beta=3 for "
            "CodeBERTScore's F3), or another output"
        )
        raise _refused(arguments, "output", "beta", "'precision', 'recall' or 'f1' unless beta is given", message)


def validate_arguments(arguments: Mapping[str, object]) -> None:
    """Check BERTScore constructor arguments by name, then together, before anything is loaded; names without
    a rule (torchmetrics' own) are left to their owner. A wrong type is an `ArgumentTypeError` (a TypeError),
    a bad value or combination an `ArgumentValueError` (a ValueError).

    >>> validate_arguments({"num_layers": 5, "idf": True, "reduction": "mean"})
    >>> validate_arguments({"num_layers": 5.5})
    Traceback (most recent call last):
    ...
    bertscore_tm.errors.ArgumentTypeError: num_layers must be an integer or None, got float 5.5
    >>> validate_arguments({"batch_size": 0})
    Traceback (most recent call last):
    ...
    bertscore_tm.errors.ArgumentValueError: batch_size must be an integer >= 1 or None, got 0
    """
    for name, value in arguments.items():
        rule = RULES.get(name)
        if rule is not None:
            rule(name, value)
    _check_together(arguments)
