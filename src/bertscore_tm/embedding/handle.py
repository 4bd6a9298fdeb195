"""One handle per loaded model, shared by a metric's copies so the weights are held once; it alone moves the model
(where no other live scorer uses it) or copies it; a user's model object is never moved or copied."""

from __future__ import annotations

import weakref
from typing import Any

import torch

from bertscore_tm.embedding.embedder import Embedder


class ModelHandle:
    """The model where it is and a copy per other device in use; users held weakly."""

    def __init__(self, embedder: Embedder) -> None:
        self._embedders = [embedder]  # the model, then its copies (each on a device of its own)
        # each scorer that asked, and the device it asked for last (a scorer gone leaves the map)
        self._users: weakref.WeakKeyDictionary[Any, torch.device] = weakref.WeakKeyDictionary()

    @classmethod
    def around(cls, model: Any, *args: Any, **kwargs: Any) -> ModelHandle:
        """The handle of `model`, its embedder made with `Embedder`'s arguments: the scorer enters embedding/ once
        (docs/architecture.md, "One way in")."""
        return cls(Embedder(model, *args, **kwargs))

    @property
    def embedders(self) -> list[Embedder]:
        """The model and its copies made so far."""
        return list(self._embedders)

    def _on_device(self, device: torch.device | None) -> Embedder | None:
        return next((e for e in self._embedders if e.device == device), None)

    def current(self, user: object) -> Embedder:
        """The embedder `user` asked for last, or the model before its first ask."""
        return self._on_device(self._users.get(user)) or self._embedders[0]

    def on(self, device: torch.device | str, user: object) -> Embedder:
        """The embedder for `user` on `device`: moved there if no other live user holds it, else copied."""
        if self._embedders[0].user_supplied:
            return self._embedders[0]
        wanted = torch.device(device)
        if wanted.index is None and wanted.type not in ("cpu", "meta"):  # "cuda": the current GPU, as parameters say
            wanted = torch.empty(0, device=wanted).device
        embedder = self._on_device(wanted) or self._moved_or_copied(wanted, user)
        self._users[user] = wanted
        return embedder

    def _moved_or_copied(self, device: torch.device, user: object) -> Embedder:
        held = {where for who, where in list(self._users.items()) if who is not user}
        mine = self._users.get(user)
        free = sorted((e for e in self._embedders if e.device not in held), key=lambda e: e.device != mine)
        if free:  # the one this user had, before any other
            free[0].to(device)
            return free[0]
        embedder = self._embedders[0].copied_to(device)
        self._embedders.append(embedder)
        return embedder

    def __deepcopy__(self, memo: dict) -> ModelHandle:
        """Copies share the handle and its weights: the model is frozen."""
        return self

    def __getstate__(self) -> dict[str, Any]:
        """Pickled with its embedders, without the users (live objects)."""
        return {"_embedders": list(self._embedders)}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._embedders = state["_embedders"]
        self._users = weakref.WeakKeyDictionary()
