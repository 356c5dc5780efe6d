"""The LightningModule: MSE loss, Adam, and the paper's tolerance accuracy (§2.2)."""

import lightning as L
import torch
from torch import Tensor, nn
from torch.nn import functional as F

from longterm.data import Batch
from longterm.metrics import ToleranceAccuracy


class MemoryTaskModule(L.LightningModule):
    """Trains `net` (x (B, T, F), mask (B, T) -> (B, 1)) to regress the task's target."""

    def __init__(
        self,
        net: nn.Module,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        tolerance: float = 0.04,
    ):
        super().__init__()
        self.net, self.lr, self.betas, self.eps = net, lr, tuple(betas), eps
        self.val_acc = ToleranceAccuracy(tolerance)

    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        return self.net(x, mask).squeeze(-1)

    def training_step(self, batch: Batch, batch_idx: int) -> Tensor:
        x, y, mask = batch
        loss = F.mse_loss(self(x, mask), y)
        self.log("train/loss", loss, batch_size=len(y))
        return loss

    def validation_step(self, batch: Batch, batch_idx: int) -> None:
        x, y, mask = batch
        pred = self(x, mask)
        self.val_acc(pred, y)
        self.log("val/loss", F.mse_loss(pred, y), batch_size=len(y))
        self.log("val/acc", self.val_acc, batch_size=len(y))

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.Adam(self.parameters(), lr=self.lr, betas=self.betas, eps=self.eps)
