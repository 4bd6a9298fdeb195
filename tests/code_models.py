"""Real code for the CodeBERTScore tests: functions of Python's own standard library (their docstrings as the
natural-language source, the rest as the code), and a small RoBERTa whose byte-level BPE tokenizer is trained here
with `tokenizers` on those modules' sources (so its pieces are code pieces: ``Ġself``, ``):``, ``ĊĠĠĠ``...).

The model is random (seeded) and tiny (hidden size 32, 4 blocks, a window of 512 tokens); the tokenizer is saved
with ``add_prefix_space=True``, as code-bert-score 0.4.1 needs it to tokenise as bertscore-tm does (it calls a
RoBERTa fast tokenizer without the flag). Nothing is downloaded.
"""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path
from typing import Any

#: Pure-Python standard library modules whose functions serve as code.
MODULES = ("textwrap", "shlex", "fnmatch", "string", "posixpath", "glob", "colorsys", "calendar", "html")
WINDOW = 512


def module_sources() -> list[str]:
    return [inspect.getsource(importlib.import_module(name)) for name in MODULES]


def stdlib_functions(max_lines: int = 25) -> list[tuple[str, str]]:
    """(docstring, code without the docstring) of each top-level function with a docstring and at most
    `max_lines` lines of code, in module order."""
    out = []
    for source in module_sources():
        lines = source.splitlines()
        for node in ast.parse(source).body:
            if not isinstance(node, ast.FunctionDef) or ast.get_docstring(node) is None:
                continue
            doc_node = node.body[0]
            assert doc_node.end_lineno is not None and node.end_lineno is not None
            code = lines[node.lineno - 1 : doc_node.lineno - 1] + lines[doc_node.end_lineno : node.end_lineno]
            if 3 <= len(code) <= max_lines:
                out.append((" ".join(str(ast.get_docstring(node)).split()), "\n".join(code)))
    return out


def build_code_roberta(root: Path, window: int = WINDOW, prefix_space: bool = True) -> Path:
    """Write the tiny code RoBERTa and its trained tokenizer to `root / "tiny-code-roberta"`; return it. A smaller
    `window` makes ordinary functions long texts; `prefix_space=False` saves the tokenizer as the neulab models'
    are (no prefix space), in `tiny-code-roberta-no-prefix-space`."""
    import torch
    from tokenizers import Tokenizer, pre_tokenizers, trainers
    from tokenizers.models import BPE
    from transformers import AutoModel, RobertaConfig, RobertaTokenizer

    out = Path(root) / ("tiny-code-roberta" if prefix_space else "tiny-code-roberta-no-prefix-space")
    out.mkdir(parents=True, exist_ok=True)
    tok = Tokenizer(BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(
        vocab_size=2000,
        special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(module_sources(), trainer)
    import json

    model: dict[str, Any] = json.loads(tok.to_str())["model"]
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in model["merges"]]
    tokenizer = RobertaTokenizer(
        vocab=model["vocab"], merges=merges, model_max_length=window, add_prefix_space=prefix_space
    )
    tokenizer.save_pretrained(str(out))
    config = RobertaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        num_hidden_layers=4,
        num_attention_heads=2,
        intermediate_size=37,
        max_position_embeddings=window + 2,
        pad_token_id=1,
        bos_token_id=0,
        eos_token_id=2,
        type_vocab_size=1,
    )
    torch.manual_seed(0)
    encoder = AutoModel.from_config(config)
    with torch.no_grad():  # norms other than 1 and 0, as trained models have
        for name, param in encoder.named_parameters():
            if "norm" in name.lower() and name.endswith("weight"):
                param.uniform_(0.5, 1.5)
            elif "norm" in name.lower() and name.endswith("bias"):
                param.normal_(0.0, 0.1)
    encoder.eval().save_pretrained(str(out))
    return out
