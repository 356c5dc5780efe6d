"""Gated linear attention (GLA; Yang, Wang, Shen, Panda & Kim 2024, "Gated Linear Attention
Transformers with Hardware-Efficient Training", arXiv 2312.06635), with RetNet's retention (Sun
et al. 2023, arXiv 2307.08621) as its fixed-decay case (`decay=fixed`).

Per head, with row vectors q_t, k_t in R^{d_k}, v_t in R^{d_v} and a matrix state S_t in
R^{d_k x d_v} (§4.1, the recurrent form):

    S_t = diag(alpha_t) S_{t-1} + k_t^T v_t,      S_{-1} = 0
    o_t = (q_t / sqrt(d_k)) S_t                   (the scale of flash-linear-attention's reference)

    decay=data  (§4.4):  alpha_t = sigmoid(u_t W_a1 W_a2 + b_a)^(1/tau) in (0, 1)^{d_k},
                         W_a1 (D x 16), W_a2 (16 x d_k), tau = 16
    decay=fixed (RetNet): alpha_t = gamma_h 1,  gamma_h = 1 - 2^(-5-h) for head h = 0..H-1

The layer (§4.4), u (B, T, D) -> y (B, T, D), with H heads, d_k = expand_k D / H, d_v = D / H:

    q = u W_Q,  k = u W_K  (B, T, H, d_k);   v = u W_V  (B, T, H, d_v)
    r = Swish(u W_r + b_r);   y = (r ⊙ LN(o)) W_O      LN over each head's d_v (shared gain)

`use_short_conv` (flash-linear-attention's key: off by default in its GLA layer, as here; on in
its DeltaNet layer, as in the DeltaNet paper) puts short convolutions after the projections:

    q = SiLU(Conv_q(u W_Q)),  k = SiLU(Conv_k(u W_K)),  v = SiLU(Conv_v(u W_V))

each Conv a causal depthwise convolution of `conv_size` taps without bias (models/short_conv.py),
as fla/layers/gla.py (ShortConvolution, conv_bias=False, activation='silu'); the decay reads u.

RetNet's own layer differs beyond the decay (xPos rotations of q and k, GroupNorm), which this
key leaves out: `decay=fixed` is GLA with RetNet's decays, the comparison of §5.

The chunked form (§4.2-4.3), chunks of C steps (models/kernels/chunks.py) with b_t = sum of log
alpha from the chunk's start through step t, and S_0 the state entering the chunk:

    o_t = (q_t ⊙ exp(b_t)) S_0 + sum_{s <= t in the chunk} (q_t · (k_s ⊙ exp(b_t - b_s))) v_s
    S_C = diag(exp(b_C)) S_0 + sum_s (k_s ⊙ exp(b_C - b_s))^T v_s

The decay is diagonal, so the state entering chunk n is a sum over the earlier chunks m of what
each wrote, decayed by the chunks between: all N states at once with an (N + 1, N, d_k) decay
tensor per head, no loop over chunks (B H N^2 d_k numbers, quadratic in T / C: at B = 100, H = 4,
d_k = 8 and T = 11000, 100 x 4 x 173 x 172 x 8 = 9.5e7). Inside the chunk (the paper's secondary
chunking) sub-chunks of SUB steps: between sub-chunks
    exp(b_t - b_s) = exp(b_t - e_j) exp(e_j - b_s),
e_j the log decay before sub-chunk j begins, so a matrix product; within a sub-chunk
exp(b_t - b_s) itself, a (SUB, SUB, d_k) tensor. Every exponent is a sum of log decays, <= 0,
summed on its own rather than as the difference of two running sums (which rounding would ruin
after a strong decay in float32): no overflow and no cancellation. The step form carries S:
H d_k d_v numbers a layer, and with `use_short_conv` the convolutions' last min(t, conv_size - 1)
inputs: (2 H d_k + H d_v) min(t, conv_size - 1) more.

`impl` picks the form (linear_attention_cpu.kernel_runs): on the CPU `auto` and `fused` run the
recurrence in a compiled kernel (models/kernels/linear_attention_cpu.cpp: the state per
sequence-head, recomputed chunk by chunk in the backward pass), `reference` the chunked form;
elsewhere (CUDA, PyTorch's meta device) the chunked form. Either is the recurrence on q, k, v and
alpha: the short convolutions come before it.

No library layer runs here: flash-linear-attention's GLA kernels are Triton (CUDA only), and
zoology's GLA mixer (zoology/mixers/gla.py) imports them; torch has no gated linear attention.
Written from the equations.
"""

