"""Bring your own model: score with a model object the user owns (maybe mid-training) and leave it exactly as
it was. It runs through an eval-mode *view* that shares its tensors, looked up at every call, so the user's
training shows but nothing of theirs is cut, cast, moved or switched; docs/own-model.md has the rules."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from itertools import chain
from types import SimpleNamespace
from typing import Any

import torch
from torch import Tensor, nn

from bertscore_tm.errors import ArgumentValueError, ModelSetupError
from bertscore_tm.models.loading import cut_to_layers, embedding_rows, encoder_of, model_depth
from bertscore_tm.models.model_family import hidden_size as family_hidden_size
from bertscore_tm.models.registry import is_known_model
from bertscore_tm.settings.arguments import ForwardFn


def eval_view(module: nn.Module) -> nn.Module:
    """An eval-mode twin of `module` whose modules (and config, which cutting ALBERT changes) are copies and
    whose parameters and buffers are the very same tensors.

    >>> block = nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.5)).train()
    >>> view = eval_view(block)
    >>> view[0].weight is block[0].weight, view.training, block.training, block[1].training
    (True, False, True, True)
    """
    shared: dict[int, Any] = {id(t): t for t in (*module.parameters(), *module.buffers())}
    return copy.deepcopy(module, shared).eval()


def _tensors(module: nn.Module) -> Iterator[tuple[str, Tensor]]:
    return chain(module.named_parameters(remove_duplicate=False), module.named_buffers(remove_duplicate=False))


class _Runner(nn.Module):
    """The view's forward (or the user's forward_fn over the view), as one module `functional_call` runs."""

    def __init__(self, view: nn.Module, forward_fn: ForwardFn | None) -> None:
        super().__init__()
        self.view = view
        self.forward_fn = forward_fn
        self.names = frozenset(name for name, _ in _tensors(view))

    def run(self, encoder: nn.Module, *args: Any) -> Any:
        """Called on `encoder`'s current tensors, so a move or a training step of the user's model shows."""
        tensors = {f"view.{name}": t for name, t in _tensors(encoder) if name in self.names}
        return torch.func.functional_call(self, tensors, args, strict=False)

    def forward(self, input_ids: Tensor, attention_mask: Tensor, output_hidden_states: bool = False) -> Any:
        if self.forward_fn is None:
            return self.view(
                input_ids=input_ids, attention_mask=attention_mask, output_hidden_states=output_hidden_states
            )
        return self.forward_fn(self.view, input_ids, attention_mask)


class UserModel:
    """The user's object (`owner`) and its eval-mode `view`, called like a Hugging Face encoder by the embedder."""

    def __init__(self, owner: nn.Module, view: nn.Module, forward_fn: ForwardFn | None, hidden_size: int) -> None:
        self.owner = owner
        self.view = view
        self.forward_fn = forward_fn
        self.hidden_size = hidden_size
        self._encoder = encoder_of(owner)  # the module the view was copied from: its tensors, by name
        self._runner = _Runner(view, forward_fn)

    def __call__(self, input_ids: Tensor, attention_mask: Tensor, output_hidden_states: bool = False) -> Any:
        out = self._runner.run(self._encoder, input_ids, attention_mask, output_hidden_states)
        if self.forward_fn is None:
            return out
        check_forward_output(out, tuple(input_ids.shape), output_hidden_states, self.hidden_size)
        return SimpleNamespace(hidden_states=out.unbind(2)) if output_hidden_states else (out,)

    def parameters(self) -> Iterator[nn.Parameter]:
        return self._encoder.parameters()


def check_forward_output(out: object, ids_shape: tuple[int, ...], all_layers: bool, hidden_size: int | None) -> None:
    """A clear error unless `out` is a float tensor [B, T, D] ([B, T, L + 1, D] with all_layers) for ids [B, T].

    >>> check_forward_output(torch.zeros(2, 5, 8), (2, 5), all_layers=False, hidden_size=8)
    """
    layers = "L + 1, " if all_layers else ""
    want = f"[B, T, {layers}D] (batch, tokens, {'layers, ' if all_layers else ''}hidden size"
    example = f"[{ids_shape[0]}, {ids_shape[1]}, {layers}{hidden_size or 'D'}]"
    if isinstance(out, Tensor):
        got = f"a {'' if out.is_floating_point() else 'non-float '}tensor of shape {list(out.shape)}"
        fits = out.is_floating_point() and out.dim() == (4 if all_layers else 3) and tuple(out.shape[:2]) == ids_shape
        if fits and (hidden_size is None or out.shape[-1] == hidden_size):
            return
    else:
        got = f"a {type(out).__name__}"
    raise ModelSetupError(
        f"forward_fn must return a float tensor {want}: {example} here, for input_ids of shape "
        f"[{ids_shape[0]}, {ids_shape[1]}]); it returned {got}",
        argument="forward_fn",
    )


