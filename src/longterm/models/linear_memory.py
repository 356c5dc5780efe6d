"""A diagonal linear recurrence, the fixed-state memory of modern linear RNNs and state-space
models (LRU, Orvieto et al. 2023, with a real diagonal; S4D/Mamba-style diagonal decays):

    h_t = lambda ⊙ h_{t-1} + W x_t + b,   h_{-1} = 0,   lambda = sigmoid(nu) in (0, 1)^D

Unrolled, h_t = sum_{s <= t} lambda^(t - s) ⊙ u_s with u = W x + b. `linear_scan` computes it in
parallel over time: within each chunk of C steps as one product with the decay matrix
lambda^(t - s) (s <= t), and across chunks by carrying the last state, so a sequence of T steps
costs T / C sequential steps instead of T. lambda is initialised uniformly in [0.9, 0.999] (LRU's
range for long sequences). Causal: padded steps after the real ones do not change real states.

The step form (models/state.py) is the recurrence itself, carrying h_t: D numbers per sequence.

x (B, T, F) -> h (B, T, D); parameters D(F + 2) for the encoder.
"""

import torch
from torch import Tensor, nn

from longterm.models.init import init_linear_

CHUNK = 64  # steps per chunk of the scan: the decay matrix is (C, C, D)


def linear_scan(u: Tensor, log_lam: Tensor, chunk: int = CHUNK) -> Tensor:
    """h_t = lambda ⊙ h_{t-1} + u_t from h_{-1} = 0:  u (B, T, D), log_lam (D,) -> h (B, T, D)."""
    t = torch.arange(chunk, device=u.device)
    lag = t[:, None] - t[None, :]  # t - s, (C, C)
    decay = torch.exp(lag.clamp_min(0)[..., None] * log_lam) * (lag >= 0)[..., None]  # (C, C, D)
    carry = torch.exp((t + 1)[:, None] * log_lam)  # lambda^(t + 1): the previous chunk's state
    h_last, states = u.new_zeros(u.shape[0], u.shape[2]), []
    for u_chunk in u.split(chunk, dim=1):
        c = u_chunk.shape[1]
        h = torch.einsum("tsd,bsd->btd", decay[:c, :c], u_chunk) + carry[:c] * h_last[:, None]
        states.append(h)
        h_last = h[:, -1]
    return torch.cat(states, dim=1)


class LinearMemory(nn.Module):
    """x (B, T, F) -> h (B, T, D) with h_t = lambda ⊙ h_{t-1} + W x_t + b."""

    causal = True

    def __init__(self, in_features: int, dim: int, init: str = "paper"):
        super().__init__()
        self.proj = init_linear_(nn.Linear(in_features, dim), init)
        lam = torch.empty(dim).uniform_(0.9, 0.999)
        self.nu = nn.Parameter(torch.log(lam) - torch.log1p(-lam))  # sigmoid(nu) = lambda

    @property
    def lam(self) -> Tensor:
        return torch.sigmoid(self.nu)

    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        return linear_scan(self.proj(x), nn.functional.logsigmoid(self.nu))

    def step(self, x_t: Tensor, state: Tensor | None) -> tuple[Tensor, Tensor]:
        """h_t = lambda ⊙ h_{t-1} + W x_t + b:  x_t (B, F), h_{t-1} (B, D) -> h_t (B, D)."""
        u = self.proj(x_t)
        h = u if state is None else self.lam * state + u
        return h, h

    def state_size(self, length: int) -> int:
        return self.nu.numel()
