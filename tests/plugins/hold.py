"""A callback for the tests that signal a job part-way through its run (tests/test_slurm.py, and
others through tests/helpers/hold.py), brought in by import path
(`+callbacks.hold._target_=hold.HoldAfterFirstEpoch`, tests/plugins on PYTHONPATH): a process
that has trained a run's first epoch waits, as the second starts (the first's checkpoints
written: Lightning writes them as the epoch ends), until a file named `release` is in the run
directory. A signal sent meanwhile finds the run with most of its epochs ahead of it, however fast
the machine trains; the wait changes no number of the run. A process that resumes the run after
its first epoch does not wait."""

import logging
import time
from pathlib import Path

import pytorch_lightning as L

log = logging.getLogger(__name__)

RELEASE = "release"


class HoldAfterFirstEpoch(L.Callback):
    def __init__(self, timeout_s: float = 600.0, poll_s: float = 0.1):
        self.timeout_s, self.poll_s = timeout_s, poll_s
        self.trained_first = False  # this process trained the first epoch

    def on_train_epoch_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self.trained_first |= trainer.current_epoch == 0

    def on_train_epoch_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if not (self.trained_first and trainer.current_epoch == 1):
            return
        release = Path(trainer.default_root_dir) / RELEASE
        log.info(f"held after the first epoch until {release} exists")
        deadline = time.monotonic() + self.timeout_s
        while not release.exists() and time.monotonic() < deadline:
            time.sleep(self.poll_s)  # a signal's handler runs meanwhile, and the wait goes on
        log.info("released")
