"""The experiment loggers a run may choose besides TensorBoard's (training/tensorboard.py):
Lightning's CSVLogger (`logger=csv`, conf/logger/csv.yaml), resumable. A user's own Lightning
logger comes in by import path (`logger._target_`, checked before training by
config/machine_checks.py: check_logger) and needs nothing from here.

A resumed run logs again the metrics from the update it resumes at (its interrupted epoch's):
TensorBoard's writer takes `purge_step` and marks the stale events; the CSV logger here takes it
too and keeps the rows of metrics.csv logged before it, where Lightning's would delete the file.
"""

import csv
from pathlib import Path

from pytorch_lightning.loggers import CSVLogger as LightningCSVLogger
from pytorch_lightning.loggers.csv_logs import ExperimentWriter

METRICS, HPARAMS = "metrics.csv", "hparams.yaml"  # Lightning's names for the CSVLogger's files


class CSVLogger(LightningCSVLogger):
    """Lightning's CSVLogger (metrics.csv and hparams.yaml in `save_dir/name/version`) with
    `purge_step`: a resumed run keeps the rows logged before that update (`kept_rows`)."""

    def __init__(
        self,
        save_dir: str,
        name: str = "",
        version: str = "csv",
        prefix: str = "",
        flush_logs_every_n_steps: int = 100,
        purge_step: int | None = None,
    ):
        super().__init__(save_dir, name, version, prefix, flush_logs_every_n_steps)
        self.purge_step = purge_step

    @property
    def experiment(self) -> ExperimentWriter:
        """Lightning's writer; for a resumed run, first made with the rows kept from the run's
        earlier processes (written at once), so it finds no file of theirs to delete."""
        if self.purge_step is None:
            return super().experiment
        kept = kept_rows(Path(self.log_dir), self.purge_step)
        self.purge_step = None
        writer = super().experiment
        if kept:
            writer.metrics[:0] = kept
            writer.save()
        return writer


def kept_rows(log_dir: Path, purge_step: int) -> list[dict[str, str]]:
    """The rows of `log_dir`'s metrics.csv logged before update `purge_step`, as written; the
    file and hparams.yaml (written again as the run starts) are removed."""
    path = log_dir / METRICS
    rows = []
    if path.is_file():
        with open(path, newline="") as f:
            rows = [row for row in csv.DictReader(f) if int(float(row["step"])) < purge_step]
    for name in (METRICS, HPARAMS):
        (log_dir / name).unlink(missing_ok=True)
    return rows
