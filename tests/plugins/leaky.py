"""A deliberately broken encoder for the contract's tests: it declares itself causal, yet every
state sees the mean of the whole padded sequence, later steps and padding included."""

import torch
from torch import Tensor, nn


class Leaky(nn.Module):
    """h_t = LReLU(W x_t + U mean_s x_s): x (B, T, F) -> h (B, T, D); not causal."""

    causal = True  # false: the mean over s reaches every t

    def __init__(self, in_features: int, dim: int):
        super().__init__()
        self.step, self.context = nn.Linear(in_features, dim), nn.Linear(in_features, dim)

    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        return torch.nn.functional.leaky_relu(self.step(x) + self.context(x.mean(1, True)))
