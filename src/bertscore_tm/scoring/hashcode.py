"""The hash code that names a scoring setting, so papers can report it.

The reference's fields render in its format and version string, so that where our scores equal bert-score's,
equal settings give its code. Ours render after it as ``_key`` or ``_key=value``, only off their defaults. Every
setting that changes scores must be a field: ``name: type = extra("key")``."""

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
    """Every setting that changes scores: the reference's fields first, then ours (`extra`).

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
    #: not rendered (the code names layer `num_layers`'s row, as the reference's does), but compared by ranks
    all_layers: bool = False
    #: digest of IDF weights fixed beforehand (``_idf-custom-{digest}``); None: IDF over the references
    idf_digest: str | None = None
    # -- ours: where the reference has no such setting, or our scores differ from its on purpose (None: as it)
    max_length: int | None = extra("max-len")  # texts truncated below the model's own window
    model_dtype: str | None = extra("dtype")  # "bfloat16" or "float16"
    window: str | None = extra("long-texts")  # e.g. "window-w510-s255"
    beta: str | None = extra("beta")  # F-beta returned beside P, R and F, as a short number
    ignore: str | None = extra("ignore")  # "punctuation", "re:<pattern>" or "callable:<name>"
    candidate_prompt: str | None = extra("cand-prompt")  # quoted
    reference_prompt: str | None = extra("ref-prompt")
    #: some pair had a per-pair context: data, not a setting, so unnamed, but its scores are not the texts' alone
    context: bool = extra("context", False)
    #: a byte-level BPE tokenizer without bert-score's leading space (``prefix_space=False``)
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
    """Whether scores made with `contexts` gain ``_context``: a blank context adds nothing."""
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
