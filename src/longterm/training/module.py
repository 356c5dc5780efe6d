"""The LightningModule: the training recipe (training/recipes.py: the paper's Adam by default),
and the task's loss and accuracy: MSE and the paper's tolerance accuracy for regression (§2.2),
cross-entropy and the accuracy of the arg-max for classification; for tasks that label steps,
both over the labelled steps only."""

import inspect
from collections.abc import Callable
from typing import Any

import pytorch_lightning as L
import torch
from torch import Tensor, nn
from torch.nn import functional as F
from torchmetrics import Metric
from torchmetrics.classification import MulticlassAccuracy

from longterm.tasks import NO_TARGET
from longterm.training.batches import Batch
from longterm.training.library_internals import (
    CURRENT_HOOK,
    attached_trainer,
    carry_step_counts,
    logs_now,
    plain_update,
    plain_update_possible,
    set_callback_metric,
    updates_done,
)
from longterm.training.metrics import TOLERANCE, ToleranceAccuracy
from longterm.training.recipes import Recipe, Schedule


class PlainLoopModule(L.LightningModule):
    """A LightningModule whose update is the plain loop's (zero_grad, loss, backward, step;
    library_internals.plain_update) where its trainer neither clips gradients, accumulates them
    nor scales the loss, and Lightning's automatic optimization where it does: its closure and
    the callback hooks around each part of an update cost more than a short update's kernels
    (docs/performance_runs.md). Its batches are made on the host: on the CPU they stay as
    they are, not walked tensor by tensor to the device they are on."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # Lightning reads the steps' signatures (inspect.getfullargspec) at every step, to know
        # whether to pass batch_idx; a function's `__signature__` is what inspect returns first.
        super().__init_subclass__(**kwargs)
        for name in ("training_step", "validation_step"):
            step = cls.__dict__.get(name)
            if inspect.isfunction(step):
                step.__signature__ = inspect.signature(step, follow_wrapped=False)

    def __setattr__(self, name: str, value: Any) -> None:
        # Lightning names the hook it is in (CURRENT_HOOK, a str or None) around every hook call,
        # some twenty times an update; nn.Module's __setattr__ looks for a parameter, a module or
        # a buffer of that name first, several times the cost of setting it.
        if name == CURRENT_HOOK:
            object.__setattr__(self, name, value)
        else:
            super().__setattr__(name, value)

    @property
    def automatic_optimization(self) -> bool:
        # Lightning asks at every `global_step`: decided once per trainer
        trainer = attached_trainer(self)
        if trainer is None:
            return True
        if self.__dict__.get("_plain_under") is not trainer:
            self.__dict__["_plain_under"] = trainer
            self.__dict__["_plain"] = plain_update_possible(trainer)
        return not self.__dict__["_plain"]

    def update(self, loss_of: Callable[[], Tensor | None]) -> Tensor | None:
        """The training step's: the loss `loss_of()`, and under the plain loop the update."""
        return loss_of() if self.automatic_optimization else plain_update(self, loss_of)

    def before_step(self) -> None:
        """The plain loop's, between backward and the optimizer's step (gradient clipping)."""

    def after_step(self, epoch_ends: bool) -> None:
        """The plain loop's, after the optimizer's step (`epoch_ends`: after the epoch's last
        update): what Lightning's automatic optimization does there (a schedule's step)."""

    def on_load_checkpoint(self, checkpoint: dict) -> None:
        carry_step_counts(checkpoint, self.automatic_optimization)

    def transfer_batch_to_device(
        self, batch: Any, device: torch.device, dataloader_idx: int
    ) -> Any:
        if device.type == "cpu":
            return batch
        return super().transfer_batch_to_device(batch, device, dataloader_idx)


