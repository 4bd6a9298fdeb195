"""The typed result of a compute: per-pair precision, recall and F1 and the setting's hash code.

`BERTScore.compute()` returns what torchmetrics and Lightning expect (a dict, or one tensor with `output`,
reduced with `reduction`), so its type is a union. Callers inside the package (`score`, `layer_means`, the
command line) need the per-pair tensors themselves: `BERTScore.compute_scores()` gives them as a `Scores`,
whatever `reduction` and `output` are, so nobody has to narrow the union.
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import Tensor


@dataclass(frozen=True)
class Scores:
    """Per-pair scores, in input order: each tensor is [pairs], or [layers + 1, pairs] with all_layers.

    >>> import torch
    >>> s = Scores(torch.tensor([0.9]), torch.tensor([0.8]), torch.tensor([0.85]), "code")
    >>> s.as_tuple()
    (tensor([0.9000]), tensor([0.8000]), tensor([0.8500]))
    """

    precision: Tensor
    recall: Tensor
    f1: Tensor
    hash_code: str

    def as_tuple(self) -> tuple[Tensor, Tensor, Tensor]:
        """(P, R, F), the order bert-score returns them in."""
        return self.precision, self.recall, self.f1
