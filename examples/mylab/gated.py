"""Gated pooling, a readout not among longterm's built-in ones.

    g_t = sigmoid(w . h_t + b),   c = sum_t g_t h_t / sum_t g_t

Each step's state is weighed by a gate of its own, whatever the other steps hold, where the
paper's attention (Raffel & Ellis 2015, eq. 1) makes the steps compete through a softmax.

The readout contract (longterm docs/plugins.md): built from dim, mask_padding and its own keys
(here `bias`); forward(h (B, T, D), mask (B, T)) -> c (B, D); `per_step` says what it gives. The
optional step form: step(h_t (B, D), state) -> (c_t, state), c_t the pooling of steps 0..t,
carrying sum_t g_t h_t and sum_t g_t; state_size(length) = D + 1.
"""

import torch
from torch import Tensor, nn


class Gated(nn.Module):
    """h (B, T, D), mask (B, T) -> c (B, D): the gate-weighted mean of the states."""

    per_step = False  # one output per sequence

    def __init__(self, dim: int, mask_padding: bool = True, bias: float = 0.0):
        super().__init__()
        self.gate = nn.Linear(dim, 1)  # w (D,) and b
        nn.init.constant_(self.gate.bias, bias)
        self.mask_padding = mask_padding

    def forward(self, h: Tensor, mask: Tensor | None = None) -> Tensor:
        g = torch.sigmoid(self.gate(h)).squeeze(-1)  # (B, T)
        if mask is not None and self.mask_padding:
            g = g * mask.to(g.dtype)  # padded steps get no weight
        return torch.einsum("bt,btd->bd", g, h) / g.sum(1, keepdim=True)

    def step(
        self, h_t: Tensor, state: tuple[Tensor, Tensor] | None
    ) -> tuple[Tensor, tuple[Tensor, Tensor]]:
        """h_t (B, D), (sum g h (B, D), sum g (B, 1)) or None -> c_t (B, D), the new sums."""
        g = torch.sigmoid(self.gate(h_t))  # (B, 1)
        total, weight = (g * h_t, g) if state is None else (state[0] + g * h_t, state[1] + g)
        return total / weight, (total, weight)

    def state_size(self, length: int) -> int:
        return self.gate.in_features + 1
