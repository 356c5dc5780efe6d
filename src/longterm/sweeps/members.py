"""A pack's members as runs of their own (sweeps/pack.py): each member's parts, the logger that
hands each member its metrics, and the callback that drives each member's own callbacks from the
pack's loop and ends each member when it stops.

A member stops on its own while the others go on:
- solved, or at its own `trainer.max_epochs` (lr_race's cap): at the end of the epoch, as alone;
- diverged in mid-epoch: it trains no more and, as alone, its weights are neither validated nor
  saved (callbacks.StopOnDivergence); its epoch-end callbacks run and it ends.
"""

import time
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import pytorch_lightning as L
import torch
from omegaconf import DictConfig
from pytorch_lightning.loggers import Logger
from torch import Tensor

from longterm.sweeps.pack_module import PackModule
from longterm.training.library_internals import (
    call_hooks,
    logs_now,
    set_callback_metrics,
    updates_done,
)
from longterm.training.module import MemoryTaskModule
from longterm.training.result import close_record, outcome
from longterm.training.tensorboard import end_session
from longterm.training.terminal import JobLog, epoch_line


class MemberLog(JobLog):
    """Log lines of one member: its directory's name first on the console, as a run's among
    several side by side (training/terminal.py); the record carries `member` (its run
    directory), by which a launcher writes it to the member's train.log."""

    def process(self, msg: Any, kwargs: Any) -> tuple[Any, Any]:
        msg, kwargs = super().process(msg, kwargs)
        return msg, {**kwargs, "extra": {"member": self.extra["run_dir"]}}


TRAINING, ENDING, ENDED = "training", "ending", "ended"


@dataclass(eq=False)
class Member:
    """One run of a pack and its own parts."""

    cfg: DictConfig
    run_dir: Path
    module: MemoryTaskModule
    optimizer: torch.optim.Optimizer
    callbacks: list[L.Callback]
    logger: Any  # the run's TensorBoardLogger, or False
    trainer: L.Trainer  # never fitted: its callbacks, logger and checkpoints
    ckpt: Path | None
    resumed_at: int | None
    say: MemberLog
    index: int = 0
    stream: int = 0
    result: dict[str, Any] = field(default_factory=dict)
    state: str = TRAINING
    epochs: int | None = None  # the epochs of a member that ended in mid-epoch
    started: float = 0.0

    @property
    def max_epochs(self) -> int:
        return self.cfg.trainer.max_epochs


class PackLogger(Logger):
    """The pack's logger: hands metric `<i>/<name>` to member i's own logger as `<name>`, at the
    step Lightning gives (that of the run alone)."""

    def __init__(self, members: list[Member]):
        super().__init__()
        self.members = members

    @property
    def name(self) -> str:
        return "pack"

    @property
    def version(self) -> int:
        return 0

    def log_hyperparams(self, params: Any, *args: Any, **kwargs: Any) -> None:
        """Each member's are written by its own logger (tensorboard.start_session)."""

    def log_metrics(self, metrics: Mapping[str, float], step: int | None = None) -> None:
        for i, values in own_metrics(metrics).items():
            if self.members[i].logger:
                self.members[i].logger.log_metrics(values, step)

    def save(self) -> None:
        for member in self.members:
            if member.logger and member.state != ENDED:
                member.logger.save()


def own_metrics(metrics: Mapping[str, Any]) -> dict[int, dict[str, Any]]:
    """`<i>/<name>` metrics by member i, as `<name>`."""
    by_member: dict[int, dict[str, Any]] = defaultdict(dict)
    for key, value in metrics.items():
        index, _, name = key.partition("/")
        if index.isdigit():
            by_member[int(index)][name] = value
    return by_member


