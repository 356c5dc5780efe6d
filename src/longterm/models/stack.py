"""The residual stack the sequence mixers of today's memories share (Mamba, S4D, gated linear
attention, DeltaNet, Hyena): an input projection, then per layer a pre-norm residual mixer, then a
final norm, as in the Mamba paper's architecture (Gu & Dao 2023, §3.4) and zoology's models:

    u_0 = W_in x_t + b_in                       x (B, T, F) -> u (B, T, D)
    u_l = u_{l-1} + mixer_l(LN(u_{l-1}))        l = 1..L
    h   = LN(u_L)                               h (B, T, D)

A mixer maps (B, T, D) -> (B, T, D) causally, and offers the step form (models/state.py):
`step(u_t (B, D), state) -> (y_t (B, D), state)` and `state_size(length)`. The stack's state is its
mixers' states, one per layer; its own parts (projection, norms, residuals) act on one step and
carry nothing.
"""

from collections.abc import Callable
from typing import Any

from torch import Tensor, nn

from longterm.models.init import init_linear_


class MixerStack(nn.Module):
    """x (B, T, F) -> h (B, T, D): L pre-norm residual layers of the mixer `make_mixer()`."""

    causal = True  # every mixer is causal; the rest acts on one step

    def __init__(
        self,
        in_features: int,
        dim: int,
        layers: int,
        make_mixer: Callable[[], nn.Module],
        init: str = "paper",
    ):
        super().__init__()
        if layers < 1:
            raise ValueError(f"layers={layers} must be >= 1")
        self.embed = init_linear_(nn.Linear(in_features, dim), init)
        self.norms = nn.ModuleList(nn.LayerNorm(dim) for _ in range(layers))
        self.mixers = nn.ModuleList(make_mixer() for _ in range(layers))
        self.final_norm = nn.LayerNorm(dim)

    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        u = self.embed(x)
        for norm, mixer in zip(self.norms, self.mixers, strict=True):
            u = u + mixer(norm(u))
        return self.final_norm(u)

    def step(self, x_t: Tensor, state: list[Any] | None) -> tuple[Tensor, list[Any]]:
        """x_t (B, F), the mixers' states (None before the first step) -> h_t (B, D), states."""
        state = state or [None] * len(self.mixers)
        u, new = self.embed(x_t), []
        for norm, mixer, s in zip(self.norms, self.mixers, state, strict=True):
            y, s = mixer.step(norm(u), s)
            u = u + y
            new.append(s)
        return self.final_norm(u), new

    def state_size(self, length: int) -> int:
        return sum(mixer.state_size(length) for mixer in self.mixers)
