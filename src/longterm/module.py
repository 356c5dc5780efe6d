"""The LightningModule: Adam, and the task's loss and accuracy: MSE and the paper's tolerance
accuracy for regression (§2.2), cross-entropy and the accuracy of the arg-max for classification."""

import pytorch_lightning as L
import torch
from torch import Tensor, nn
from torch.nn import functional as F
from torchmetrics.classification import MulticlassAccuracy

from longterm.data import Batch
from longterm.metrics import ToleranceAccuracy


class MemoryTaskModule(L.LightningModule):
    """Trains `net` (x (B, T, F), mask (B, T) -> (B, n_outputs)) on the task's target: a value
    (`loss="mse"`, n_outputs 1) or a class in 0..n_outputs-1 (`loss="cross_entropy"`, logits)."""

    def __init__(
        self,
        net: nn.Module,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        tolerance: float = 0.04,
        loss: str = "mse",
        n_outputs: int = 1,
    ):
        super().__init__()
        self.net, self.lr, self.betas, self.eps = net, lr, tuple(betas), eps
        self.classify = loss == "cross_entropy"
        if self.classify:
            self.val_acc = MulticlassAccuracy(num_classes=n_outputs, average="micro")
        elif loss == "mse":
            self.val_acc = ToleranceAccuracy(tolerance)
        else:
            raise ValueError(f"unknown loss {loss!r}; choose mse or cross_entropy")

    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        out = self.net(x, mask)
        return out if self.classify else out.squeeze(-1)

    def loss(self, pred: Tensor, y: Tensor) -> Tensor:
        return F.cross_entropy(pred, y.long()) if self.classify else F.mse_loss(pred, y)

    def training_step(self, batch: Batch, batch_idx: int) -> Tensor:
        x, y, mask = batch
        loss = self.loss(self(x, mask), y)
        self.log("train/loss", loss, batch_size=len(y))
        return loss

    def validation_step(self, batch: Batch, batch_idx: int) -> None:
        x, y, mask = batch
        pred = self(x, mask)
        self.val_acc(pred, y.long() if self.classify else y)
        self.log("val/loss", self.loss(pred, y), batch_size=len(y))
        self.log("val/acc", self.val_acc, batch_size=len(y))

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.Adam(self.parameters(), lr=self.lr, betas=self.betas, eps=self.eps)
