"""The doors' import rules: `import bertscore_tm` (and its `integrations` folder) imports no peer library; a
door whose peer is not installed still imports, and asking for what needs the peer names the package to install
(run where LightEval and mbrs are absent, as in the main environment)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

PEERS = ("evaluate", "lighteval", "mbrs")


def test_importing_the_package_imports_no_peer() -> None:
    code = f"import sys, bertscore_tm, bertscore_tm.integrations\nprint([m for m in {PEERS!r} if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.skipif(importlib.util.find_spec("lighteval") is not None, reason="LightEval is installed here")
def test_the_lighteval_door_names_lighteval_where_it_is_missing() -> None:
    from bertscore_tm.integrations import lighteval as door

    with pytest.raises(ModuleNotFoundError, match="lighteval"):
        door.bertscore_metrics("sentence-transformers/all-MiniLM-L6-v2")
    with pytest.raises(ModuleNotFoundError, match=r"pip install 'lighteval==0\.13\.0'"):
        door.BERTScoreSamples  # noqa: B018
    with pytest.raises(AttributeError):
        door.no_such_name  # noqa: B018


@pytest.mark.skipif(importlib.util.find_spec("mbrs") is not None, reason="mbrs is installed here")
def test_the_mbrs_door_names_mbrs_where_it_is_missing() -> None:
    from bertscore_tm.integrations import mbrs as door

    with pytest.raises(
        ModuleNotFoundError, match=r"needs mbrs, which is not installed here: pip install 'mbrs==0\.1\.8'"
    ):
        from bertscore_tm.integrations.mbrs import MetricBERTScoreTM  # noqa: F401
    plugin = Path(door.plugin_dir())
    assert plugin.name == "bertscore_tm_mbrs" and (plugin / "__init__.py").is_file()
    assert sorted(p.name for p in plugin.parent.iterdir() if p.name != "__pycache__") == [
        "__init__.py",
        "bertscore_tm_mbrs",
    ]  # mbrs puts this folder on sys.path: nothing else may live there
