"""What a run shows while it trains: on a terminal, a bar with the epoch out of its limit, the
training loss and the last validation accuracy; anywhere else (a pipe, a log file, a SLURM job's
output) one line per epoch instead of a bar's carriage returns. `trainer.enable_progress_bar=false`
shows neither. A run among several side by side (launcher=parallel) puts its directory's name
before its lines, as a pack's members do (sweeps/members.py)."""

import logging
import sys
import time
from collections.abc import Mapping
from pathlib import Path
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


# A bar redraws at most this often (seconds), and at the last batch of a loop: Lightning's bar
# redraws twice per batch, megabytes of output for a run of short updates in a terminal.
REDRAW_S = 0.25


class EpochBar(TQDMProgressBar):
    """Lightning's bar, described by the epoch out of the limit, with the loss and the last
    val/acc beside it (not Lightning's `v_num`), redrawn at most every REDRAW_S seconds."""

    def __init__(self) -> None:
        super().__init__()
        self.drawn = -REDRAW_S  # time.monotonic() of the last redraw

    def due(self, batch_idx: int, total: float | int | None) -> bool:
        """Whether the bar redraws after batch `batch_idx` of `total`: the last, or REDRAW_S
        after the last redraw."""
        now = time.monotonic()
        if batch_idx + 1 == total or now - self.drawn >= REDRAW_S:
            self.drawn = now
            return True
        return False

    def on_train_epoch_start(self, trainer: L.Trainer, *args: Any) -> None:
        super().on_train_epoch_start(trainer, *args)
        self.train_progress_bar.set_description(epoch_of(trainer))

    def on_train_batch_end(
        self, trainer: L.Trainer, pl_module: L.LightningModule, outputs: Any, batch: Any, i: int
    ) -> None:
        bar = self.train_progress_bar
        if self.is_enabled and not bar.disable and self.due(i, bar.total):
            bar.set_postfix(self.get_metrics(trainer, pl_module), refresh=False)
            bar.n = i + 1
            bar.refresh()  # once: Lightning's bar redraws for the count and for the metrics

    def on_validation_batch_end(
        self,
        trainer: L.Trainer,
        pl_module: L.LightningModule,
        outputs: Any,
        batch: Any,
        i: int,
        dataloader_idx: int = 0,
    ) -> None:
        if self.due(i, self.total_val_batches_current_dataloader):
            super().on_validation_batch_end(trainer, pl_module, outputs, batch, i, dataloader_idx)

    def get_metrics(self, trainer: L.Trainer, pl_module: L.LightningModule) -> dict[str, Any]:
        return shown(trainer.callback_metrics)


class JobLog(logging.LoggerAdapter):
    """The lines of one run among several side by side: `<its directory's name>: <line>`."""

    def __init__(self, logger: logging.Logger, run_dir: str | Path):
        super().__init__(logger, {"run_dir": str(run_dir)})

    def process(self, msg: Any, kwargs: Any) -> tuple[Any, Any]:
        return f"{Path(self.extra['run_dir']).name}: {msg}", kwargs


Say = logging.Logger | logging.LoggerAdapter


class EpochLines(L.Callback):
    """One log line per epoch, after its validation: `epoch <e>/<limit>: loss <loss>, val/acc
    <acc> (<seconds> s)`, through `say` (JobLog for a run side by side with others); it reaches
    the console and train.log through Hydra's handlers."""

    def __init__(self, say: Say = log) -> None:
        self.started = time.perf_counter()
        self.say = say

    def on_train_epoch_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self.started = time.perf_counter()

    def on_train_epoch_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        took = time.perf_counter() - self.started
        epoch, limit = trainer.current_epoch + 1, trainer.max_epochs
        self.say.info(epoch_line(epoch, limit, trainer.callback_metrics, took))


def progress_callbacks(
    enabled: bool, side_by_side: str | Path | None = None
) -> tuple[list[L.Callback], bool]:
    """The callbacks that show progress, and whether Lightning's bar stays enabled: the bar on a
    terminal, lines elsewhere, nothing when the bar is turned off. A run side by side with others
    (`side_by_side`: its run directory) shows lines that begin with its directory's name: bars
    would draw over each other."""
    if not enabled:
        return [], False
    if side_by_side is not None:
        return [EpochLines(JobLog(log, side_by_side))], False
    if sys.stderr.isatty():  # tqdm draws on stderr
        return [EpochBar()], True
    return [EpochLines()], False
