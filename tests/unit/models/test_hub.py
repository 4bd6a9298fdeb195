"""A model name that is not on disk is downloaded from the Hugging Face Hub into the standard cache, as
transformers does: here from a stand-in Hub on 127.0.0.1 (tests/hub_server.py) serving tiny BERTs, by client
processes with their own cache (huggingface_hub reads its settings when imported; this process is offline).

The client runs share one module fixture, in three rounds: the Hub up and the cache empty; the Hub up after a
model moved on to a commit that fails to download; the Hub stopped. Each test reads the steps it is about.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from bertscore_tm.errors import ArgumentTypeError, ArgumentValueError, ModelNotFoundError, ModelSetupError
from bertscore_tm.models.loading import locate_model, resolve_model_path
from bertscore_tm.models.registry import PACKAGED_MINILM
from hub_server import HubServer, run_client
from tiny_models import build_tiny_model

PREDS = ["The cat sat on the mat.", "Prices rose sharply in the first quarter."]
REFS = ["A cat was sitting on the mat.", "The museum is open every day except Monday."]
FAULTED = {"500": "tiny-org/err500", "truncate": "tiny-org/truncated", "drop": "tiny-org/dropped"}
#: Each way to keep off the network: the locate_model arguments and the environment it sets.
SWITCHES: dict[str, tuple[dict[str, bool], dict[str, str | None]]] = {
    "local_files_only": ({"local_files_only": True}, {}),
    "HF_HUB_OFFLINE": ({}, {"HF_HUB_OFFLINE": "1"}),
    "TRANSFORMERS_OFFLINE": ({}, {"HF_HUB_OFFLINE": None, "TRANSFORMERS_OFFLINE": "1"}),
}
ONLINE = {"HF_HUB_OFFLINE": None, "TRANSFORMERS_OFFLINE": None}

CONFIG_CODE = "from transformers import BertConfig\n\n\nclass TinyConfig(BertConfig):\n    model_type = 'tiny-custom'\n"
MODEL_CODE = (
    "from transformers import BertModel\n\nfrom .configuration_tiny import TinyConfig\n\n\n"
    "class TinyModel(BertModel):\n    config_class = TinyConfig\n"
)


@dataclass
class Rounds:
    """What the client processes saw: each step's result by its id, the Hub's requests, commits, the cache."""

    results: dict[str, dict[str, Any]]
    requests: list[tuple[str, str]]  # the first round's
    commits: dict[str, str]
    cache: Path


def _step(id: str, do: str, name: str | Path, env: dict[str, str | None] | None = None, **options: Any) -> dict:
    return {"id": id, "do": do, "name": str(name), "env": env or {}, **options}


def _score(id: str, name: str | Path, **options: Any) -> dict:
    return _step(id, "score", name, preds=PREDS, refs=REFS, num_layers=2, **options)


def _reweighted(source: Path, out: Path) -> Path:
    """`source`'s model with other random weights (same config and tokenizer)."""
    import torch
    from transformers import AutoModel

    shutil.copytree(source, out)
    model = AutoModel.from_pretrained(str(source))
    torch.manual_seed(1)
    with torch.no_grad():
        for param in model.parameters():
            param.add_(torch.randn_like(param) * 0.5)
    model.save_pretrained(str(out))
    return out


def _with_code(source: Path, out: Path) -> Path:
    """`source` as a model whose classes are code in its folder (an auto_map, a model_type of its own)."""
    shutil.copytree(source, out)
    config = json.loads((out / "config.json").read_text(encoding="utf-8"))
    config.update(
        model_type="tiny-custom",
        architectures=["TinyModel"],
        auto_map={"AutoConfig": "configuration_tiny.TinyConfig", "AutoModel": "modeling_tiny.TinyModel"},
    )
    (out / "config.json").write_text(json.dumps(config), encoding="utf-8")
    (out / "configuration_tiny.py").write_text(CONFIG_CODE, encoding="utf-8")
    (out / "modeling_tiny.py").write_text(MODEL_CODE, encoding="utf-8")
    return out


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("models")
    v1 = build_tiny_model("bert", root)
    return {"v1": v1, "v2": _reweighted(v1, root / "v2"), "custom": _with_code(v1, root / "custom")}


