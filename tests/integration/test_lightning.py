"""The Metric inside training code: forward(), checkpointing, the frozen model, and Lightning.

- `forward()` returns the batch's scores; a later `compute()` does not embed those pairs again.
- With `persistent(True)` the state round-trips through `state_dict()`; a metric restored mid-epoch and fed
  the rest of the epoch gives the same result.
- The embedding model is never in a state_dict, never trained, and goes where the metric computes.
- A Lightning `Trainer` (CPU, one process, and two DDP processes) logs the exact corpus BERTScore once per
  epoch to TensorBoard, both as a logged Metric object and as a dict through `log_dict`.
- A module that trains its own encoder scores with that very object (`BERTScore(model=..., tokenizer=...)`):
  each epoch's value is that epoch's weights, and the metric adds nothing to the module's parameters.

The modules, data and trainer are those of examples/lightning_example.py (loaded from there, not copied).
This file is also the script that the DDP test runs (`python tests/integration/test_lightning.py DIR PORT`): Lightning's
"ddp" strategy starts the second rank by running the same command again.
"""

from __future__ import annotations

import importlib.util
import io
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import bertscore_tm
from bertscore_tm import PACKAGED_MINILM, BERTScore

TOL = 1e-5
LAYER = 5
DDP_TIMEOUT_S = 300
HERE = Path(__file__).resolve()
WMT = HERE.parents[1] / "data" / "wmt"
pytest.importorskip("lightning")
pytest.importorskip("tensorboard")

STATES = (
    "cand_ids",
    "cand_lens",
    "cand_marked",
    "ref_ids",
    "ref_lens",
    "ref_marked",
    "ref_counts",
    "scored",
    "cand_best",
    "ref_best",
    "indexes",
    # whether each pair had a context (the hash code names it)
    "has_context",
    "doc_freq",
    "num_refs",
)
#: The metric's one entry in a state_dict: the digests of its setting, and its states with persistent(True).
EXTRA = "_extra_state"


# -- the Lightning side: the module, data and trainer of examples/lightning_example.py -----------------------


