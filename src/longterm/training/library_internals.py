"""Every call into Lightning's private API (and one into TensorBoard's writer), in one module, so
that an upgrade of either library touches one file (pinned: pytorch-lightning 2.6.6,
tensorboard 2.21.0 in pyproject.toml).

A pack (sweeps/) drives each member's callbacks from the pack's own loop through a Trainer of the
member's that is never fitted: it calls the member's callback hooks, hands them the metrics the
pack logged for that member, and reads the loop's counters, none of which Lightning offers as
public API. A diverged run skips the validation of its weights (a loop's flag). A run writes its
HPARAMS records through the logger's event writer.
"""

from typing import Any

import pytorch_lightning as L
import torch
from pytorch_lightning.loggers import TensorBoardLogger
from pytorch_lightning.trainer import call
from pytorch_lightning.trainer.states import TrainerFn
from tensorboard.compat.proto.summary_pb2 import Summary


def call_hooks(trainer: L.Trainer, hook: str, *args: Any, **kwargs: Any) -> None:
    """Call `hook` of every callback of `trainer` whose class has its own, as Lightning's loop
    does (which calls the others' too: `L.Callback`'s, which do nothing, at a cost per call that
    a pack pays once per member and update)."""
    pl_module = trainer.lightning_module
    previous = pl_module._current_fx_name if pl_module else None
    if pl_module:
        pl_module._current_fx_name = hook
    try:
        for callback in trainer.callbacks:
            if getattr(type(callback), hook) is not getattr(L.Callback, hook):
                getattr(callback, hook)(trainer, pl_module, *args, **kwargs)
    finally:
        if pl_module:
            pl_module._current_fx_name = previous


def set_callback_metrics(trainer: L.Trainer, metrics: dict[str, Any]) -> None:
    """What `trainer.callback_metrics` shows its callbacks (the stopping rules, checkpoints)."""
    trainer._logger_connector._callback_metrics = metrics


def set_callback_metric(trainer: L.Trainer, name: str, value: Any) -> None:
    """One entry of `trainer.callback_metrics`, as `self.log` of a training step leaves it."""
    trainer._logger_connector._callback_metrics[name] = value


def logs_now(trainer: L.Trainer) -> bool:
    """Whether Lightning logs the training step now (`log_every_n_steps`)."""
    return trainer._logger_connector.should_update_logs


def updates_done(trainer: L.Trainer) -> int:
    """The updates the fit loop has made: the step its loggers are given."""
    return trainer.fit_loop.epoch_loop._batches_that_stepped


def skip_validation(trainer: L.Trainer) -> None:
    """Skip the validation Lightning would run after this batch, when `trainer` runs its own loop
    (a pack's member's loop is the pack's, which validates the other members)."""
    if trainer.fit_loop.trainer is trainer:
        trainer.fit_loop.epoch_loop._skip_next_val = True


def load_callback_states(trainer: L.Trainer, checkpoint: dict[str, Any]) -> None:
    """Restore `trainer`'s callbacks from `checkpoint`, as `Trainer.fit(ckpt_path=...)` does."""
    call._call_callbacks_on_load_checkpoint(trainer, checkpoint)
    call._call_callbacks_load_state_dict(trainer, checkpoint)


def attach_unfitted(
    trainer: L.Trainer, module: L.LightningModule, optimizer: torch.optim.Optimizer
) -> None:
    """Make `trainer` (never fitted) hold `module` and its `optimizer` as if fitting, so that
    its callbacks (checkpoints) see a fitting Trainer."""
    trainer.state.fn = TrainerFn.FITTING
    trainer.strategy.connect(module)
    trainer.strategy.optimizers = [optimizer]
    module.trainer = trainer


def add_summary(logger: TensorBoardLogger, summary: Summary) -> None:
    """Write `summary` to the logger's event file (the writer starts its file on first use)."""
    logger.experiment._get_file_writer().add_summary(summary)
