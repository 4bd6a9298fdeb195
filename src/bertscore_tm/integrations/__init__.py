"""Doors from the libraries people evaluate with to this metric, one module per peer library:

* ``evaluate``: a metric script that ``evaluate.load(metric_path())`` loads, with the arguments and result of
  evaluate's own ``bertscore``;
* ``lighteval``: BERTScore-P, -R and -F for a LightEval task, batched, with the packaged baselines;
* ``mbrs``: the metric ``"bertscore_tm"`` in mbrs's registry (its decoders and ``mbrs-decode``), over the
  all-pairs engine.

Each module imports its peer library only when it is imported itself (``import bertscore_tm`` imports none of
them), and where the peer is not installed it still imports, naming the missing package on use. How each call
maps, and where the numbers differ from the peer's own BERTScore: docs/migrating.md.
"""

from __future__ import annotations

__all__: list[str] = []