def _load_example():
    """examples/lightning_example.py as a module: the tests train the documented example itself."""
    spec = importlib.util.spec_from_file_location(
        "lightning_example", HERE.parents[2] / "examples" / "lightning_example.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


example = _load_example()


def _lightning_module(use_indexes: bool):
    return example.TinyModel(use_indexes=use_indexes)


def _val_pairs() -> tuple[list[str], list[str]]:
    """21 validation pairs: an odd number, so that two DDP ranks need a padded repeat."""
    read = lambda name: (WMT / f"{name}.txt").read_text(encoding="utf-8").splitlines()  # noqa: E731
    return read("hyps") + read("hyps_long")[100:111], read("refs") + read("refs_long")[100:111]


def _fit(module, log_dir: str, cands: list[str], refs: list[str], devices: int = 1):
    trainer = example.make_trainer(log_dir, devices=devices)
    trainer.fit(module, *example.loaders(list(zip(cands, refs, strict=True))))
    return trainer


def _read_scalars(log_dir: str | Path) -> dict[str, list[tuple[int, float]]]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    files = sorted(Path(log_dir).rglob("events.out.tfevents.*"))
    assert len(files) == 1, files
    acc = EventAccumulator(str(files[0].parent))
    acc.Reload()
    return {tag: [(e.step, e.value) for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}


def _ddp_main(log_dir: str) -> None:
    """One rank of the DDP run (Lightning starts the other with the same command line)."""
    torch.set_num_threads(1)
    module = _lightning_module(use_indexes=True)
    trainer = _fit(module, log_dir, *_val_pairs(), devices=2)
    rank = trainer.global_rank
    seen = {"rank": rank, "world": trainer.world_size, "rows": module.val_f1.embedder.rows_embedded}
    (Path(log_dir) / f"rank{rank}.json").write_text(json.dumps(seen))


# -- fixtures ------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pairs(wmt) -> tuple[list[str], list[str]]:
    return _val_pairs()


@pytest.fixture(scope="module")
def reference_pairs(pairs, reference_score) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The reference's per-pair P, R, F of the validation pairs (the first 10 are WMT hyps/refs)."""
    return reference_score(*pairs)


@pytest.fixture(scope="module")
def reference_val(reference_pairs) -> dict[str, float]:
    p, r, f = reference_pairs
    return {"precision": float(p.mean()), "recall": float(r.mean()), "f1": float(f.mean())}


@pytest.fixture(scope="module")
def reference_idf(wmt, reference_score):
    cands = wmt["hyps"] + wmt["hyps_long"][:8]
    targets = [[a, b] for a, b in zip(wmt["refs"], wmt["refs2"], strict=True)] + [[r] for r in wmt["refs_long"][:8]]
    return cands, targets, reference_score(cands, targets, idf=True)


@pytest.fixture(scope="module")
def scorer() -> BERTScore:
    """A metric used for expected values: reset before each use."""
    return BERTScore(PACKAGED_MINILM, idf=True)


def _close(actual: torch.Tensor, expected: torch.Tensor) -> None:
    assert actual.shape == expected.shape
    torch.testing.assert_close(actual.double(), expected.double(), atol=TOL, rtol=0)


def _scores(metric: BERTScore, cands, targets) -> dict:
    metric.reset()
    metric.update(cands, targets)
    result = metric.compute()
    metric.reset()
    return result


# -- forward() -------------------------------------------------------------------------------------------------


def test_forward_returns_batch_scores_and_is_not_embedded_again(pairs, reference_pairs):
    cands, refs = pairs[0][:10], pairs[1][:10]
    expected = [x[:10] for x in reference_pairs]
    metric = BERTScore(PACKAGED_MINILM)
    first = metric(cands[:4], refs[:4])
    second = metric(cands[4:], refs[4:])
    for key, want in zip(("precision", "recall", "f1"), expected, strict=True):
        _close(first[key], want[:4])
        _close(second[key], want[4:])
    rows = metric.embedder.rows_embedded
    assert rows > 0
    epoch = metric.compute()
    assert metric.embedder.rows_embedded == rows  # the forward()ed pairs are not embedded again
    for key, want in zip(("precision", "recall", "f1"), expected, strict=True):
        _close(epoch[key], want)


def test_forward_with_idf_epoch_value_is_exact(reference_idf, scorer):
    cands, targets, expected = reference_idf
    metric = BERTScore(PACKAGED_MINILM, idf=True)
    batch = metric(cands[:6], targets[:6])
    # the batch value weighs by the batch's own IDF
    alone = _scores(scorer, cands[:6], targets[:6])
    for key in ("precision", "recall", "f1"):
        _close(batch[key], alone[key])
    rows = metric.embedder.rows_embedded
    metric.update(cands[6:12], targets[6:12])  # update() only: embedded by compute()
    metric(cands[12:], targets[12:])
    rows_forward = metric.embedder.rows_embedded - rows
    epoch = metric.compute()
    # compute() embeds only the update()d pairs, each text once
    scorer.reset()
    before = scorer.embedder.rows_embedded
    scorer.update(cands[6:12], targets[6:12])
    scorer.compute()
    assert metric.embedder.rows_embedded - rows - rows_forward == scorer.embedder.rows_embedded - before
    scorer.reset()
    # the epoch value weighs by the IDF of every reference of the epoch
    for key, want in zip(("precision", "recall", "f1"), expected, strict=True):
        _close(epoch[key], want)


# -- checkpointing and the frozen model ------------------------------------------------------------------------


def test_state_dict_round_trip_mid_epoch(reference_idf, scorer):
    cands, targets, expected = reference_idf
    metric = BERTScore(PACKAGED_MINILM, idf=True)
    metric.persistent(True)
    metric.update(cands[:5], targets[:5])
    metric(cands[5:11], targets[5:11])  # these pairs are scored already when the checkpoint is taken
    buffer = io.BytesIO()
    torch.save(metric.state_dict(), buffer)
    buffer.seek(0)
    saved = torch.load(buffer, weights_only=True)
    assert set(saved) == {EXTRA} and set(saved[EXTRA]["states"]) == set(STATES)  # no model weights

    restored = BERTScore(PACKAGED_MINILM, idf=True)
    restored.persistent(True)
    restored.load_state_dict(saved)
    restored.update(cands[11:], targets[11:])
    rows = restored.embedder.rows_embedded
    result = restored.compute()
    for key, want in zip(("precision", "recall", "f1"), expected, strict=True):
        _close(result[key], want)
    # the pairs scored before the checkpoint are not embedded again after it
    scorer.reset()
    before = scorer.embedder.rows_embedded
    scorer.update(cands[:5] + cands[11:], targets[:5] + targets[11:])
    scorer.compute()
    assert restored.embedder.rows_embedded - rows == scorer.embedder.rows_embedded - before
    scorer.reset()
    # and the original, carried on the same way, agrees
    metric.update(cands[11:], targets[11:])
    for key in ("precision", "recall", "f1"):
        _close(metric.compute()[key], result[key])


def test_model_never_in_state_dict_nor_trained():
    module = _lightning_module(use_indexes=False)
    metric = module.val_f1
    weights = dict(metric.embedder.model.named_parameters())
    assert weights and not any(p.requires_grad for p in weights.values())
    own = {"layer.weight", "layer.bias"}
    digests = {f"{name}.{EXTRA}" for name in ("val_f1", "val_bertscore")}  # each metric's setting, no states
    assert set(module.state_dict()) == own | digests  # metric states are not persistent by default
    assert all(module.state_dict()[key]["states"] is None for key in digests)
    assert {name for name, _ in module.named_parameters()} == own
    assert len(list(module.parameters())) == 2
    assert not list(metric.parameters()) and not list(metric.buffers())
    module.val_f1.persistent(True)
    keys = set(module.state_dict())
    assert keys == own | digests and set(module.state_dict()[f"val_f1.{EXTRA}"]["states"]) == set(STATES)
    model_ids = {id(p) for p in weights.values()}
    assert not any(
        id(v) in model_ids for v in module.state_dict(keep_vars=True).values() if isinstance(v, torch.Tensor)
    )


def test_the_model_goes_where_the_module_computes():
    """Moving the module moves the metrics' states; each metric's model goes there when it next computes (moved,
    not copied, where nothing else uses it: the usual flow, built on the CPU and moved before validating)."""
    module = _lightning_module(use_indexes=False)
    targets = [torch.device("meta")] + ([torch.device("cuda", 0)] if torch.cuda.is_available() else [])
    for device in targets:
        if device.type == "cuda":
            module = _lightning_module(use_indexes=False)
        module.to(device)
        for metric in (module.val_f1, module.val_bertscore):
            assert metric.device == device
            metric.scorer.follow(metric.device)  # what its compute() asks first
            assert metric.embedder.device == device and len(metric.scorer.handle.embedders) == 1
            assert all(p.device == device for p in metric.embedder.model.parameters())
    if torch.cuda.is_available():  # and it scores there
        module.val_f1.update(["a cat sat on the mat"], ["the cat sat on a mat"])
        assert module.val_f1.compute().device.type == "cuda"


# -- Lightning -------------------------------------------------------------------------------------------------


def _check_logged(scalars: dict, reference_val: dict) -> None:
    for name in ("f1", "precision", "recall"):
        logged = scalars[f"val/bertscore_{name}"]
        assert len(logged) == 2, logged  # once per epoch
        for _, value in logged:
            assert abs(value - reference_val[name]) < TOL, (name, value, reference_val[name])
    object_logged = scalars["val/bertscore_f1"]
    assert object_logged[0][0] < object_logged[1][0]  # two epochs, two steps
    assert "train/loss" in scalars


def test_lightning_single_process_logs_exact_epoch_f1(pairs, reference_val, tmp_path):
    module = _lightning_module(use_indexes=False)
    frozen = {k: v.clone() for k, v in module.val_f1.embedder.model.state_dict().items()}
    trained = module.layer.weight.detach().clone()
    _fit(module, str(tmp_path), *pairs)
    scalars = _read_scalars(tmp_path)
    _check_logged(scalars, reference_val)
    # the trainable layer learned, the embedding model did not move
    assert not torch.equal(module.layer.weight.detach(), trained)
    after = module.val_f1.embedder.model.state_dict()
    assert all(torch.equal(after[k], v) for k, v in frozen.items())


def test_lightning_bf16_mixed_precision_logs_the_exact_float32_scores(pairs, reference_val, tmp_path):
    """Under `precision="bf16-mixed"` Lightning runs each step under a bfloat16 autocast: the metric still
    computes in float32, as its setting says, both when a step calls forward() (its compute() runs inside
    that autocast) and when the epoch's value is logged."""

    class StepScores(example.TinyModel):
        def validation_step(self, batch, batch_idx):
            super().validation_step(batch, batch_idx)
            step = BERTScore(PACKAGED_MINILM, num_layers=LAYER)
            self.step_f1.append(step(batch["pred"], batch["target"])["f1"])

    module = StepScores(use_indexes=False)
    module.step_f1 = []
    trainer = example.make_trainer(str(tmp_path), precision="bf16-mixed")
    trainer.fit(module, *example.loaders(list(zip(*pairs, strict=True))))
    _check_logged(_read_scalars(tmp_path), reference_val)
    per_pair = torch.cat(module.step_f1[: len(module.step_f1) // 2])  # the first epoch's steps
    assert per_pair.dtype == torch.float32 and len(per_pair) == len(pairs[0])
    assert abs(float(per_pair.mean()) - reference_val["f1"]) < TOL


def test_lightning_module_scores_with_its_own_encoder_as_it_trains(pairs, tmp_path):
    """examples/lightning_example.py's EncoderModel trains its own encoder and scores with that very object."""
    module = example.EncoderModel()
    encoder = module.encoder
    own = {f"encoder.{n}" for n, _ in encoder.named_parameters()} | {"head.weight", "head.bias"}
    assert {n for n, _ in module.named_parameters()} == own  # the metric adds nothing, the encoder is listed once
    assert {k for k in module.state_dict() if k.startswith("val_f1.")} == {f"val_f1.{EXTRA}"}  # its digests alone
    start = {n: p.detach().clone() for n, p in encoder.named_parameters()}
    storage = {n: p.data_ptr() for n, p in encoder.named_parameters()}
    cands, refs = pairs[0][:12], pairs[1][:12]  # three batches: enough to train, and quick
    trainer = example.make_trainer(str(tmp_path))
    trainer.fit(module, *example.text_loaders(list(zip(cands, refs, strict=True))))

    logged = _read_scalars(tmp_path)["val/bertscore_f1"]
    assert len(logged) == 2  # once per epoch
    # the encoder trained (in place: the same storage, still trainable), and each epoch scored it as it was then
    assert any(not torch.equal(p.detach(), start[n]) for n, p in encoder.named_parameters())
    assert {n: p.data_ptr() for n, p in encoder.named_parameters()} == storage
    assert all(p.requires_grad for p in encoder.parameters())
    assert abs(logged[0][1] - logged[1][1]) > 1e-6
    now = BERTScore(model=encoder, tokenizer=module.tokenizer, num_layers=LAYER, reduction="mean", output="f1")
    now.update(cands, refs)
    assert abs(float(now.compute()) - logged[1][1]) < 1e-6  # the last epoch: the final weights
    before = BERTScore(PACKAGED_MINILM, num_layers=LAYER, reduction="mean", output="f1")
    before.update(cands, refs)
    assert abs(float(before.compute()) - logged[1][1]) > 1e-6  # not the packaged weights it started from


def test_lightning_ddp_two_processes_logs_exact_epoch_f1(pairs, reference_val, tmp_path):
    from tests.spawn import free_port  # here, not at the top: the DDP ranks run this file as a script

    src = str(Path(bertscore_tm.__file__).resolve().parents[1])
    env = dict(os.environ)
    env.update(
        PYTHONPATH=os.pathsep.join(p for p in (src, env.get("PYTHONPATH")) if p),
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(free_port()),
        GLOO_SOCKET_IFNAME="lo",
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
    )
    env.pop("LOCAL_RANK", None)
    env.pop("WORLD_SIZE", None)
    proc = subprocess.Popen(
        [sys.executable, str(HERE), str(tmp_path)],
        env=env,
        cwd=str(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        output, _ = proc.communicate(timeout=DDP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # rank 0 and the rank it started share this new session
        output, _ = proc.communicate()
        pytest.fail(f"DDP run did not finish in {DDP_TIMEOUT_S} s:\n{output.decode(errors='replace')[-4000:]}")
    text = output.decode(errors="replace")
    assert proc.returncode == 0, text[-4000:]
    seen = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(2)]
    assert [s["world"] for s in seen] == [2, 2]
    # each rank embedded only its own share (at most 11 pairs, 22 texts) in each of the two epochs
    assert all(0 < s["rows"] <= 2 * 2 * 11 < 2 * 2 * len(pairs[0]) for s in seen)
    _check_logged(_read_scalars(tmp_path), reference_val)


if __name__ == "__main__":
    _ddp_main(sys.argv[1])
