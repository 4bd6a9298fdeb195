"""What bertscore-tm reads of transformers beyond its public interface (`bertscore_tm.models.compat_transformers`),
checked on the versions it was written for: a new transformers fails here first, naming what moved."""

from __future__ import annotations

import pytest
import transformers
from packaging.version import Version

from bertscore_tm.models.compat_transformers import attention_implementation
from tiny_models import tiny_encoder

#: The transformers versions (major.minor) the private reads were checked on.
CHECKED = ("4.57", "5.24", "5.25")


def test_the_installed_transformers_is_one_checked() -> None:
    version = Version(transformers.__version__)
    assert f"{version.major}.{version.minor}" in CHECKED, f"transformers {version}: check the compat module on it"


@pytest.mark.parametrize("attention", ["sdpa", "eager"])
def test_the_attention_a_model_runs_follows_its_public_selection(attention: str) -> None:
    from transformers import AutoModel

    config = tiny_encoder("bert").config
    assert attention_implementation(AutoModel.from_config(config, attn_implementation=attention)) == attention


def test_a_module_without_a_config_runs_no_attention_we_can_name() -> None:
    assert attention_implementation(object()) is None
