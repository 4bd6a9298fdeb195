"""The hash code that names a scoring setting, in the reference's format, so papers can report it.

`{model}_L{layers}_{idf|no-idf}_version={v}(hug_trans={transformers})[-rescaled|-custom-rescaled]`, then
`[_{window}][_fast-tokenizer]`, where `{window}` names a long-text setting other than truncation
(`window-w510-s255`: windows of 510 tokens every 255, `bertscore_tm.windows`).
The version field is the one bert-score 0.3.13 writes (it reports itself as 0.3.12): our scores equal that
implementation's, so equal settings give equal codes.
"""

from __future__ import annotations

#: The version string bert-score 0.3.13 puts in its hash codes.
REFERENCE_HASH_VERSION = "0.3.12"


def hash_code(
    model_name: str, num_layers: int, idf: bool, rescale_with_baseline: bool, custom_baseline: bool,
    fast_tokenizer: bool = True, window: str | None = None,
) -> str:
    """The setting's hash code; `_fast-tokenizer` marks the Rust tokenizer (every model but XLM's has one);
    `window` names a long-text setting other than truncation (None: truncation, the reference's codes)."""
    import transformers

    code = f"{model_name}_L{num_layers}{'_idf' if idf else '_no-idf'}_version={REFERENCE_HASH_VERSION}(hug_trans={transformers.__version__})"
    if rescale_with_baseline:
        code += "-custom-rescaled" if custom_baseline else "-rescaled"
    if window is not None:
        code += f"_{window}"
    return code + ("_fast-tokenizer" if fast_tokenizer else "")
