"""The hash code that names a scoring setting, so papers can report it: a small structured signature whose
`format()` is the code.

The reference's fields render in the reference's format,
`{model}_L{layers}_{idf|no-idf}_version={v}(hug_trans={transformers})[-rescaled|-custom-rescaled][_fast-tokenizer]`,
and the version field is the one bert-score 0.3.13 writes (it reports itself as 0.3.12): where our scores
equal that implementation's, equal settings give equal codes. The settings the reference does not have, or where our
scores differ from its scores on purpose, are our own fields: each renders after the reference's part as ``_key`` (a
flag) or ``_key=value``, and only when it is not at its default, so the default rendering stays the reference's. Every
setting that changes scores must be a field; a new one is one line, ``name: type = extra("key")``. A per-pair context is
data, not a setting, yet it changes the scores: the flag ``_context`` says some pair had one (which contexts, the code
cannot say). Two of ours sit inside the reference's part, where they qualify its fields: IDF weights given beforehand
(``idf_texts``, ``idf_weights``) write ``_idf-custom-{digest}`` instead of ``_idf``, the digest naming the weight table;
a model object is named by its config's known name, or as ``user-supplied-<Class>`` (with ``-custom-forward`` where a
``forward_fn`` computes its vectors).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import Any

#: The version string bert-score 0.3.13 puts in its hash codes.
REFERENCE_HASH_VERSION = "0.3.12"


def _transformers_version() -> str:
    import transformers

    return transformers.__version__


def extra(key: str, default: Any = None) -> Any:
    """A field of our own: rendered as ``_key`` (True) or ``_key=value`` when it differs from `default`."""
    return field(default=default, metadata={"key": key})


@dataclass(frozen=True)
class HashSignature:
    """Every setting that changes scores. The first fields are the reference's; the `extra` ones are ours.

    >>> sig = HashSignature("roberta-large", 17, idf=False, transformers_version="4.40.0")
    >>> sig.format()
    'roberta-large_L17_no-idf_version=0.3.12(hug_trans=4.40.0)_fast-tokenizer'
    >>> HashSignature("roberta-large", 17, idf=True, rescaled=True, transformers_version="4.40.0",
    ...               max_length=128, model_dtype="bfloat16").format()
    'roberta-large_L17_idf_version=0.3.12(hug_trans=4.40.0)-rescaled_fast-tokenizer_max-len=128_dtype=bfloat16'
    """

    model: str
    num_layers: int
    idf: bool
    rescaled: bool = False
    custom_baseline: bool = False
    fast_tokenizer: bool = True
    transformers_version: str = field(default_factory=_transformers_version)
    #: every layer is scored. Not rendered: the row of layer `num_layers` is the score the code names (equal to
    #: scoring that layer alone), and the reference's code leaves it out too. Kept so that ranks compare it.
    all_layers: bool = False
    #: digest of IDF weights fixed beforehand (idf_texts, idf_weights); None: IDF over the references
    idf_digest: str | None = None
    # -- ours: where the reference has no such setting, or our scores differ from its scores on purpose
    #: texts truncated below the model's own window (None: the model's window, as the reference)
    max_length: int | None = extra("max-len")
    #: the lower-precision compute dtype, "bfloat16" or "float16" (None: float32, exact)
    model_dtype: str | None = extra("dtype")
    #: long texts scored in windows (`bertscore_tm.models.windows`): e.g. "window-w510-s255", windows of 510 tokens
    #: every 255 (None: truncated at the model's window, as the reference)
    window: str | None = extra("long-texts")
    #: F-beta's beta, as a short number ("3"), where F-beta is returned beside P, R and F (None: it is not)
    beta: str | None = extra("beta")
    #: the token mask (``ignore=``): "punctuation", "re:<pattern>" or "callable:<name>" (None: every token counts)
    ignore: str | None = extra("ignore")
    #: the fixed prompts before each candidate and each reference, quoted (None: no prompt)
    candidate_prompt: str | None = extra("cand-prompt")
    reference_prompt: str | None = extra("ref-prompt")
    #: some pair was encoded with a per-pair context (``context=``). The contexts are data, not named; the flag
    #: tells that these scores are not those of the same texts alone (False: no pair had one)
    context: bool = extra("context", False)
    #: a byte-level BPE tokenizer tokenised without the space bert-score puts before each text (code-bert-score's
    #: tokenisation, ``prefix_space=False``)
    no_prefix_space: bool = extra("no-prefix-space", False)

    def format(self) -> str:
        """The hash code: the reference's rendering, then our fields that are not at their defaults."""
        code = (
            f"{self.model}_L{self.num_layers}{self._weights()}"
            f"_version={REFERENCE_HASH_VERSION}(hug_trans={self.transformers_version})"
        )
        if self.rescaled:
            code += "-custom-rescaled" if self.custom_baseline else "-rescaled"
        if self.fast_tokenizer:
            code += "_fast-tokenizer"
        for f in fields(self):
            key = f.metadata.get("key")
            value = getattr(self, f.name)
            if key is None or value == f.default:
                continue
            code += f"_{key}" if value is True else f"_{key}={value}"
        return code

    def _weights(self) -> str:
        if not self.idf:
            return "_no-idf"
        return "_idf" if self.idf_digest is None else f"_idf-custom-{self.idf_digest}"

    def __str__(self) -> str:
        return self.format()


def names_context(contexts: Sequence[str] | None) -> bool:
    """Whether the hash code of scores made with `contexts` (one per pair, or None) gains ``_context``: where some
    context is not blank (a blank context adds nothing, so those scores are the texts' alone).

    >>> names_context(None), names_context(["", "  "]), names_context(["", "def f(): pass"])
    (False, False, True)
    """
    return contexts is not None and any(c.strip() for c in contexts)


def hash_code(
    model_name: str,
    num_layers: int,
    idf: bool,
    rescale_with_baseline: bool,
    custom_baseline: bool,
    fast_tokenizer: bool = True,
) -> str:
    """The reference's hash code for a setting it knows (`get_hash` of bert-score, same arguments)."""
    return HashSignature(
        model_name,
        num_layers,
        idf,
        rescaled=rescale_with_baseline,
        custom_baseline=custom_baseline,
        fast_tokenizer=fast_tokenizer,
    ).format()
