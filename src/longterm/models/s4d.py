"""S4D: a diagonal linear time-invariant state space per channel (Gu, Gupta, Goel & Ré 2022, "On
the Parameterization and Initialization of Diagonal State Space Models", §2-§4), trained as a
causal convolution computed by FFT, run step by step as its recurrence.

Per channel d (D channels), a state of N/2 complex modes n, the conjugate half of N real numbers:

    x'(t) = A x(t) + B u(t),  y(t) = 2 Re(C x(t)) + D u(t)      A = diag(A_n), Re A_n < 0
    ZOH (§2, eq. 3):  Ā = exp(ΔA),  B̄ = (ΔA)^{-1} (exp(ΔA) - I) ΔB = (Ā - 1) / A · B
    recurrence:       x_t = Ā x_{t-1} + B̄ u_t,   y_t = 2 Re(C x_t) + D u_t
    kernel (§3.1):    K_l = 2 Re(Σ_n C_n B̄_n Ā_n^l),  l = 0..T-1   (a Vandermonde product)
    convolution:      y = K * u + D u,  by FFT (models/kernels/fft_conv.py)

B_n = 1 is folded into C_n (only the product C_n B_n enters K, as in the paper's Listing 1). Δ is
learned per channel as log Δ, initialised log-uniform in [0.001, 0.1]; A_n = -exp(a_n) + i ω_n
keeps Re A_n < 0 (§4.1); the initialisation of A (§4.2) is `a_init`:
    lin  (S4D-Lin):  A_n = -1/2 + iπn
    inv  (S4D-Inv):  A_n = -1/2 + i (N/π) (N / (2n + 1) - 1),   n = 0..N/2 - 1.
C ~ complex N(0, 1), D ~ N(0, 1). After the SSM, the S4 block's output (§5): GELU, then a
position-wise linear layer D -> 2D and a GLU.

The mixer u (B, T, D) -> y (B, T, D) sits in models/stack.py's MixerStack (input projection,
pre-norm residual layers, final norm). State per layer: D × N real numbers (D × N/2 complex).
Parameters per layer: 2D² + 2DN + 4D, and its LayerNorm 2D.
"""

import math
from typing import Literal

import torch
from pydantic import PositiveInt
from torch import Tensor, nn
from torch.nn import functional as F

from longterm.models.kernels.fft_conv import causal_fft_conv
from longterm.models.stack import MixerStack

A_INITS = ("lin", "inv")  # S4D-Lin, S4D-Inv (§4.2)


