"""Lightning callbacks that decide when a run ends: solved, or diverged."""

import math

import lightning as L


class StopWhenSolved(L.Callback):
    """Stop once the monitored validation metric reaches `threshold` (>=, so 100% counts).

    Lightning's EarlyStopping compares `stopping_threshold` strictly (>), so it never fires at
    exactly 1.0; this callback is the paper's rule "train until 100% validation accuracy".
    Records the history and the 1-based epoch at which the threshold was first reached.
    """

    def __init__(self, monitor: str = "val/acc", threshold: float = 1.0):
        self.monitor, self.threshold = monitor, threshold
        self.history: list[float] = []
        self.solved_epoch: int | None = None

    def on_validation_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if trainer.sanity_checking or self.monitor not in trainer.callback_metrics:
            return
        value = float(trainer.callback_metrics[self.monitor])
        self.history.append(value)
        if value >= self.threshold and self.solved_epoch is None:
            self.solved_epoch = trainer.current_epoch + 1
            if trainer.logger is not None:  # self.log is not allowed in this hook
                trainer.logger.log_metrics({"epoch_solved": self.solved_epoch}, trainer.global_step)
            trainer.should_stop = True

    def state_dict(self) -> dict:
        return {"history": self.history, "solved_epoch": self.solved_epoch}

    def load_state_dict(self, state_dict: dict) -> None:
        self.history, self.solved_epoch = state_dict["history"], state_dict["solved_epoch"]


class StopOnDivergence(L.Callback):
    """Stop at once when the training loss is not finite; records the global step."""

    def __init__(self):
        self.diverged_step: int | None = None

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        loss = outputs["loss"] if isinstance(outputs, dict) else outputs
        if loss is not None and not math.isfinite(float(loss)):
            self.diverged_step = trainer.global_step
            trainer.should_stop = True
