"""Mamba: the selective state space block (Gu & Dao 2023, arXiv 2312.00752, §3.4, Figure 3) on the
pre-norm residual stack of models/stack.py. Per layer, on u (B, T, D), with E = expand · D channels
and N = d_state:

    x, z = W_in u                                  (B, T, E) each              in_proj
    x = SiLU(conv1d(x))                            causal, depthwise, width d_conv
    δ, B, C = W_x x                                (B, T, R), (B, T, N), (B, T, N)   x_proj
    Δ = softplus(W_Δ δ + b_Δ)                      (B, T, E)  input-dependent step   dt_proj
    A = -exp(A_log)                                (E, N)     S4D-real init: A_en = -(n + 1)
    y = selective_scan(x, Δ, A, B, C, D)           (B, T, E)  eq. 2 (kernels/selective_scan.py)
    out = W_out (y ⊙ SiLU(z))                      (B, T, D)                          out_proj

R = dt_rank: an integer, or `auto` = ceil(D / 16), Mamba's rule (its `dt_rank="auto"`). b_Δ is
Mamba's: softplus(b_Δ) = Δ_0 log-uniform in [0.001, 0.1] (at least 1e-4); W_Δ ~ U(-R^-1/2,
R^-1/2); D = 1; the projections and the convolution keep PyTorch's initialisation (Mamba's code
also scales W_out by 1/sqrt(layers), which this block does not). `impl` picks the scan
(selective_scan.plan): `reference` the readable step loop on the CPU, `fused` and `auto` the
compiled CPU kernel, or on CUDA mamba-ssm's kernel when installed; off the CPU otherwise the
parallel form.

Step form: per layer, the convolution's last d_conv - 1 inputs (B, E, d_conv - 1) and the SSM
state (B, E, N): state_size = layers · E · (N + d_conv - 1), whatever the length.
Parameters per layer: D·2E + E·d_conv + E + E·(R + 2N) + R·E + E + E·N + E + E·D, and 2D for its
norm.
"""

import math
from typing import Literal

import torch
from torch import Tensor, nn
from torch.nn import functional as F

from longterm.models.kernels.selective_scan import selective_scan, ssm_step
from longterm.models.stack import MixerStack

DT_MIN, DT_MAX, DT_FLOOR = 1e-3, 1e-1, 1e-4  # Mamba's Δ initialisation
# the attributes by which mamba_ssm (and mad-lab's copy) marks parameters: a model-wide
# initialisation leaves one as it is, weight decay in mad-lab's groups spares the other
NO_REINIT, NO_WEIGHT_DECAY = "_no_reinit", "_no_weight_decay"


class MambaMixer(nn.Module):
    """u (B, T, D) -> (B, T, D): one Mamba block (the module docstring), causal."""

    def __init__(self, dim: int, d_state: int, d_conv: int, expand: int, dt_rank: int,
                 impl: str = "auto"):  # fmt: skip
        super().__init__()
        E = expand * dim
        self.d_state, self.d_conv, self.dt_rank, self.impl = d_state, d_conv, dt_rank, impl
        self.in_proj = nn.Linear(dim, 2 * E, bias=False)
        self.conv = nn.Conv1d(E, E, d_conv, groups=E)  # depthwise; padded on the left in forward
        self.x_proj = nn.Linear(E, dt_rank + 2 * d_state, bias=False)
        self.dt_proj = nn.Linear(dt_rank, E)
        self.A_log = nn.Parameter(torch.log(torch.arange(1, d_state + 1.0)).repeat(E, 1))
        self.D = nn.Parameter(torch.ones(E))
        self.out_proj = nn.Linear(E, dim, bias=False)
        with torch.no_grad():
            nn.init.uniform_(self.dt_proj.weight, -(dt_rank**-0.5), dt_rank**-0.5)
            log_dt = torch.empty(E).uniform_(math.log(DT_MIN), math.log(DT_MAX))
            dt = torch.exp(log_dt).clamp_min(DT_FLOOR)
            self.dt_proj.bias.copy_(dt + torch.log(-torch.expm1(-dt)))  # softplus^-1(dt)
        # Mamba's marks (mamba_ssm, mad-lab's copy): a model's own initialisation leaves Δ's
        # bias as it is, and weight decay in mad-lab's groups spares A and D (recipes.py)
        setattr(self.dt_proj.bias, NO_REINIT, True)
        for p in (self.A_log, self.D):
            setattr(p, NO_WEIGHT_DECAY, True)

    @property
    def A(self) -> Tensor:  # noqa: N802  the paper's A
        return -torch.exp(self.A_log)

    def selection(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """Δ (..., E), B, C (..., N) from the convolved x (..., E)."""
        dt, B, C = self.x_proj(x).split([self.dt_rank, self.d_state, self.d_state], dim=-1)
        return F.softplus(self.dt_proj(dt)), B, C

    def forward(self, u: Tensor) -> Tensor:
        x, z = self.in_proj(u).chunk(2, dim=-1)
        x = F.pad(x.transpose(1, 2), (self.d_conv - 1, 0))  # causal: d_conv - 1 zeros before
        x = F.silu(self.conv(x).transpose(1, 2).contiguous())  # (B, T, E), as the scan reads it
        delta, B, C = self.selection(x)
        y, _ = selective_scan(x, delta, self.A, B, C, self.D, self.impl)
        return self.out_proj(y * F.silu(z))

    def step(self, u_t: Tensor, state: tuple[Tensor, Tensor] | None):
        """u_t (B, D), (the last d_conv - 1 inputs (B, E, d_conv - 1), the SSM state (B, E, N))
        -> out_t (B, D), the new state."""
        x, z = self.in_proj(u_t).chunk(2, dim=-1)
        if state is None:
            E = x.shape[-1]
            state = (
                x.new_zeros(x.shape[0], E, self.d_conv - 1),
                x.new_zeros(x.shape[0], E, self.d_state),
            )
        window = torch.cat([state[0], x[..., None]], dim=-1)  # (B, E, d_conv)
        x = F.silu((window * self.conv.weight[:, 0]).sum(-1) + self.conv.bias)
        delta, B, C = self.selection(x)
        y, ssm = ssm_step(state[1], x, delta, self.A, B, C, self.D)
        return self.out_proj(y * F.silu(z)), (window[..., 1:], ssm)

    def state_size(self, length: int) -> int:
        return self.D.shape[0] * (self.d_state + self.d_conv - 1)


class Mamba(MixerStack):
    """x (B, T, F) -> h (B, T, D): `layers` Mamba blocks on the pre-norm residual stack."""

    causal = True

    def __init__(
        self,
        in_features: int,
        dim: int,
        layers: int = 2,
        d_state: int = 16,
        d_conv: int = 4,
        expand: int = 2,
        dt_rank: int | Literal["auto"] = "auto",
        impl: str = "auto",
        init: str = "paper",
    ):
        for key, value in (("d_state", d_state), ("d_conv", d_conv), ("expand", expand)):
            if value < 1:
                raise ValueError(f"{key}={value} must be >= 1")
        if dt_rank != "auto" and dt_rank < 1:
            raise ValueError(f"dt_rank={dt_rank} must be >= 1 (or auto: ceil(dim / 16))")
        rank = math.ceil(dim / 16) if dt_rank == "auto" else dt_rank
        super().__init__(
            in_features,
            dim,
            layers,
            lambda: MambaMixer(dim, d_state, d_conv, expand, rank, impl),
            init,
        )
