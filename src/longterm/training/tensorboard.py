"""What the TensorBoard logger records besides the module's own metrics, so that the Scalars tab
opens on `train/` and `val/`: tags without a group (Lightning's `epoch`, LearningRateMonitor's
`lr-Adam`) sort before them. The epochs a run trained are `verdict/epochs` at its end
(longterm.training.hparams_records)."""

from collections.abc import Mapping

import pytorch_lightning as L
from pytorch_lightning.loggers import TensorBoardLogger as LightningTensorBoardLogger


class TensorBoardLogger(LightningTensorBoardLogger):
    """Lightning's, without the `epoch` scalar Lightning adds to every metric of `self.log`."""

    def log_metrics(self, metrics: Mapping[str, float], step: int | None = None) -> None:
        super().log_metrics({k: v for k, v in metrics.items() if k != "epoch"}, step)


class LogLearningRate(L.Callback):
    """`train/lr`, the optimiser's learning rate, at the start of every epoch (where Lightning's
    LearningRateMonitor logs `lr-Adam`): the scheduled one (optim.schedule), the epoch's under
    `cosine`, that of the epoch's first update under `warmup_cosine`. Does nothing without a
    logger."""

    def on_train_epoch_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if trainer.logger is not None and trainer.optimizers:
            lr = trainer.optimizers[0].param_groups[0]["lr"]
            trainer.logger.log_metrics({"train/lr": lr}, trainer.global_step)
