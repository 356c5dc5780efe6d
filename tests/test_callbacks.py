import os
import signal
from types import SimpleNamespace

import pytest
import pytorch_lightning as L
import torch
from helpers.paths import ROOT
from hydra.utils import instantiate
from omegaconf import OmegaConf
from pytorch_lightning.callbacks import ModelCheckpoint
from torch.utils.data import DataLoader

from longterm.training.callbacks import DeferSignal, StopOnDivergence, StopWhenSolved, all_finite


class Scripted(L.LightningModule):
    """A real module whose validation accuracy follows a script, one value per epoch."""

    def __init__(self, accuracies, loss=1.0):
        super().__init__()
        self.w = torch.nn.Parameter(torch.zeros(1))
        self.accuracies, self.loss = accuracies, loss

    def training_step(self, batch, batch_idx):
        return (self.w * 0 + self.loss).sum()

    def validation_step(self, batch, batch_idx):
        self.log("val/acc", self.accuracies[self.current_epoch])

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def fit(module, callback, epochs=5, checkpoints=None, ckpt_path=None, batches=2):
    loader = DataLoader(torch.zeros(2 * batches, 1), batch_size=2)
    saving = [] if checkpoints is None else [ModelCheckpoint(dirpath=checkpoints, save_last=True)]
    trainer = L.Trainer(
        max_epochs=epochs,
        callbacks=[callback, *saving],
        logger=False,
        enable_checkpointing=checkpoints is not None,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
    )
    trainer.fit(module, loader, loader, ckpt_path=ckpt_path)
    return trainer


def test_stops_when_accuracy_reaches_exactly_one():
    callback = StopWhenSolved("val/acc", 1.0)
    trainer = fit(Scripted([0.5, 0.99, 1.0, 1.0, 1.0]), callback)
    assert callback.solved_epoch == 3 and trainer.current_epoch == 3
    assert callback.history == pytest.approx([0.5, 0.99, 1.0])


@pytest.mark.filterwarnings("ignore:Checkpoint directory .* exists and is not empty")
def test_a_solved_run_resumed_from_its_checkpoint_trains_no_further(tmp_path):
    """Killed after its last checkpoint but before result.json: the rerun stops at once."""
    fit(Scripted([0.5, 1.0, 1.0, 1.0, 1.0]), StopWhenSolved(), checkpoints=tmp_path)
    callback = StopWhenSolved()
    last = tmp_path / "last.ckpt"
    trainer = fit(Scripted([0.5] * 5), callback, checkpoints=tmp_path, ckpt_path=last)
    assert trainer.current_epoch == 2 and trainer.global_step == 4
    assert callback.solved_epoch == 2 and callback.history == [0.5, 1.0]


def configured_checkpoints(run_dir):
    """The checkpoint callbacks exactly as conf/callbacks/default.yaml makes them."""
    cfg = OmegaConf.load(ROOT / "conf" / "callbacks" / "default.yaml")
    cfg = OmegaConf.merge({"run_dir": str(run_dir)}, {"callbacks": cfg}).callbacks
    return [instantiate(cfg[name]) for name in ("checkpoint", "last_checkpoint")]


def test_last_checkpoint_is_every_epoch_and_best_only_the_best(tmp_path):
    """A rerun resumes from last.ckpt, so it must hold the last epoch even when val/acc fell."""
    loader = DataLoader(torch.zeros(4, 1), batch_size=2)
    trainer = L.Trainer(
        max_epochs=3,
        callbacks=configured_checkpoints(tmp_path),
        logger=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
    )
    trainer.fit(Scripted([0.5, 0.7, 0.6]), loader, loader)
    step = {
        name: torch.load(tmp_path / "checkpoints" / f"{name}.ckpt", weights_only=False)
        for name in ("last", "best")
    }
    assert step["last"]["global_step"] == 6 and step["best"]["global_step"] == 4
    best_state = [v for k, v in step["last"]["callbacks"].items() if "val/acc" in k][0]
    assert best_state["best_model_score"] == pytest.approx(0.7)  # this epoch's best, for a rerun
    assert sorted(p.name for p in (tmp_path / "checkpoints").iterdir()) == [
        "best.ckpt",
        "last.ckpt",
    ]


def test_runs_to_the_limit_below_the_threshold():
    callback = StopWhenSolved("val/acc", 1.0)
    trainer = fit(Scripted([0.999] * 5), callback)
    assert callback.solved_epoch is None and trainer.current_epoch == 5


def test_state_round_trips_through_a_checkpoint_dict():
    callback = StopWhenSolved()
    callback.history, callback.solved_epoch = [0.5, 1.0], 2
    restored = StopWhenSolved()
    restored.load_state_dict(callback.state_dict())
    assert restored.history == [0.5, 1.0] and restored.solved_epoch == 2


def test_divergence_stops_at_once():
    callback = StopOnDivergence()
    trainer = fit(Scripted([0.1] * 5, loss=float("nan")), callback)
    assert callback.diverged_step == 1 and trainer.global_step == 1