def vandermonde_kernel(CB: Tensor, dtA: Tensor, length: int) -> Tensor:
    """K_l = 2 Re(Σ_n CB_n exp(l ΔA_n)):  CB, dtA (D, N/2) complex -> K (D, length) real.

    The Vandermonde matrix exp(l ΔA_n) (D, N/2, length) would take D N/2 T complex numbers, kept
    for the backward pass; with l = q b + r (b = ⌈√length⌉) it factors as exp(q b ΔA_n) exp(r ΔA_n),
    and the sum over n becomes one batched matrix product of (D, Q, N/2) by (D, N/2, b): the same
    products, memory D N/2 (Q + b). Written here: the paper's code uses pykeops or a CUDA
    Vandermonde kernel for the same saving."""
    b = math.isqrt(max(length, 1) - 1) + 1  # ⌈√length⌉
    Q = -(-length // b)
    r = torch.arange(b, device=dtA.device, dtype=dtA.real.dtype)
    q = torch.arange(Q, device=dtA.device, dtype=dtA.real.dtype) * b
    within = torch.exp(dtA[:, :, None] * r)  # exp(r ΔA_n)  (D, N/2, b)
    # CB_n exp(q b ΔA_n)  (D, Q, N/2)
    across = torch.exp(dtA[:, None, :] * q[:, None]) * CB[:, None, :]
    return 2 * torch.matmul(across, within).real.flatten(1)[:, :length]


class S4DMixer(nn.Module):
    """u (B, T, D) -> y (B, T, D): per channel the diagonal SSM of N/2 complex modes, its D skip,
    GELU, then a linear layer D -> 2D and a GLU (the S4 block, §5)."""

    def __init__(self, dim: int, d_state: int, a_init: str):
        super().__init__()
        if d_state % 2:
            raise ValueError(f"d_state={d_state} must be even: N/2 complex conjugate pairs")
        if a_init not in A_INITS:
            raise ValueError(f"a_init={a_init!r} is invalid: choose one of {', '.join(A_INITS)}")
        half = d_state // 2
        n = torch.arange(half, dtype=torch.float32)
        if a_init == "lin":
            imag = math.pi * n
        else:
            imag = d_state / math.pi * (d_state / (2 * n + 1) - 1)
        log_dt = torch.empty(dim).uniform_(math.log(0.001), math.log(0.1))
        self.log_dt = nn.Parameter(log_dt)  # log Δ  (D,)
        self.log_neg_a_real = nn.Parameter(torch.full((dim, half), math.log(0.5)))  # Re A = -exp(.)
        self.a_imag = nn.Parameter(imag.repeat(dim, 1))  # Im A  (D, N/2)
        self.C = nn.Parameter(torch.randn(dim, half, 2) * math.sqrt(0.5))  # Re, Im of C  (D, N/2)
        self.D = nn.Parameter(torch.randn(dim))
        self.out = nn.Linear(dim, 2 * dim)

    def discrete(self) -> tuple[Tensor, Tensor, Tensor]:
        """ZOH (eq. 3): Ā, B̄ = (Ā - 1) / A and ΔA, each (D, N/2) complex."""
        A = torch.complex(-torch.exp(self.log_neg_a_real), self.a_imag)
        dtA = torch.exp(self.log_dt)[:, None] * A
        A_bar = torch.exp(dtA)
        return A_bar, (A_bar - 1) / A, dtA

    def output(self, y: Tensor) -> Tensor:
        """The block's output, position-wise: GLU(W GELU(y) + b),  (..., D) -> (..., D)."""
        return F.glu(self.out(F.gelu(y)), dim=-1)

    def forward(self, u: Tensor) -> Tensor:
        _, B_bar, dtA = self.discrete()
        K = vandermonde_kernel(torch.view_as_complex(self.C) * B_bar, dtA, u.shape[1])
        # (B, T, D) in memory again: over a transposed tensor, GELU's backward pass takes a
        # non-vectorised path on the CPU that costs more than this copy.
        y = causal_fft_conv(u.transpose(1, 2), K).transpose(1, 2).contiguous()
        return self.output(y + self.D * u)

    def step(self, u_t: Tensor, x: Tensor | None) -> tuple[Tensor, Tensor]:
        """x_t = Ā x_{t-1} + B̄ u_t, y_t = 2 Re(C x_t) + D u_t:  u_t (B, D), x (B, D, N/2) complex
        (None: zeros) -> (output (B, D), x_t)."""
        A_bar, B_bar, _ = self.discrete()
        x = B_bar * u_t[..., None] + (0 if x is None else A_bar * x)
        y = 2 * (torch.view_as_complex(self.C) * x).sum(-1).real + self.D * u_t
        return self.output(y), x

    def state_size(self, length: int) -> int:
        """D × N real numbers (N/2 complex modes per channel) once a step has run."""
        return self.D.numel() * self.C.shape[1] * 2 if length > 0 else 0


class S4D(MixerStack):
    """x (B, T, F) -> h (B, T, D): `layers` pre-norm residual S4D layers of `d_state` = N real
    state numbers per channel, A initialised by `a_init` (model=s4d)."""

    def __init__(
        self,
        in_features: int,
        dim: int,
        layers: PositiveInt = 2,
        d_state: PositiveInt = 64,
        a_init: Literal[A_INITS] = "lin",
        init: str = "paper",
    ):
        def mixer() -> S4DMixer:
            return S4DMixer(dim, d_state, a_init)

        super().__init__(in_features, dim, layers, mixer, init)