@pytest.fixture(scope="module")
def rounds(models, tmp_path_factory) -> Rounds:
    home = tmp_path_factory.mktemp("home")
    v1, v2 = models["v1"], models["v2"]
    with HubServer() as hub:
        extra = {"pytorch_model.bin": b"not to be fetched", "README.md": b"# tiny", "onnx/model.onnx": b"no"}
        commits = {"bert": hub.publish("tiny-org/bert", v1, extra=extra)}
        commits["c1"] = hub.publish("tiny-org/versions", v1, ref="v1")
        commits["c2"] = hub.publish("tiny-org/versions", v2)
        for kind, repo in FAULTED.items():
            hub.fault(hub.publish(repo, v1), "model.safetensors", kind)
        hub.publish("tiny-org/custom", models["custom"])
        hub.publish("tiny-org/never", v1)
        commits["updated"] = hub.publish("tiny-org/updated", v1)

        steps = [_step(f"never {switch}", "locate", "tiny-org/never", env, **options)
                 for switch, (options, env) in SWITCHES.items()]  # fmt: skip
        steps += [
            _score("bert", "tiny-org/bert", env=ONLINE),
            _score("v1 folder", v1),
            _score("v2 folder", v2),
            _step("bert located", "locate", "tiny-org/bert"),
            _step("bert by transformers", "transformers", "tiny-org/bert"),
            _step("versions", "locate", "tiny-org/versions", progress=True),
            _step("versions c1", "locate", "tiny-org/versions", revision=commits["c1"]),
            _step("versions v1", "locate", "tiny-org/versions", revision="v1"),
            _score("versions scored", "tiny-org/versions"),
            _score("versions c1 scored", "tiny-org/versions", revision=commits["c1"]),
            _score("versions v1 scored", "tiny-org/versions", revision="v1"),
            *_commands("versions c1 cli", home, commits["c1"]),
            _step("no such repo", "locate", "tiny-org/nothing-here"),
            _step("no such revision", "locate", "tiny-org/versions", revision="no-such-branch"),
            _step("custom refused", "locate", "tiny-org/custom"),
            _step("custom trusted", "load", "tiny-org/custom", trust_remote_code=True, text=PREDS[0]),
            _step("plain", "load", v1, text=PREDS[0]),
            _step("updated", "locate", "tiny-org/updated"),
        ]
        for kind, repo in FAULTED.items():
            steps.append(_step(kind, "locate", repo, ONLINE))
            steps.append(_step(f"{kind} offline", "locate", repo, {"HF_HUB_OFFLINE": "1"}))
        first = run_client(steps, hub.url, home)
        requests = list(hub.requests)

        hub.fault(hub.publish("tiny-org/updated", v2), "model.safetensors", "500")  # main moves on, and fails
        steps = [_step("updated again", "locate", "tiny-org/updated")]
        steps += [_step("updated offline", "locate", "tiny-org/updated", {"HF_HUB_OFFLINE": "1"})]
        second = run_client(steps, hub.url, home)

        hub.stop()
        steps = [_step("bert, Hub gone", "locate", "tiny-org/bert"), _score("bert scored, Hub gone", "tiny-org/bert")]
        third = run_client(steps, hub.url, home)
    return Rounds({**first, **second, **third}, requests, commits, home / "hub")


