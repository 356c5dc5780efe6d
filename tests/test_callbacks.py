import lightning as L
import pytest
import torch
from torch.utils.data import DataLoader

from longterm.callbacks import StopOnDivergence, StopWhenSolved


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


def fit(module, callback, epochs=5):
    loader = DataLoader(torch.zeros(4, 1), batch_size=2)
    trainer = L.Trainer(
        max_epochs=epochs,
        callbacks=[callback],
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
    )
    trainer.fit(module, loader, loader)
    return trainer


def test_stops_when_accuracy_reaches_exactly_one():
    callback = StopWhenSolved("val/acc", 1.0)
    trainer = fit(Scripted([0.5, 0.99, 1.0, 1.0, 1.0]), callback)
    assert callback.solved_epoch == 3 and trainer.current_epoch == 3
    assert callback.history == pytest.approx([0.5, 0.99, 1.0])


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