class MemberHooks(L.Callback):
    """Drives each member's own callbacks from the pack's loop, with the member's Trainer and
    module, and ends each member when it stops (see the module docstring)."""

    def __init__(self, members: list[Member], module: PackModule):
        self.members, self.module = members, module
        self.epoch_started = time.perf_counter()

    def training(self) -> list[Member]:
        return [self.members[i] for i in self.module.active]

    def dispatch(self, trainer: L.Trainer, hook: str, members: list[Member], *args: Any) -> None:
        """Call `hook` of each member's callbacks, its metrics those the pack logged for it."""
        metrics = own_metrics(trainer.callback_metrics)
        for member in members:
            own = metrics.get(member.index, {})
            if member.index in self.module.losses:
                own["train/loss"] = self.module.losses[member.index].detach()
            set_callback_metrics(member.trainer, own)
            call_hooks(member.trainer, hook, *args)

    def setup(self, trainer: L.Trainer, pl_module: L.LightningModule, stage: str) -> None:
        self.dispatch(trainer, "setup", self.training(), stage)

    def on_fit_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self.dispatch(trainer, "on_fit_start", self.training())

    def on_train_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        now = time.perf_counter()
        for member in self.members:
            member.started = now
        self.dispatch(trainer, "on_train_start", self.training())
        self.settle(trainer, at_epoch_end=False)

    def on_train_epoch_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self.end_stopped(trainer)
        self.epoch_started = time.perf_counter()
        self.dispatch(trainer, "on_train_epoch_start", self.training())

    def on_train_batch_end(
        self, trainer: L.Trainer, pl_module: L.LightningModule, outputs: Any, batch: Any, i: int
    ) -> None:
        for member in self.training():
            loss = self.module.losses[member.index]
            own = batch[member.stream]
            call_hooks(member.trainer, "on_train_batch_end", loss, own, i)
            if member.trainer.should_stop:
                self.halt(trainer, member, loss)
        # the training loss at the steps at which Lightning logs a run's (should_update_logs)
        if logs_now(trainer):
            step = updates_done(trainer)
            for member in self.training():
                if member.logger:
                    loss = self.module.losses[member.index].item()
                    member.logger.log_metrics({"train/loss": loss}, step)

    def on_validation_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self.dispatch(trainer, "on_validation_start", self.training())

    def on_validation_epoch_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self.dispatch(trainer, "on_validation_epoch_start", self.training())

    def on_validation_epoch_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self.dispatch(trainer, "on_validation_epoch_end", self.training())

    def on_validation_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self.dispatch(trainer, "on_validation_end", self.training())

    def on_train_epoch_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        members = self.training()
        self.dispatch(trainer, "on_train_epoch_end", members)
        self.show(members, trainer.current_epoch + 1)
        self.settle(trainer, at_epoch_end=True)

    def on_train_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        for member in self.training():
            member.state = ENDING  # the pack's limit is each member's own, or every member stopped
        self.end_stopped(trainer)

    def on_exception(
        self, trainer: L.Trainer, pl_module: L.LightningModule, exception: BaseException
    ) -> None:
        self.dispatch(trainer, "on_exception", self.training(), exception)

    def settle(self, trainer: L.Trainer, at_epoch_end: bool) -> None:
        """Members that asked to stop, or reached their own epoch limit at an epoch's end, train
        no more; they end once the epoch has been counted (end_stopped)."""
        epochs = trainer.current_epoch + (1 if at_epoch_end else 0)
        for member in self.training():
            if member.trainer.should_stop or (at_epoch_end and epochs >= member.max_epochs):
                member.state = ENDING
                self.module.active.remove(member.index)
        self.module.activity_changed()
        if not self.module.active:
            trainer.should_stop = True

    def halt(self, trainer: L.Trainer, member: Member, loss: Tensor) -> None:
        """A member that stopped in mid-epoch (diverged): as alone, its training loss of this
        update is logged, its weights are not validated (callbacks.StopOnDivergence), its
        epoch-end callbacks run, and it ends."""
        self.module.active.remove(member.index)
        self.module.activity_changed()
        if member.logger:
            member.logger.log_metrics({"train/loss": float(loss)}, updates_done(trainer))
        set_callback_metrics(member.trainer, {"train/loss": loss.detach()})
        call_hooks(member.trainer, "on_train_epoch_end")
        self.show([member], trainer.current_epoch + 1)
        member.epochs = trainer.current_epoch + 1  # the run alone counts the epoch it ended in
        member.state = ENDING
        self.end(trainer, member)
        if not self.module.active:
            trainer.should_stop = True

    def show(self, members: list[Member], epoch: int) -> None:
        """A member's line per epoch, as a run alone shows without a terminal (terminal.py)."""
        took = time.perf_counter() - self.epoch_started
        for member in members:
            if member.cfg.trainer.get("enable_progress_bar", True):
                metrics = member.trainer.callback_metrics
                member.say.info(epoch_line(epoch, member.max_epochs, metrics, took))

    def end_stopped(self, trainer: L.Trainer) -> None:
        for member in self.members:
            if member.state == ENDING:
                self.end(trainer, member)

    def end(self, trainer: L.Trainer, member: Member) -> None:
        """A member's run ends: its end-of-fit callbacks, its logger closed, its result."""
        for hook in ("on_train_end", "on_fit_end"):
            call_hooks(member.trainer, hook)
        call_hooks(member.trainer, "teardown", stage="fit")
        if member.logger:
            member.logger.finalize("success")
        epochs = trainer.current_epoch if member.epochs is None else member.epochs
        counts = outcome(member.callbacks, epochs, trainer.global_step, interrupted=False)
        seconds = time.perf_counter() - member.started
        ended = partial(end_session, member.logger)
        member.result = close_record(member.cfg, member.result, counts, seconds, ended, member.say)
        member.state = ENDED
