"""Every call into Lightning's private API (and one into TensorBoard's writer), in one module, so
that an upgrade of either library touches one file (pinned: pytorch-lightning 2.6.6,
tensorboard 2.21.0 in pyproject.toml).

A pack (sweeps/) drives each member's callbacks from the pack's own loop through a Trainer of the
member's that is never fitted: it calls the member's callback hooks, hands them the metrics the
pack logged for that member, and reads the loop's counters, none of which Lightning offers as
public API. A diverged run skips the validation of its weights (a loop's flag). A run writes its
HPARAMS records through the logger's event writer. An update steps its optimizer as Lightning's
manual optimization counts a step, and a checkpoint counts its steps in both modes' progress. A
module (training/module.py) reads the Trainer it is attached to, and sets the name of the hook it
is in at less cost than nn.Module's __setattr__. A signal that a callback ignores for the rest of
the process stays ignored when fit ends (Lightning's signal connector puts back the handlers it
found as fit started).
"""

import signal
from collections.abc import Callable
from contextlib import nullcontext
from typing import Any

import pytorch_lightning as L
import torch
from pytorch_lightning.loggers import TensorBoardLogger
from pytorch_lightning.profilers import PassThroughProfiler
from pytorch_lightning.trainer import call
from pytorch_lightning.trainer.states import TrainerFn
from pytorch_lightning.utilities.types import LRSchedulerConfig
from tensorboard.compat.proto.summary_pb2 import Summary
from torch.optim.lr_scheduler import LRScheduler

# The attribute in which Lightning names the hook a module is in (a str or None), set around
# every hook call (call_hooks sets it as Lightning does).
CURRENT_HOOK = "_current_fx_name"


def attached_trainer(module: L.LightningModule) -> L.Trainer | None:
    """The Trainer `module` is attached to, or None (where `module.trainer` raises)."""
    return module._trainer


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


def ignore_after_fit(trainer: L.Trainer, signum: int) -> None:
    """Ignore `signum` from now on, past the end of `trainer`'s fit: when fit ends, Lightning puts
    back every handler it found as fit started (its signal connector's snapshot), which would
    otherwise install the handler again."""
    signal.signal(signum, signal.SIG_IGN)
    trainer._signal_connector._original_handlers[signum] = signal.SIG_IGN


def load_callback_states(trainer: L.Trainer, checkpoint: dict[str, Any]) -> None:
    """Restore `trainer`'s callbacks from `checkpoint`, as `Trainer.fit(ckpt_path=...)` does."""
    call._call_callbacks_on_load_checkpoint(trainer, checkpoint)
    call._call_callbacks_load_state_dict(trainer, checkpoint)


def attach_unfitted(
    trainer: L.Trainer,
    module: L.LightningModule,
    optimizer: torch.optim.Optimizer,
    schedule: LRScheduler | None = None,
) -> None:
    """Make `trainer` (never fitted) hold `module`, its `optimizer` and the optimizer's
    `schedule` as if fitting, so that its callbacks (checkpoints) see a fitting Trainer, and
    its checkpoints hold the schedule as a fitted Trainer's do (`lr_schedulers`)."""
    trainer.state.fn = TrainerFn.FITTING
    trainer.strategy.connect(module)
    trainer.strategy.optimizers = [optimizer]
    trainer.strategy.lr_scheduler_configs = (
        [] if schedule is None else [LRSchedulerConfig(schedule)]
    )
    module.trainer = trainer


def add_summary(logger: TensorBoardLogger, summary: Summary) -> None:
    """Write `summary` to the logger's event file (the writer starts its file on first use)."""
    logger.experiment._get_file_writer().add_summary(summary)


def plain_update_possible(trainer: L.Trainer) -> bool:
    """Whether an update is the plain loop's (zero_grad, loss, backward, step) under `trainer`:
    no gradient clipping, no accumulation and no loss scaling (precision 32-true or 64-true),
    the settings only Lightning's automatic optimization applies."""
    return (
        not trainer.gradient_clip_val
        and trainer.accumulate_grad_batches == 1
        and trainer.precision in ("32-true", "64-true")
    )


def plain_update(
    module: L.LightningModule, loss_of: Callable[[], torch.Tensor | None]
) -> torch.Tensor | None:
    """One update of `module` (manual optimization) as a plain loop makes it: its optimizer's
    zero_grad, the loss `loss_of()`, backward, the optimizer's step, counted as Lightning's
    LightningOptimizer.step counts one (`trainer.global_step`), without the strategy's and the
    precision plugin's calls and callback hooks around each part, which do nothing under
    plain_update_possible. The same numbers as automatic optimization's update: the same ops,
    the gradients zeroed before the forward instead of after it; the module's `before_step`
    and `after_step` clip the gradients and step the schedule (training/recipes.py) where
    automatic optimization does."""
    optimizer = module.optimizers()
    optimizer.zero_grad()
    loss = loss_of()
    if loss is not None:
        loss.backward()
    module.before_step()  # the recipe's gradient clipping
    optimizer._on_before_step()  # the manual loop's: ready, and the profiler's start
    optimizer.optimizer.step()
    optimizer._on_after_step()
    module.after_step(epoch_ends(module.trainer))  # the recipe's schedule
    return loss


def epoch_ends(trainer: L.Trainer) -> bool:
    """Whether the update in progress is the epoch's last, after which Lightning's automatic
    optimization steps a per-epoch schedule (before the epoch's validation)."""
    return trainer.fit_loop.epoch_loop._num_ready_batches_reached()


AUTOMATIC_STEPS = ("epoch_loop.automatic_optimization.optim_progress", "optimizer", "step")
MANUAL_STEPS = ("epoch_loop.manual_optimization.optim_step_progress",)


def carry_step_counts(checkpoint: dict[str, Any], automatic: bool) -> None:
    """A checkpoint written by an update of the other optimization mode (a run of an earlier
    version, or one that clipped gradients) counts its steps in that mode's progress, which the
    other mode's `global_step` does not read: copy them over, so the run resumes at its step."""
    loop = checkpoint.get("loops", {}).get("fit_loop")
    if loop is None:
        return
    ours, theirs = (AUTOMATIC_STEPS, MANUAL_STEPS) if automatic else (MANUAL_STEPS, AUTOMATIC_STEPS)
    to, source = (_progress(loop, path) for path in (ours, theirs))
    if to is None or source is None or to["total"]["completed"] or not source["total"]["completed"]:
        return
    for key in ("total", "current"):
        to[key] = dict(source[key])


def _progress(loop: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any] | None:
    for key in path:
        loop = loop.get(key) if isinstance(loop, dict) else None
    return loop


class NoProfiler(PassThroughProfiler):
    """Lightning's profiler when none is asked for (`trainer.profiler` unset), as
    PassThroughProfiler records nothing, at less cost: Lightning enters `profile(name)` around
    every hook call, some twenty-five times an update, and PassThroughProfiler's is a generator
    made anew each time; this one is the same empty context each time."""

    _nothing = nullcontext()

    def profile(self, action_name: str) -> nullcontext:  # type: ignore[override]
        return self._nothing
