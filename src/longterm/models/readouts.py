"""Pooling over time: feed-forward attention [Raffel & Ellis 2015, eq. 1], the unweighted mean
[eq. 2], and the last state (the readout of a recurrent model); and the per-step readout, which
pools nothing, for tasks that label steps.

Shapes: states h (B, T, D), mask (B, T) bool with True on real steps, pooled c (B, D).
With `mask_padding=False` the mask is ignored and padded steps are pooled like real ones, as in
the paper's original code (docs/fidelity.md).

Each comes in by import path from its conf file (conf/pool/*.yaml, `readout:`) as a user's readout
does (docs/plugins.md): `Class(dim, mask_padding, **own)`, and `per_step` says what it gives.

Each also has the step form (models/state.py): `step(h_t (B, D), state) -> (c_t, state)`, where
c_t is what `forward` gives for the real steps 0..t (for the per-step readout, h_t), and
`state_size(length)`, the numbers it carries per sequence: attention D + 2 (a running weighted
sum, its normaliser and the running maximum of the scores), mean D + 1 (a sum and a count), last
and per-step 0.
"""

import torch
from torch import Tensor, nn

Nothing = tuple[()]  # the state of a readout that carries nothing


class AttentionPooling(nn.Module):
    """e_t = tanh(w . h_t + b);  alpha = softmax_t(e);  c = sum_t alpha_t h_t   [eq. 1]"""

    per_step = False

    def __init__(self, dim: int, mask_padding: bool = False, init: str = "paper"):
        super().__init__()
        self.score = nn.Linear(dim, 1)  # w (D,) and a scalar bias b
        self.mask_padding = mask_padding
        if init == "paper":  # w ~ N(0, 0.01), b = 0, as the paper's code
            nn.init.normal_(self.score.weight, std=0.1)
            nn.init.zeros_(self.score.bias)

    def scores(self, h: Tensor) -> Tensor:
        """e = tanh(w . h + b):  h (..., D) -> e (...)."""
        return torch.tanh(self.score(h)).squeeze(-1)

    def weights(self, h: Tensor, mask: Tensor | None = None) -> Tensor:
        """alpha (B, T): softmax over time of the scores, zero on masked steps."""
        e = self.scores(h)
        if mask is not None and self.mask_padding:
            e = e.masked_fill(~mask, float("-inf"))
        return torch.softmax(e, dim=1)

    def forward(self, h: Tensor, mask: Tensor | None = None) -> Tensor:
        return torch.einsum("bt,btd->bd", self.weights(h, mask), h)

    def step(
        self, h_t: Tensor, state: tuple[Tensor, Tensor, Tensor] | None
    ) -> tuple[Tensor, tuple[Tensor, Tensor, Tensor]]:
        """Eq. 1 streamed as an online softmax (Milakov & Gimelshein 2018): with the running
        maximum m of the scores, the normaliser s = sum_t exp(e_t - m) and the weighted sum
        a = sum_t exp(e_t - m) h_t, c_t = a / s. h_t (B, D); state (a (B, D), s (B,), m (B,))."""
        e = self.scores(h_t)  # (B,)
        if state is None:
            a, s, m = h_t, torch.ones_like(e), e
        else:
            a, s, m_old = state
            m = torch.maximum(m_old, e)
            old, new = torch.exp(m_old - m), torch.exp(e - m)
            a, s = a * old[:, None] + new[:, None] * h_t, s * old + new
        return a / s[:, None], (a, s, m)

    def state_size(self, length: int) -> int:
        return self.score.in_features + 2


class MeanPooling(nn.Module):
    """c = (1/T) sum_t h_t over the real steps   [eq. 2]"""

    per_step = False

    def __init__(self, dim: int, mask_padding: bool = False, init: str = "paper"):
        super().__init__()
        self.dim, self.mask_padding = dim, mask_padding

    def forward(self, h: Tensor, mask: Tensor | None = None) -> Tensor:
        if mask is None or not self.mask_padding:
            return h.mean(dim=1)
        m = mask.unsqueeze(-1).to(h.dtype)
        return (h * m).sum(dim=1) / m.sum(dim=1)

    def step(
        self, h_t: Tensor, state: tuple[Tensor, Tensor] | None
    ) -> tuple[Tensor, tuple[Tensor, Tensor]]:
        """The running sum of the states and their count: h_t (B, D); state ((B, D), (B,))."""
        if state is None:
            total, count = h_t, h_t.new_ones(h_t.shape[0])
        else:
            total, count = state[0] + h_t, state[1] + 1
        return total / count[:, None], (total, count)

    def state_size(self, length: int) -> int:
        return self.dim + 1


class LastStep(nn.Module):
    """c = h_{L-1}, the state of the last real step (the last True of the mask); with
    `mask_padding=False` or no mask, the last step of the padded width."""

    per_step = False

    def __init__(self, dim: int, mask_padding: bool = True, init: str = "paper"):
        super().__init__()
        self.mask_padding = mask_padding

    def forward(self, h: Tensor, mask: Tensor | None = None) -> Tensor:
        if mask is None or not self.mask_padding:
            return h[:, -1]
        last = h.shape[1] - 1 - mask.flip(1).int().argmax(dim=1)  # (B,)
        return h[torch.arange(h.shape[0], device=h.device), last]

    def step(self, h_t: Tensor, state: Nothing | None) -> tuple[Tensor, Nothing]:
        """c_t = h_t: the last step so far; nothing is carried."""
        return h_t, ()

    def state_size(self, length: int) -> int:
        return 0


class PerStep(nn.Module):
    """c_t = h_t at every step: (B, T, D) -> (B, T, D), so the head gives one output per step.
    Only for a causal encoder (h_t sees steps <= t; its class says `causal = True`); padded steps
    carry no target, so the mask is not needed here."""

    per_step = True  # c (B, T, D): the head gives one output per step

    def __init__(self, dim: int, mask_padding: bool = True, init: str = "paper"):
        super().__init__()
        self.mask_padding = mask_padding

    def forward(self, h: Tensor, mask: Tensor | None = None) -> Tensor:
        return h

    def step(self, h_t: Tensor, state: Nothing | None) -> tuple[Tensor, Nothing]:
        """c_t = h_t; nothing is carried."""
        return h_t, ()

    def state_size(self, length: int) -> int:
        return 0
