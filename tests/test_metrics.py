import torch

from longterm.training.metrics import ToleranceAccuracy


def test_threshold_is_strict():
    acc = ToleranceAccuracy(0.04)
    target = torch.zeros(4, dtype=torch.float64)
    preds = torch.tensor([0.0, 0.0399, -0.04, 0.05], dtype=torch.float64)
    assert acc(preds, target).item() == 0.5  # exactly 0.04 away is wrong


def test_accumulates_over_batches():
    acc = ToleranceAccuracy()
    acc.update(torch.zeros(3), torch.zeros(3))
    acc.update(torch.ones(1), torch.zeros(1))
    assert acc.compute().item() == 0.75
