"""Lightning callbacks that decide when a run ends (solved, or diverged) and keep the logs in step
with the checkpoints."""

import logging
import signal as signals
import subprocess
import threading
from types import FrameType

import pytorch_lightning as L
import torch

from longterm.choices import AUTO
from longterm.training.library_internals import ignore_after_fit, skip_validation

log = logging.getLogger(__name__)


class StopWhenSolved(L.Callback):
    """Stop once the monitored validation metric reaches `threshold` (>=, so 100% counts), or
    once it exceeds it with `strict` (>).

    Lightning's EarlyStopping compares `stopping_threshold` strictly (>), so it never fires at
    exactly 1.0; this callback is the paper's rule "train until 100% validation accuracy".
    Zoology stops when validation accuracy > 0.99 (zoology/train.py): threshold 0.99 with
    `strict`; without it a run also stops at exactly 0.99.
    Records the history and the 1-based epoch at which the threshold was first reached.
    """

    def __init__(self, monitor: str = "val/acc", threshold: float = 1.0, strict: bool = False):
        self.monitor, self.threshold, self.strict = monitor, threshold, strict
        self.history: list[float] = []
        self.solved_epoch: int | None = None

    def on_validation_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if trainer.sanity_checking or self.monitor not in trainer.callback_metrics:
            return
        value = float(trainer.callback_metrics[self.monitor])
        self.history.append(value)
        reached = value > self.threshold if self.strict else value >= self.threshold
        if reached and self.solved_epoch is None:
            self.solved_epoch = trainer.current_epoch + 1
            if trainer.logger is not None:  # self.log is not allowed in this hook
                epoch = {"verdict/epoch_solved": self.solved_epoch}
                trainer.logger.log_metrics(epoch, trainer.global_step)
            trainer.should_stop = True

    def on_train_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if self.solved_epoch is not None:  # resumed from the checkpoint of a solved run
            trainer.should_stop = True

    def state_dict(self) -> dict:
        return {"history": self.history, "solved_epoch": self.solved_epoch}

    def load_state_dict(self, state_dict: dict) -> None:
        self.history, self.solved_epoch = state_dict["history"], state_dict["solved_epoch"]


class StopOnDivergence(L.Callback):
    """Stop when the training loss or any parameter is not finite.

    Lightning's EarlyStopping(check_finite=True) only looks at a validation metric once an epoch,
    and never at the parameters. Reading a device's result on the host waits for the device to
    finish its queue, so the check runs every `every_n_updates` updates, and at the last update of
    each epoch, before its validation: `auto` is 1 on the CPU (where the check costs a few
    microseconds and no wait) and, on an accelerator, the Trainer's `log_every_n_steps`, the
    updates at which Lightning reads the logged loss anyway. Between checks each update's loss is
    folded into a flag on the device, which waits for nothing, so a non-finite loss is not missed;
    a non-finite parameter stays non-finite. `diverged_step` is the run's `global_step` at the
    check that saw it: at most `every_n_updates - 1` updates after the update that diverged.

    A diverged run keeps what was measured before: the validation Lightning would run on its
    weights is skipped (`skip_validation`) and its checkpoint callbacks save nothing more, so
    `best.ckpt` and `last.ckpt` hold the last finite weights (or are not written at all).
    """

    def __init__(self, every_n_updates: int | str = AUTO):
        self.every_n_updates = every_n_updates
        self.diverged_step: int | None = None
        self.loss_finite: torch.Tensor | None = None  # every loss since the last check, on device
        self.every: int | None = None  # the interval, and the module's parameters, read once
        self.params: list[torch.Tensor] = []

    def interval(self, trainer: L.Trainer, pl_module: L.LightningModule) -> int:
        if self.every_n_updates != AUTO:
            return int(self.every_n_updates)
        return 1 if pl_module.device.type == "cpu" else trainer.log_every_n_steps

    def on_train_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        # once a fit, not at every update (a module's traversal, a few properties)
        self.every = self.interval(trainer, pl_module)
        self.params = list(pl_module.parameters())

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        if self.every is None:  # called without a fit's start (on its own)
            self.on_train_start(trainer, pl_module)
        loss = outputs["loss"] if isinstance(outputs, dict) else outputs
        last = batch_idx + 1 >= trainer.num_training_batches  # validation follows
        if last or trainer.global_step % self.every == 0:
            self.check(trainer, pl_module, loss)
        elif loss is not None:
            finite = torch.isfinite(loss.detach()).all()
            self.loss_finite = finite if self.loss_finite is None else self.loss_finite & finite

    def on_train_epoch_end(self, trainer, pl_module) -> None:
        self.check(trainer, pl_module)

    def check(
        self, trainer: L.Trainer, pl_module: L.LightningModule, loss: torch.Tensor | None = None
    ) -> None:
        """One host read of the flag and of the finiteness of the parameters and of `loss` (this
        update's); stop if any fails."""
        numbers = [p.detach().reshape(-1) for p in self.params or pl_module.parameters()]
        if loss is not None:
            numbers.append(loss.detach().reshape(-1))
        finite = all_finite(torch.cat(numbers))
        if self.loss_finite is not None:
            finite = finite & self.loss_finite
        self.loss_finite = None
        if self.diverged_step is None and not bool(finite):
            self.diverged_step = trainer.global_step
            trainer.should_stop = True
            skip_validation(trainer)
            for callback in trainer.checkpoint_callbacks:
                callback.save_top_k = 0  # ModelCheckpoint: "no models are saved"