class NonFiniteAt(Scripted):
    """The loss of update `at` (counted from 0) only is NaN; the parameters stay finite."""

    def __init__(self, at):
        super().__init__([0.1] * 5)
        self.at = at

    def training_step(self, batch, batch_idx):
        loss = float("nan") if self.global_step == self.at else 1.0
        return (self.w * 0 + loss).sum()


@pytest.mark.parametrize("at, seen", [(2, 4), (3, 4), (8, 10)])
def test_divergence_checked_every_n_updates_is_seen_at_the_next_check(at, seen):
    """Every 4 updates and at each epoch's end (10 updates an epoch): a loss that was NaN at one
    update between checks is still seen, and the run stops at that check."""
    callback = StopOnDivergence(every_n_updates=4)
    trainer = fit(NonFiniteAt(at), callback, batches=10)
    assert callback.diverged_step == seen == trainer.global_step
    assert 0 <= seen - (at + 1) < 4


def test_divergence_is_checked_at_every_update_on_the_cpu_and_at_logging_steps_elsewhere():
    trainer = SimpleNamespace(log_every_n_steps=50)
    on = {d: SimpleNamespace(device=torch.device(d)) for d in ("cpu", "meta")}
    assert StopOnDivergence().interval(trainer, on["cpu"]) == 1
    assert StopOnDivergence().interval(trainer, on["meta"]) == 50
    assert StopOnDivergence(every_n_updates=7).interval(trainer, on["cpu"]) == 7


class SignalledAt(Scripted):
    """Sends this process `signum` in the middle of training step `at` and notes each step end."""

    def __init__(self, signum, at):
        super().__init__([0.5] * 5)
        self.signum, self.at, self.ended = signum, at, []

    def training_step(self, batch, batch_idx):
        if self.global_step == self.at:
            os.kill(os.getpid(), self.signum)
        loss = super().training_step(batch, batch_idx)
        self.ended.append(self.global_step)
        return loss


def test_a_deferred_signal_runs_its_handler_after_the_batch_once():
    """The handler runs after the batch; a second signal while it runs (a preemption's while
    submitit writes its pickle for a time limit's) does not run it inside itself, and once it
    has ended the process the signal stays ignored until the process exits."""
    calls = []

    def requeue(signum, frame):  # what submitit's handler does: note it, then exit
        calls.append((signum, list(module.ended)))
        os.kill(os.getpid(), signum)  # the second signal, as the handler runs
        raise SystemExit(3)

    previous = signal.signal(signal.SIGUSR2, requeue)
    module = SignalledAt(signal.SIGUSR2, at=3)
    try:
        with pytest.raises(SystemExit):
            fit(module, DeferSignal("SIGUSR2"))
        assert calls == [(signal.SIGUSR2, [0, 1, 2, 3])]  # step 3 ran to its end first
        assert signal.getsignal(signal.SIGUSR2) == signal.SIG_IGN  # the process ends
    finally:
        signal.signal(signal.SIGUSR2, previous)


def test_a_handler_that_returns_leaves_the_signal_deferred():
    """A handler that does not end the process (submitit's on a task other than the first):
    training goes on, a later signal is deferred and handled in turn, and the handler is put back
    when the fit ends."""
    calls = []

    def note(signum, frame):
        calls.append(list(module.ended))

    class TwiceSignalled(SignalledAt):
        def training_step(self, batch, batch_idx):
            if self.global_step == 6:
                os.kill(os.getpid(), self.signum)
            return super().training_step(batch, batch_idx)

    previous = signal.signal(signal.SIGUSR2, note)
    module = TwiceSignalled(signal.SIGUSR2, at=3)
    try:
        fit(module, DeferSignal("SIGUSR2"))
        assert calls == [[0, 1, 2, 3], [0, 1, 2, 3, 4, 5, 6]]
        assert signal.getsignal(signal.SIGUSR2) is note
    finally:
        signal.signal(signal.SIGUSR2, previous)


def test_divergence_is_seen_in_the_parameters_too():
    class Overflowing(Scripted):
        """The first update's gradient overflows to inf and w becomes -inf; the loss, a sigmoid
        of it, stays finite."""

        def training_step(self, batch, batch_idx):
            return (torch.sigmoid(self.w * 3e38) * 10).sum()

    callback = StopOnDivergence()
    module = Overflowing([0.1] * 5)
    trainer = fit(module, callback)
    assert callback.diverged_step == 1 and trainer.global_step == 1
    assert torch.isinf(module.w).all()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf"), None])
@pytest.mark.parametrize("at", [0, 5, -1])
def test_the_divergence_test_is_isfinite_of_every_number(dtype, bad, at):
    """The smallest and the largest number stand for all: a NaN or an infinity anywhere, and
    finite numbers as large as the type holds (whose difference would overflow)."""
    numbers = torch.linspace(-1, 1, 11, dtype=dtype)
    numbers[1], numbers[2] = torch.finfo(dtype).max, torch.finfo(dtype).min
    if bad is not None:
        numbers[at] = bad
    assert bool(all_finite(numbers)) == bool(torch.isfinite(numbers).all()) == (bad is None)
