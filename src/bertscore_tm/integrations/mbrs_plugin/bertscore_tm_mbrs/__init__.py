"""mbrs's ``--plugin_dir`` for this package (`bertscore_tm.integrations.mbrs.plugin_dir()` gives its path):
mbrs-decode and mbrs-score import it, which registers the metric ``"bertscore_tm"``."""

from __future__ import annotations

import bertscore_tm.integrations.mbrs  # noqa: F401  (registers the metric where mbrs is installed)

__all__: list[str] = []
