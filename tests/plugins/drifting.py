"""Encoders whose step form breaks its contract, for the contract's tests
(tests/test_step_forms.py): one whose steps drift from its training form (a count off by one), one
that carries more than it declares."""

import torch
from torch import Tensor, nn


class Drifting(nn.Module):
    """h_t = (1 / (t + 1)) sum_{s <= t} W x_s, the running mean: x (B, T, F) -> h (B, T, D).
    Its step form divides by t instead of t + 1 from the second step on."""

    causal = True

    def __init__(self, in_features: int, dim: int):
        super().__init__()
        self.proj = nn.Linear(in_features, dim)

    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        steps = torch.arange(1, x.shape[1] + 1, dtype=x.dtype)
        return self.proj(x).cumsum(1) / steps[:, None]

    def step(self, x_t: Tensor, state: tuple[Tensor, Tensor] | None) -> tuple[Tensor, tuple]:
        u = self.proj(x_t)
        if state is None:
            total, count = u, u.new_zeros(u.shape[0])  # wrong: one step has been seen
        else:
            total, count = state[0] + u, state[1] + 1
        return total / count.clamp_min(1)[:, None], (total, count)

    def state_size(self, length: int) -> int:
        return self.proj.out_features + 1  # the sum and the count


class Understated(Drifting):
    """The running mean with a right step form, which declares the sum and forgets the count."""

    def step(self, x_t: Tensor, state: tuple[Tensor, Tensor] | None) -> tuple[Tensor, tuple]:
        u = self.proj(x_t)
        if state is None:
            total, count = u, u.new_ones(u.shape[0])
        else:
            total, count = state[0] + u, state[1] + 1
        return total / count[:, None], (total, count)

    def state_size(self, length: int) -> int:
        return self.proj.out_features  # wrong: the count is carried too
