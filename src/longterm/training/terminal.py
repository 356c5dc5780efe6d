"""What a run shows while it trains: on a terminal, a bar with the epoch out of its limit, the
training loss and the last validation accuracy; anywhere else (a pipe, a log file, a SLURM job's
output) one line per epoch instead of a bar's carriage returns. `trainer.enable_progress_bar=false`
shows neither."""

import logging
import sys
import time
from typing import Any

import pytorch_lightning as L
from pytorch_lightning.callbacks import TQDMProgressBar

log = logging.getLogger(__name__)

SHOWN = {"train/loss": "loss", "val/acc": "val/acc"}  # logged metric -> its label


def shown(trainer: L.Trainer) -> dict[str, str]:
    """The SHOWN metrics the run has logged so far, formatted."""
    metrics = trainer.callback_metrics
    return {label: f"{float(metrics[k]):.4g}" for k, label in SHOWN.items() if k in metrics}


def epoch_of(trainer: L.Trainer) -> str:
    return f"epoch {trainer.current_epoch + 1}/{trainer.max_epochs}"


class EpochBar(TQDMProgressBar):
    """Lightning's bar, described by the epoch out of the limit, with the loss and the last
    val/acc beside it (not Lightning's `v_num`)."""

    def on_train_epoch_start(self, trainer: L.Trainer, *args: Any) -> None:
        super().on_train_epoch_start(trainer, *args)
        self.train_progress_bar.set_description(epoch_of(trainer))

    def get_metrics(self, trainer: L.Trainer, pl_module: L.LightningModule) -> dict[str, Any]:
        return shown(trainer)


class EpochLines(L.Callback):
    """One log line per epoch, after its validation: `epoch <e>/<limit>: loss <loss>, val/acc
    <acc> (<seconds> s)`; it reaches the console and train.log through Hydra's handlers."""

    def __init__(self) -> None:
        self.started = time.perf_counter()

    def on_train_epoch_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self.started = time.perf_counter()

    def on_train_epoch_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        values = ", ".join(f"{label} {value}" for label, value in shown(trainer).items())
        took = time.perf_counter() - self.started
        log.info(f"{epoch_of(trainer)}: {values or 'no metrics yet'} ({took:.1f} s)")


def progress_callbacks(enabled: bool, bars: bool = True) -> tuple[list[L.Callback], bool]:
    """The callbacks that show progress, and whether Lightning's bar stays enabled: the bar on a
    terminal (unless `bars` is false: jobs side by side), lines elsewhere, nothing when the bar
    is turned off."""
    if not enabled:
        return [], False
    if bars and sys.stderr.isatty():  # tqdm draws on stderr
        return [EpochBar()], True
    return [EpochLines()], False
