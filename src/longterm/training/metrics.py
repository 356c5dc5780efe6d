"""Accuracy as the paper counts it: a prediction is correct when |y_hat - y| < 0.04 (§2.2)."""

import torch
from torch import Tensor
from torchmetrics import Metric

from longterm.choices import TOLERANCE


class ToleranceAccuracy(Metric):
    """Fraction of predictions strictly within `tolerance` of the target; preds, target (B,)."""

    is_differentiable = False
    higher_is_better = True
    full_state_update = False

    def __init__(self, tolerance: float = TOLERANCE, **kwargs):
        super().__init__(**kwargs)
        self.tolerance = tolerance
        self.add_state("correct", default=torch.tensor(0), dist_reduce_fx="sum")
        self.add_state("total", default=torch.tensor(0), dist_reduce_fx="sum")

    def update(self, preds: Tensor, target: Tensor) -> None:
        self.correct += ((preds - target).abs() < self.tolerance).sum()
        self.total += target.numel()

    def compute(self) -> Tensor:
        return self.correct.float() / self.total