import math
from typing import Literal

import torch
from pydantic import PositiveFloat, PositiveInt
from torch import Tensor, nn
from torch.nn import functional as F

from longterm.models.kernels.chunks import fixed_plan, from_chunks, to_chunks
from longterm.models.kernels.linear_attention_cpu import gla_kernel, kernel_runs
from longterm.models.short_conv import QKVConvolutions, Recent
from longterm.models.stack import MixerStack

# Steps per sub-chunk (a chunk's length is a multiple of it). A chunk of C steps costs about
# C (SUB + C / SUB) d_k numbers (within sub-chunks, and k_s for each later sub-chunk): least at
# SUB = sqrt(CHUNK) = 8.
SUB = 8
GATE_RANK = 16  # the rank of the gate's projection W_a1 W_a2 (§4.4)
TEMPERATURE = 16  # tau: alpha = sigmoid(.)^(1/tau) stays near 1 at initialisation (§4.4)


def retention_decays(heads: int) -> Tensor:
    """RetNet's log gamma_h = log(1 - 2^(-5-h)) per head:  (H,)."""
    return torch.log1p(-(2.0 ** (-5.0 - torch.arange(heads, dtype=torch.float64)))).float()


def gla_step(
    q: Tensor, k: Tensor, v: Tensor, log_alpha: Tensor, S: Tensor
) -> tuple[Tensor, Tensor]:
    """One step of the recurrent form: q, k, log_alpha (B, H, d_k), v (B, H, d_v), S (B, H, d_k,
    d_v) -> o_t (B, H, d_v), S_t."""
    S = log_alpha.exp()[..., None] * S + k[..., :, None] * v[..., None, :]
    o = (q[..., None, :] * q.shape[-1] ** -0.5) @ S
    return o.squeeze(-2), S


def gla_chunked(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    log_alpha: Tensor,
    state: Tensor | None = None,
    plan: tuple[int, int] | None = None,
) -> tuple[Tensor, Tensor]:
    """The chunked form: q, k, log_alpha (B, H, T, d_k), v (B, H, T, d_v), the state before step 0
    (B, H, d_k, d_v) or None for zeros -> o (B, H, T, d_v), S after step T-1. `plan` (C, N):
    N chunks of C steps, C a multiple of SUB; by default chunks of at most CHUNK steps on every
    device (models/kernels/chunks.py): no op here loops over chunks, so their number changes no op
    count."""
    B, H, T, d_k = q.shape
    C, N = plan or fixed_plan(T, SUB)
    q, k, v, g = (to_chunks(x, C, N) for x in (q * d_k**-0.5, k, v, log_alpha))  # (B,H,N,C,.)
    o = within_chunks(q, k, v, g)
    written = (k * sum_after(g).exp()).transpose(-1, -2) @ v  # b_C - b_s: (B, H, N, d_k, d_v)
    total = g.sum(-2)  # b_C, each chunk's log decay: (B, H, N, d_k)
    # S_n entering chunk n = 0..N (S_N: after the last): what each earlier chunk m wrote,
    # decayed by the chunks between them; all at once, no loop over chunks.
    carry = log_decays_before(total).exp()  # (B, H, N + 1, N, d_k)
    S = torch.einsum("bhnmk,bhmkv->bhnkv", carry, written)
    if state is not None:
        S = S + F.pad(total.cumsum(-2), (0, 0, 1, 0)).exp()[..., None] * state[:, :, None]
    o = o + (q * g.cumsum(-2).exp()) @ S[:, :, :-1]  # b_t: reads the state entering the chunk
    return from_chunks(o, T), S[:, :, -1]


