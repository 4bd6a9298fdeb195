"""The hash code that names a scoring setting, in the reference's format, so papers can report it.

`{model}_L{layers}_{idf|no-idf}_version={v}(hug_trans={transformers})[-rescaled|-custom-rescaled][_fast-tokenizer]`.
The version field is the one bert-score 0.3.13 writes (it reports itself as 0.3.12): our scores equal that
implementation's, so equal settings give equal codes. IDF weights given beforehand (``idf_texts``,
``idf_weights``) write ``_idf-custom-{digest}``, the digest naming the weight table, so other weights never share
a code; a model object is named by its config's known name or as ``user-supplied-<Class>``.
"""

from __future__ import annotations

#: The version string bert-score 0.3.13 puts in its hash codes.
REFERENCE_HASH_VERSION = "0.3.12"


def hash_code(
    model_name: str, num_layers: int, idf: bool, rescale_with_baseline: bool, custom_baseline: bool,
    fast_tokenizer: bool = True, custom_idf: str | None = None,
) -> str:
    """The setting's hash code; `_fast-tokenizer` marks the Rust tokenizer (every model but XLM's has one);
    `custom_idf` is the digest of IDF weights given beforehand."""
    import transformers

    weights = ("_idf" + (f"-custom-{custom_idf}" if custom_idf else "")) if idf else "_no-idf"
    code = f"{model_name}_L{num_layers}{weights}_version={REFERENCE_HASH_VERSION}(hug_trans={transformers.__version__})"
    if rescale_with_baseline:
        code += "-custom-rescaled" if custom_baseline else "-rescaled"
    return code + ("_fast-tokenizer" if fast_tokenizer else "")