def all_finite(numbers: torch.Tensor) -> torch.Tensor:
    """Whether every one of `numbers` (n,) is finite, as `isfinite(numbers).all()`: the smallest
    and the largest are finite exactly when every number is (both propagate a NaN; an infinity is
    one of them), and on the CPU `isfinite` of n numbers, an elementwise op with a bool result per
    number, costs several times one reduction to two (bench/cuts.py: divergence test)."""
    return torch.isfinite(torch.stack(torch.aminmax(numbers))).all()


class FlushLoggers(L.Callback):
    """Flush the loggers whenever a checkpoint is saved.

    TensorBoard's writer buffers events for up to two minutes; a process killed after a
    checkpoint would otherwise lose metrics that the checkpoint already counts as logged, and a
    resumed run would have a gap in its curves.
    """

    def on_save_checkpoint(self, trainer, pl_module, checkpoint) -> None:
        for logger in trainer.loggers:
            logger.save()


class DeferSignal(L.Callback):
    """Run the handler installed for `signal` at the next batch boundary, not mid-statement.

    Under submitit, SIGUSR2 (preemption, or the time limit near) runs submitit's handler, which
    resubmits the job and calls `sys.exit`: raised wherever the main thread happens to be, inside
    a logger's queue or a file write, it can leave TensorBoard's writer waiting up to two minutes
    before the process ends. Lightning defers SIGTERM the same way. A signal that arrives after
    the last batch is dropped: the run is about to write its result, and from then on ignores the
    signal (`ignore_signal`). Does nothing when no Python handler is installed for `signal` (a
    plain local run).

    The handler runs once at a time: a signal that arrives while it runs (a preemption's SIGUSR2
    half a second after a time limit's, while submitit writes the job's pickle) is ignored, not
    run inside it, where submitit's second checkpoint would meet the first's temporary file and
    fail the run while SLURM requeues its job. Once the handler has ended the process (requeued,
    or not), the signal stays ignored until the process exits, so that another can neither
    requeue the job again nor turn the exit into a failure. A handler that returns (submitit's on
    a task other than the first) leaves the signal deferred as before.
    """

    def __init__(self, signal: str = "SIGUSR2"):
        self.signum = signals.Signals[signal]
        self.handler = None
        self.pending: tuple[int, FrameType | None] | None = None
        self.ended = False  # the handler has ended the process

    def _defer(self, signum: int, frame: FrameType | None) -> None:
        log.info(f"{signals.Signals(signum).name} received; handled after this batch")
        self.pending = (signum, frame)

    def on_train_start(self, trainer, pl_module) -> None:
        # Not in on_fit_start: Lightning snapshots every handler after that hook and restores the
        # snapshot when fit ends, which would leave this deferring handler installed.
        handler = signals.getsignal(self.signum)
        if callable(handler) and threading.current_thread() is threading.main_thread():
            self.handler, self.pending = handler, None
            signals.signal(self.signum, self._defer)

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        if self.pending is None:
            return
        pending, self.pending = self.pending, None
        signals.signal(self.signum, signals.SIG_IGN)  # one run of the handler at a time
        try:
            self.handler(*pending)  # submitit's: checkpoint the job, requeue, exit
        except BaseException as e:
            self.ended = True  # the signal stays ignored (on_exception)
            log.info(f"{self.signum.name} is ignored from now on: the process ends")
            if not isinstance(e, subprocess.CalledProcessError):
                raise
            # SLURM requeues a job it preempts itself (PreemptMode=REQUEUE), and then refuses
            # submitit's own `scontrol requeue` ("Job is pending execution"). Raised as it is,
            # the error would end the job as a failure, which the sweep reports, while SLURM
            # starts the job again; exiting lets the requeued job resume.
            command = " ".join(e.cmd)
            raise SystemExit(f"{command} failed: SLURM requeued the job itself; exiting") from e
        signals.signal(self.signum, self._defer)  # it returned: training goes on

    def _restore(self) -> None:
        if self.handler is not None:
            signals.signal(self.signum, self.handler)
        self.pending = None

    def on_fit_end(self, trainer, pl_module) -> None:
        self._restore()

    def on_exception(self, trainer, pl_module, exception) -> None:
        if self.ended:
            ignore_after_fit(trainer, self.signum)
        else:
            self._restore()


def ignore_signal(signal: str = "SIGUSR2") -> None:
    """Ignore `signal` from now on: the run's result is final.

    Under submitit, SIGUSR2 after the run has finished would requeue a finished job (submitit's
    handler stays installed until the process exits), or, arriving during interpreter shutdown,
    end a successful job as FAILED. Does nothing when no Python handler is installed for
    `signal` (a plain local run keeps the default action) or outside the main thread.
    """
    signum = signals.Signals[signal]
    handler = signals.getsignal(signum)
    if callable(handler) and threading.current_thread() is threading.main_thread():
        signals.signal(signum, signals.SIG_IGN)
        log.info(f"the run is finished: {signal} is ignored from now on")