def within_chunks(q: Tensor, k: Tensor, v: Tensor, g: Tensor) -> Tensor:
    """sum_{s <= t in the chunk} (q_t · (k_s ⊙ exp(b_t - b_s))) v_s for every chunk at once:
    q, k, g (..., C, d_k), v (..., C, d_v) -> (..., C, d_v), by sub-chunks of SUB steps."""
    n = q.shape[-2] // SUB
    sub = lambda x: x.unflatten(-2, (n, SUB))  # noqa: E731  (..., n, SUB, d)
    g_sub = sub(g)
    # Earlier sub-chunks i < j: b_t - b_s = (b_t - e_j) + (sum over sub-chunks i < m < j)
    # + (sum after s in sub-chunk i), each a sum of log decays, <= 0.
    q_j = sub(q) * g_sub.cumsum(-2).exp()  # b_t - e_j: (..., n, SUB, d_k)
    between = log_decays_before(g_sub.sum(-2))[..., :-1, :, :]  # (..., n, n, d_k)
    gap = between.repeat_interleave(SUB, dim=-2) + sum_after(g_sub).flatten(-3, -2).unsqueeze(-3)
    k_j = k.unsqueeze(-3) * gap.exp()  # (..., n, C, d_k), zero where s is not before j
    o = (q_j @ k_j.transpose(-1, -2)).flatten(-3, -2) @ v  # (..., C, C) @ (..., C, d_v)
    # The same sub-chunk: exp(b_t - b_s) for s <= t as it stands, (..., n, SUB, SUB, d_k).
    scores = (sub(q).unsqueeze(-2) * sub(k).unsqueeze(-3) * log_decays(g_sub).exp()).sum(-1)
    return o + (scores @ sub(v)).flatten(-3, -2)


def log_decays(g: Tensor) -> Tensor:
    """b_t - b_s = sum_{s < tau <= t} g_tau for every pair: g (..., L, d) -> (..., L, L, d),
    -inf where s > t. Each is summed on its own (a masked cumsum), never as a difference of two
    running sums, which would lose it to rounding after a strong decay."""
    L = g.shape[-2]
    after = torch.ones(L, L, dtype=torch.bool, device=g.device).tril(-1)  # [tau, s]: tau > s
    sums = torch.where(after[..., None], g.unsqueeze(-2), 0).cumsum(-3)  # [t, s]
    return sums.masked_fill(after.T[..., None], -math.inf)  # s > t


def log_decays_before(g: Tensor) -> Tensor:
    """sum_{m < p < n} g_p for n = 0..L and m = 0..L-1: g (..., L, d) -> (..., L + 1, L, d),
    -inf where m >= n."""
    return F.pad(log_decays(g), (0, 0, 0, 0, 1, 0), value=-math.inf)


def sum_after(g: Tensor) -> Tensor:
    """sum_{s < tau < L} g_tau for each s:  g (..., L, d) -> (..., L, d)."""
    return F.pad(g[..., 1:, :].flip(-2).cumsum(-2).flip(-2), (0, 0, 0, 1))