def known_model_name(model: nn.Module) -> str | None:
    """The name in the model's config (``config.name_or_path``) where `configs/models.json` knows it, else None."""
    name = str(getattr(getattr(encoder_of(model), "config", None), "name_or_path", "") or "")
    return name if name and is_known_model(name) else None


def hash_model_name(model: nn.Module, forward_fn: ForwardFn | None) -> str:
    """The model's name in the hash code, ``-custom-forward`` appended with a forward_fn (another forward)."""
    name = known_model_name(model) or f"user-supplied-{type(model).__name__}"
    return name + ("-custom-forward" if forward_fn is not None else "")


def depth_of(encoder: nn.Module) -> int | None:
    """How many blocks the encoder has: counted where its blocks are found, else its config's layer count."""
    try:
        return model_depth(encoder)
    except ValueError:
        layers = getattr(getattr(encoder, "config", None), "num_hidden_layers", None)
        return layers if isinstance(layers, int) else None


def check_vocabulary(encoder: nn.Module, tokenizer: Any) -> None:
    """A clear error when the tokenizer has more token ids than the model's embedding table has rows."""
    rows = embedding_rows(encoder)
    if rows and len(tokenizer) > rows:
        raise ModelSetupError(
            f"The tokenizer has {len(tokenizer)} token ids but the model's embedding table has {rows} rows: its "
            "ids past the table would index out of it. Pass the tokenizer the model was trained with (or resize "
            "the model's embeddings to the tokenizer first).",
            argument="tokenizer",
        )


def _probe(encoder: nn.Module, view: nn.Module, forward_fn: ForwardFn, tokenizer: Any, all_layers: bool) -> Tensor:
    """forward_fn's output for special tokens alone: its shape tells the hidden size and fails before any text."""
    ids = list(tokenizer("", add_special_tokens=True)["input_ids"]) or [tokenizer.pad_token_id or 0]
    device = next(encoder.parameters(), torch.zeros(0)).device
    input_ids = torch.tensor([ids], dtype=torch.long, device=device)
    mask = torch.ones_like(input_ids)
    with torch.inference_mode():
        out = _Runner(view, forward_fn).run(encoder, input_ids, mask)
    check_forward_output(out, tuple(input_ids.shape), all_layers, None)
    return out


def prepare_user_model(
    model: nn.Module, tokenizer: Any, num_layers: int | None, all_layers: bool, forward_fn: ForwardFn | None
) -> tuple[UserModel, int]:
    """The model object set up for scoring and its depth, every check made before any text is scored."""
    encoder = encoder_of(model)
    check_vocabulary(encoder, tokenizer)
    view = eval_view(encoder)
    depth = depth_of(view)
    if forward_fn is not None:
        out = _probe(encoder, view, forward_fn, tokenizer, all_layers)
        if all_layers:
            depth = out.shape[2] - 1
        hidden_size = int(out.shape[-1])
    else:
        if depth is None:
            raise ModelSetupError(
                f"Cannot tell how many layers {type(encoder).__name__} has: its blocks are not in a layout "
                "bertscore-tm knows and its config has no num_hidden_layers. Pass forward_fn=(model, input_ids, "
                "attention_mask) -> [B, T, D] returning the layer to score with.",
                argument="forward_fn",
            )
        size = family_hidden_size(view)
        if size is None:
            raise ModelSetupError(
                f"Cannot tell the hidden size of {type(encoder).__name__} (its config has no hidden_size): pass "
                "forward_fn=(model, input_ids, attention_mask) -> [B, T, D].",
                argument="forward_fn",
            )
        hidden_size = size
    if num_layers is not None and depth is not None and not 0 <= num_layers <= depth:
        raise ArgumentValueError(
            f"num_layers must be between 0 and {depth} for this {type(encoder).__name__}, got {num_layers}",
            argument="num_layers",
            allowed=f"0 to {depth}",
            value=num_layers,
        )
    if forward_fn is None and not all_layers and num_layers is not None and depth is not None and num_layers < depth:
        try:
            cut_to_layers(view, num_layers)
        except ValueError:  # blocks not found
            raise ModelSetupError(
                f"num_layers={num_layers} is below the depth of {type(encoder).__name__} ({depth}), but its blocks "
                "are not in a layout bertscore-tm knows, so it cannot stop after block "
                f"{num_layers}. Pass forward_fn=(model, input_ids, attention_mask) -> [B, T, D] returning layer "
                f"{num_layers} (e.g. model(input_ids, attention_mask=attention_mask, output_hidden_states=True)"
                f".hidden_states[{num_layers}]), or num_layers={depth}.",
                argument="num_layers",
            ) from None
    if depth is None:
        depth = num_layers if num_layers is not None else 0
    return UserModel(model, view, forward_fn, hidden_size), depth
