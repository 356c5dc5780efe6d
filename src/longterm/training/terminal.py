"""What a run shows while it trains: on a terminal, a bar with the epoch out of its limit, the
training loss and the last validation accuracy; anywhere else (a pipe, a log file, a SLURM job's
output) one line per epoch instead of a bar's carriage returns. `trainer.enable_progress_bar=false`
shows neither."""

import logging
import sys
import time
from collections.abc import Mapping
from typing import Any

import pytorch_lightning as L
from pytorch_lightning.callbacks import TQDMProgressBar

log = logging.getLogger(__name__)

SHOWN = {"train/loss": "loss", "val/acc": "val/acc"}  # logged metric -> its label


def shown(metrics: Mapping[str, Any]) -> dict[str, str]:
    """The SHOWN metrics among those logged so far, formatted."""
    return {label: f"{float(metrics[k]):.4g}" for k, label in SHOWN.items() if k in metrics}


def epoch_of(trainer: L.Trainer) -> str:
    return f"epoch {trainer.current_epoch + 1}/{trainer.max_epochs}"


def epoch_line(epoch: int, max_epochs: int, metrics: Mapping[str, Any], seconds: float) -> str:
    """`epoch <e>/<limit>: loss <loss>, val/acc <acc> (<seconds> s)`: a run's line per epoch,
    alone (EpochLines) or as a pack's member (sweeps/members.py)."""
    values = ", ".join(f"{label} {value}" for label, value in shown(metrics).items())
    return f"epoch {epoch}/{max_epochs}: {values or 'no metrics yet'} ({seconds:.1f} s)"


class EpochBar(TQDMProgressBar):
    """Lightning's bar, described by the epoch out of the limit, with the loss and the last
    val/acc beside it (not Lightning's `v_num`)."""

    def on_train_epoch_start(self, trainer: L.Trainer, *args: Any) -> None:
        super().on_train_epoch_start(trainer, *args)
        self.train_progress_bar.set_description(epoch_of(trainer))

    def get_metrics(self, trainer: L.Trainer, pl_module: L.LightningModule) -> dict[str, Any]:
        return shown(trainer.callback_metrics)


class EpochLines(L.Callback):
    """One log line per epoch, after its validation: `epoch <e>/<limit>: loss <loss>, val/acc
    <acc> (<seconds> s)`; it reaches the console and train.log through Hydra's handlers."""

    def __init__(self) -> None:
        self.started = time.perf_counter()

    def on_train_epoch_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self.started = time.perf_counter()

    def on_train_epoch_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        took = time.perf_counter() - self.started
        epoch, limit = trainer.current_epoch + 1, trainer.max_epochs
        log.info(epoch_line(epoch, limit, trainer.callback_metrics, took))


def progress_callbacks(enabled: bool, bars: bool = True) -> tuple[list[L.Callback], bool]:
    """The callbacks that show progress, and whether Lightning's bar stays enabled: the bar on a
    terminal (unless `bars` is false: jobs side by side), lines elsewhere, nothing when the bar
    is turned off."""
    if not enabled:
        return [], False
    if bars and sys.stderr.isatty():  # tqdm draws on stderr
        return [EpochBar()], True
    return [EpochLines()], False