def _commands(id: str, folder: Path, revision: str) -> list[dict]:
    """The commands whose JSON records the model's commit, on a pinned Hub model: score, explain, tune-layers."""
    (folder / "cands.txt").write_text("".join(t + "\n" for t in PREDS), encoding="utf-8")
    (folder / "refs.txt").write_text("".join(t + "\n" for t in REFS), encoding="utf-8")
    rows = [(PREDS[i % len(PREDS)], REFS[(i // 2) % len(REFS)], i * 7 % 5) for i in range(6)]
    judged = folder / "judged.tsv"
    judged.write_text("candidate\treference\thuman\n" + "".join(f"{c}\t{r}\t{h}\n" for c, r, h in rows), "utf-8")
    model = ["-m", "tiny-org/versions", "--revision", revision, "-l", "2", "--format", "json"]
    texts = ["-c", str(folder / "cands.txt"), "-r", str(folder / "refs.txt")]
    runs = {
        "score": ["score", *texts, *model],
        "explain": ["explain", *texts, *model],
        "tune-layers": ["tune-layers", "--data", str(judged), *model[:4], "--bootstrap", "10", "--format", "json"],
    }
    return [_step(f"{id} {command}", "cli", "", args=args) for command, args in runs.items()]


def _error(result: dict[str, Any], cls: type[Exception]) -> str:
    assert cls.__name__ in result.get("bases", []), result
    return result["message"]


def _fetched(requests: list[tuple[str, str]], repo: str) -> list[str]:
    """The files of `repo` downloaded (GET), in order."""
    prefix = f"/{repo}/resolve/"
    return [path.split("/", 5)[-1] for method, path in requests if method == "GET" and path.startswith(prefix)]


def _cache_entries(cache: Path, repo: str) -> list[str]:
    folder = cache / ("models--" + repo.replace("/", "--"))
    return sorted(path.relative_to(folder).as_posix() for path in folder.rglob("*")) if folder.exists() else []


@pytest.mark.slow
def test_a_name_not_on_disk_is_downloaded_and_scores_as_its_folder(rounds):
    r = rounds.results
    assert r["bert"]["f1"] == r["v1 folder"]["f1"]
    assert r["bert"]["f1"] != r["v2 folder"]["f1"]
    located = r["bert located"]
    assert located["commit"] == rounds.commits["bert"]
    assert Path(located["path"]) == rounds.cache / "models--tiny-org--bert" / "snapshots" / rounds.commits["bert"]
    assert set(_fetched(rounds.requests, "tiny-org/bert")) == {
        "config.json",
        "model.safetensors",
        "tokenizer.json",
        "tokenizer_config.json",
    }  # one weights format, safetensors; no model card, no other format, nothing from a folder
    assert len(_fetched(rounds.requests, "tiny-org/bert")) == 4  # the second use fetched nothing again


def test_transformers_finds_the_download_in_its_cache(rounds):
    found = rounds.results["bert by transformers"]
    assert (found.get("model"), found.get("vocabulary")) == ("BertModel", 400), found


def test_the_second_use_reads_the_cache_with_the_hub_gone(rounds):
    r = rounds.results
    assert r["bert, Hub gone"]["path"] == r["bert located"]["path"]
    assert r["bert, Hub gone"]["commit"] == rounds.commits["bert"]
    assert r["bert scored, Hub gone"]["f1"] == r["v1 folder"]["f1"]


@pytest.mark.parametrize("switch", SWITCHES)
def test_offline_switches_never_contact_the_hub(rounds, switch):
    message = _error(rounds.results[f"never {switch}"], ModelNotFoundError)
    assert "'tiny-org/never' is not on this machine" in message
    assert f"downloads are off ({switch}" in message and "`hf download tiny-org/never`" in message
    assert "huggingface-cli" not in message
    assert not [path for _, path in rounds.requests if "tiny-org/never" in path]


@pytest.mark.parametrize(
    ("fault", "said"),  # what huggingface_hub says of it (its wording varies between versions)
    [("500", "HfHubHTTPError"), ("truncate", "Consistency check failed"), ("drop", "failed: ")],
)
def test_a_failed_download_is_one_clear_error_and_leaves_nothing(rounds, fault, said):
    repo = FAULTED[fault]
    message = _error(rounds.results[fault], ConnectionError)
    assert rounds.results[fault]["error"] == "ModelDownloadError"
    assert f"Downloading model.safetensors of '{repo}'" in message and said in message
    assert _cache_entries(rounds.cache, repo) == []  # no snapshot, blob, ref or temporary file
    assert not list(rounds.cache.rglob("*.incomplete"))
    offline = _error(rounds.results[f"{fault} offline"], ModelNotFoundError)
    assert f"'{repo}' is not on this machine: it is not a local directory and not in the Hugging Face cache" in offline


def test_a_failed_update_keeps_the_commit_cached_before(rounds):
    r = rounds.results
    assert r["updated again"]["error"] == "ModelDownloadError"
    assert r["updated offline"]["commit"] == r["updated"]["commit"] == rounds.commits["updated"]
    entries = _cache_entries(rounds.cache, "tiny-org/updated")
    assert [entry for entry in entries if entry.startswith("snapshots/")] == [
        f"snapshots/{rounds.commits['updated']}",
        *(f"snapshots/{rounds.commits['updated']}/{name}" for name in sorted(
            ["config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"]
        )),
    ]  # fmt: skip


def test_revision_pins_the_weights(rounds):
    r, commits = rounds.results, rounds.commits
    assert r["versions"]["commit"] == commits["c2"]  # main
    assert r["versions c1"]["commit"] == r["versions v1"]["commit"] == commits["c1"]
    assert Path(r["versions c1"]["path"]).name == commits["c1"]
    assert r["versions scored"]["f1"] == r["v2 folder"]["f1"]
    assert r["versions c1 scored"]["f1"] == r["versions v1 scored"]["f1"] == r["v1 folder"]["f1"]
    assert r["v1 folder"]["f1"] != r["v2 folder"]["f1"]
    # the metric reports the commit it scored with; a folder records none
    assert r["versions c1 scored"]["commit"] == r["versions v1 scored"]["commit"] == commits["c1"]
    assert r["versions scored"]["commit"] == commits["c2"] and r["v1 folder"]["commit"] is None


@pytest.mark.parametrize("command", ["score", "explain", "tune-layers"])
def test_the_json_outputs_record_the_commit_scored_with(rounds, command):
    result = rounds.results[f"versions c1 cli {command}"]
    assert result["rc"] == 0, result["stderr"]
    assert result["json"]["model_commit"] == rounds.commits["c1"]


def test_a_repo_or_a_revision_that_does_not_exist_is_one_clear_error(rounds):
    repo = rounds.results["no such repo"]
    assert "'tiny-org/nothing-here' is not a local directory, and the Hugging Face Hub" in _error(
        repo, ModelNotFoundError
    )
    assert repo["argument"] == "model_name_or_path"
    revision = rounds.results["no such revision"]
    assert "has the model 'tiny-org/versions' but no revision 'no-such-branch'" in _error(revision, ModelNotFoundError)
    assert revision["argument"] == "revision"


def test_code_from_the_repo_is_refused_unless_trusted(rounds):
    refused = rounds.results["custom refused"]
    message = _error(refused, ModelSetupError)
    assert "auto_map" in message and "trust_remote_code=True" in message and refused["argument"] == "trust_remote_code"
    fetched = _fetched(rounds.requests, "tiny-org/custom")
    assert fetched[0] == "config.json"
    assert fetched.count("model.safetensors") == 1  # once, by the trusted call; the refused one stopped before
    trusted = rounds.results["custom trusted"]
    assert (trusted["config"], trusted["model"]) == ("TinyConfig", "TinyModel")
    assert trusted["vectors"] == rounds.results["plain"]["vectors"]


def test_progress_bars_only_where_asked(rounds):
    assert "model.safetensors" in rounds.results["versions"]["stderr"]  # progress=True
    assert rounds.results["bert"]["stderr"] == rounds.results["versions c1"]["stderr"] == ""  # not a terminal


# -- in this process: nothing here may reach a network ------------------------------------------------------------


def test_a_revision_is_a_string_for_a_hub_model_only(models):
    assert locate_model(models["v1"]).commit is None
    with pytest.raises(ArgumentValueError, match=r"revision='main' picks a commit .* is a local directory"):
        locate_model(models["v1"], revision="main")
    with pytest.raises(ArgumentTypeError, match=r"revision must be a string or None, got int"):
        locate_model("tiny-org/bert", revision=3)  # type: ignore[arg-type]
    with pytest.raises(ArgumentValueError, match="revision must not be blank"):
        locate_model("tiny-org/bert", revision=" ")


def test_the_packaged_minilm_is_the_package_and_records_no_commit(minilm_path):
    location = locate_model(PACKAGED_MINILM, local_files_only=True)
    assert (str(location.path), location.commit) == (minilm_path, None)
    assert resolve_model_path(PACKAGED_MINILM) == location.path


def test_a_path_that_is_no_directory_is_not_sent_to_the_hub(tmp_path):
    with pytest.raises(ModelNotFoundError, match="no directory of that name, and it is not a Hugging Face Hub model"):
        locate_model(tmp_path / "no" / "such" / "model")


def test_a_local_folder_that_needs_its_own_code_is_refused_unless_trusted(models, tmp_path):
    with pytest.raises(ModelSetupError, match=r"auto_map: \['AutoConfig', 'AutoModel'\].*trust_remote_code=True"):
        locate_model(models["custom"])
    assert locate_model(models["custom"], trust_remote_code=True).path == models["custom"]
    unknown = shutil.copytree(models["v1"], tmp_path / "unknown")
    config = json.loads((unknown / "config.json").read_text(encoding="utf-8"))
    (unknown / "config.json").write_text(json.dumps({**config, "model_type": "no-such-type"}), encoding="utf-8")
    with pytest.raises(ModelSetupError, match=r"model_type 'no-such-type' is not one transformers .* knows"):
        locate_model(unknown)
    with pytest.raises(ModelSetupError, match="no auto_map to load code from either: upgrade transformers"):
        locate_model(unknown, trust_remote_code=True)