class GLAMixer(nn.Module):
    """u (B, T, D) -> y (B, T, D): one GLA layer of H heads (the module docstring)."""

    def __init__(
        self,
        dim: int,
        heads: int,
        expand_k: float,
        decay: str,
        impl: str = "auto",
        use_short_conv: bool = False,
        conv_size: int = 4,
    ):
        super().__init__()
        self.impl = impl
        key_dim = int(dim * expand_k)
        if dim % heads or key_dim % heads or key_dim == 0:
            raise ValueError(
                f"heads={heads} must divide dim={dim} and dim * expand_k = {key_dim} (>= 1)"
            )
        self.heads, self.d_k, self.d_v = heads, key_dim // heads, dim // heads
        self.W_q = nn.Linear(dim, key_dim, bias=False)
        self.W_k = nn.Linear(dim, key_dim, bias=False)
        self.W_v = nn.Linear(dim, dim, bias=False)
        self.conv = QKVConvolutions((key_dim, key_dim, dim), conv_size) if use_short_conv else None
        if decay == "data":
            self.W_a = nn.Sequential(
                nn.Linear(dim, GATE_RANK, bias=False), nn.Linear(GATE_RANK, key_dim)
            )
        else:
            self.register_buffer("log_gamma", retention_decays(heads))
        self.W_r = nn.Linear(dim, dim)
        self.norm = nn.LayerNorm(self.d_v)
        self.W_o = nn.Linear(dim, dim, bias=False)

    def projections(
        self, u: Tensor, recent: Recent = None, step: bool = False
    ) -> tuple[Tensor, Tensor, Tensor, Tensor, Recent]:
        """u (B, T, D), or u_t (B, D) with the convolutions' last inputs (`step`) -> q, k,
        log alpha (..., H, d_k), v (..., H, d_v), and the convolutions' last inputs after u_t."""
        split = lambda x: x.unflatten(-1, (self.heads, -1))  # noqa: E731
        qkv = self.W_q(u), self.W_k(u), self.W_v(u)
        if self.conv is not None:
            qkv, recent = self.conv.step(qkv, recent) if step else (self.conv(qkv), None)
            qkv = tuple(F.silu(x) for x in qkv)
        q, k, v = (split(x) for x in qkv)
        if hasattr(self, "W_a"):
            log_alpha = F.logsigmoid(split(self.W_a(u))) / TEMPERATURE
        else:
            log_alpha = self.log_gamma.to(u.dtype)[:, None].expand_as(q)
        return q, k, v, log_alpha, recent

    def output(self, u: Tensor, o: Tensor) -> Tensor:
        """y = (Swish(u W_r + b_r) ⊙ LN(o)) W_O:  u (..., D), o (..., H, d_v) -> (..., D)."""
        return self.W_o(F.silu(self.W_r(u)) * self.norm(o).flatten(-2))

    def forward(self, u: Tensor) -> Tensor:
        q, k, v, log_alpha, _ = self.projections(u)  # (B, T, H, .)
        if kernel_runs(self.impl, u):
            return self.output(u, gla_kernel(q, k, v, log_alpha))
        o, _ = gla_chunked(*(x.transpose(1, 2) for x in (q, k, v, log_alpha)))  # (B, H, T, .)
        return self.output(u, o.transpose(1, 2))

    def step(
        self, u_t: Tensor, state: tuple[Tensor, Recent] | None
    ) -> tuple[Tensor, tuple[Tensor, Recent]]:
        """u_t (B, D), (S (B, H, d_k, d_v), the convolutions' last inputs or None) or None before
        the first step -> y_t (B, D), the new state."""
        if state is None:
            state = u_t.new_zeros(u_t.shape[0], self.heads, self.d_k, self.d_v), None
        S, recent = state
        *qkv_alpha, recent = self.projections(u_t, recent, step=True)
        o, S = gla_step(*qkv_alpha, S)
        return self.output(u_t, o), (S, recent)

    def state_size(self, length: int) -> int:
        conv = 0 if self.conv is None else self.conv.state_size(length)
        return self.heads * self.d_k * self.d_v + conv


class GatedLinearAttention(MixerStack):
    """x (B, T, F) -> h (B, T, D): `layers` pre-norm residual GLA layers (models/stack.py)."""

    def __init__(
        self,
        in_features: int,
        dim: int,
        heads: PositiveInt = 4,
        layers: PositiveInt = 2,
        expand_k: PositiveFloat = 0.5,
        decay: Literal["data", "fixed"] = "data",
        init: str = "paper",
        impl: str = "auto",
        use_short_conv: bool = False,
        conv_size: PositiveInt = 4,
    ):
        def mixer() -> GLAMixer:
            return GLAMixer(dim, heads, expand_k, decay, impl, use_short_conv, conv_size)

        super().__init__(in_features, dim, layers, mixer, init)