class MemoryTaskModule(PlainLoopModule):
    """Trains `net` (x (B, T, F), mask (B, T) -> (B, n_outputs)) on the task's target: a value
    (`loss="mse"`, n_outputs 1) or a class in 0..n_outputs-1 (`loss="cross_entropy"`, logits).

    `per_step`: `net` gives (B, T, n_outputs) and y is (B, T), a class on labelled steps and
    NO_TARGET on the others, which the loss and the accuracy skip (cross-entropy only); training
    and validation apply the head at the labelled steps only (`labelled`), `forward` at all.

    `accuracy` (task.accuracy, a classification's): `micro`, the fraction of targets predicted
    right; `macro`, torchmetrics' MulticlassAccuracy(average="macro") over the epoch's targets,
    the mean over classes of the fraction of each class's targets predicted right (classes
    neither predicted nor a target left out), mad-lab's test accuracy (mad/metrics.py)."""

    def __init__(
        self,
        net: nn.Module,
        lr: float = 1e-3,
        recipe: Recipe | None = None,
        tolerance: float = TOLERANCE,
        loss: str = "mse",
        n_outputs: int = 1,
        per_step: bool = False,
        accuracy: str = "micro",
    ):
        super().__init__()
        self.net, self.lr, self.recipe = net, lr, recipe or Recipe()
        self.schedule: Schedule | None = None  # the optimizer's, made with it
        self.classify, self.per_step = loss == "cross_entropy", per_step
        if per_step and not self.classify:
            raise ValueError("per-step targets need loss=cross_entropy")
        if per_step:
            self.val_acc = MulticlassAccuracy(
                num_classes=n_outputs, average=accuracy, ignore_index=NO_TARGET
            )
        elif self.classify:
            self.val_acc = MulticlassAccuracy(num_classes=n_outputs, average=accuracy)
        elif loss == "mse":
            self.val_acc = ToleranceAccuracy(tolerance)
        else:
            raise ValueError(f"unknown loss {loss!r}; choose mse or cross_entropy")

    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        return self.prediction(self.net(x, mask))

    def prediction(self, out: Tensor) -> Tensor:
        """The net's output as the loss reads it: logits, or a regression's values (B,)."""
        return out if self.classify else out.squeeze(-1)

    def loss(self, pred: Tensor, y: Tensor) -> Tensor:
        if self.per_step:  # the mean over labelled steps: (B, T, C), (B, T) -> ()
            return F.cross_entropy(pred.flatten(0, 1), y.flatten(), ignore_index=NO_TARGET)
        return F.cross_entropy(pred, y.long()) if self.classify else F.mse_loss(pred, y)

    def step_loss(self, batch: Batch) -> Tensor:
        """The training loss of one batch (per step: the head at the labelled steps only)."""
        x, y, mask = batch
        if self.per_step:
            return F.cross_entropy(*self.labelled(x, y, mask))
        return self.loss(self(x, mask), y)

    def labelled(self, x: Tensor, y: Tensor, mask: Tensor | None) -> tuple[Tensor, Tensor]:
        """Per step: the logits (N, C) at the N labelled steps (y != NO_TARGET) and their classes
        (N,). The head runs on those steps' rows of `net.features` (B, T, D) only: at every step
        a vocabulary head costs B T / N times as much (MQAR labels T / 16 steps), and the other
        rows add nothing to `loss` or to its gradients, so the mean over the N rows is `loss` of
        the full logits, to rounding (tests/test_head_at_labels.py). A net without `features`
        gives its full logits (B, T, C), picked the same way."""
        at = y != NO_TARGET
        features = getattr(self.net, "features", None)
        if features is None:
            return self(x, mask)[at], y[at]
        return self.net.head(features(x, mask)[at]), y[at]

    def training_step(self, batch: Batch, batch_idx: int) -> Tensor:
        loss = self.update(lambda: self.step_loss(batch))
        set_callback_metric(self.trainer, "train/loss", loss.detach())  # the bar shows it
        return loss

    def on_train_batch_end(self, outputs: dict[str, Tensor], batch: Batch, batch_idx: int) -> None:
        log_training_loss(self.trainer, outputs["loss"])

    def val_metrics(self, batch: Batch) -> dict[str, Tensor | Metric]:
        """One validation batch: the accuracy metric updated, and what to log (its loss, and the
        metric, which Lightning computes over the epoch)."""
        x, y, mask = batch
        if self.per_step:  # the labelled steps' rows, as `step_loss`
            logits, labels = self.labelled(x, y, mask)
            if len(labels):  # a batch may label no step (the metric cannot take no rows)
                self.val_acc(logits, labels)
            return {"val/loss": F.cross_entropy(logits, labels), "val/acc": self.val_acc}
        pred = self(x, mask)
        self.val_acc(pred, y.long() if self.classify else y)
        return {"val/loss": self.loss(pred, y), "val/acc": self.val_acc}

    def validation_step(self, batch: Batch, batch_idx: int) -> None:
        for name, value in self.val_metrics(batch).items():
            self.log(name, value, batch_size=len(batch[1]))

    def make_optimizer(self) -> tuple[torch.optim.Optimizer, Schedule | None]:
        """The recipe's optimizer of the parameters at `lr`, and its schedule (None: constant)."""
        names, params = zip(*self.named_parameters(), strict=True)
        optimizer = self.recipe.optimizer(params, self.lr, names)
        self.schedule = self.recipe.scheduler(optimizer)
        return optimizer, self.schedule

    def configure_optimizers(self) -> torch.optim.Optimizer | dict[str, Any]:
        optimizer, schedule = self.make_optimizer()
        if schedule is None:
            return optimizer
        return {"optimizer": optimizer, "lr_scheduler": self.recipe.lightning_schedule(schedule)}

    def configure_gradient_clipping(
        self,
        optimizer: torch.optim.Optimizer,
        gradient_clip_val: float | None = None,
        gradient_clip_algorithm: str | None = None,
    ) -> None:
        # automatic optimization's: the Trainer's clipping (trainer.gradient_clip_val), then
        # the recipe's (optim.clip)
        super().configure_gradient_clipping(optimizer, gradient_clip_val, gradient_clip_algorithm)
        self.recipe.clip_gradients(self.parameters())

    def before_step(self) -> None:
        self.recipe.clip_gradients(self.parameters())

    def after_step(self, epoch_ends: bool) -> None:
        self.recipe.after_update(self.schedule, epoch_ends)


def log_training_loss(trainer: L.Trainer, loss: Tensor) -> None:
    """`train/loss` as `self.log` in the training step would log it, without Lightning's result
    collection, a large share of a short update's time (docs/performance_runs.md): the loggers'
    scalar at the updates at which Lightning logs (`log_every_n_steps`, and the update a run
    stops at), at the same step. Called after the callbacks' `on_train_batch_end`, where
    Lightning decides that; the training step has set the callbacks' metric (the bar's)."""
    if trainer.loggers and logs_now(trainer):
        value = loss.item()
        for logger in trainer.loggers:
            logger.log_metrics({"train/loss": value}, updates_done(trainer))
