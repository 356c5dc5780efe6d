"""DeltaNet: linear attention with the delta rule (Schlag, Irie & Schmidhuber 2021, "Linear
Transformers Are Secretly Fast Weight Programmers"), trained in the chunkwise parallel form of
Yang, Wang, Zhang, Shen & Kim 2024 ("Parallelizing Linear Transformers with the Delta Rule over
Sequence Length", arXiv 2406.06484).

The paper writes the state as S_t in R^{d_v x d_k} with column vectors:

    S_t = S_{t-1} (I - beta_t k_t k_t^T) + beta_t v_t k_t^T,      o_t = S_t q_t

This file holds its transpose (row vectors, S_t in R^{d_k x d_v}, flash-linear-attention's
layout), the same recurrence:

    S_t = (I - beta_t k_t^T k_t) S_{t-1} + beta_t k_t^T v_t,  S_{-1} = 0
    o_t = (q_t / sqrt(d_k)) S_t                   (the scale of flash-linear-attention's reference)

The layer, u (B, T, D) -> y (B, T, D), H heads of d_k = d_v = D / H (the paper's architecture):

    q = L2(SiLU(u W_Q)),  k = L2(SiLU(u W_K)),  v = SiLU(u W_V)    (B, T, H, D / H)
    beta = sigmoid(u W_beta)  (B, T, H);    y = RMSNorm(o) W_O,  RMSNorm over each head's d_v

`use_short_conv` (the paper's layer and flash-linear-attention's default; off by default here, so
that runs made before it keep their meaning) adds its short convolutions after the projections:

    q = L2(SiLU(Conv_q(u W_Q))),  k = L2(SiLU(Conv_k(u W_K))),  v = SiLU(Conv_v(u W_V))

each Conv a causal depthwise convolution of `conv_size` taps without bias (models/short_conv.py),
as fla/layers/delta_net.py (ShortConvolution, conv_bias=False, activation='silu'); beta reads u.

The chunked form (§3, the WY representation / UT transform), chunks of C steps
(models/kernels/chunks.py) entering with state S_0: with the pseudo-values u_t = beta_t (v_t - k_t
S_{t-1}), S_t = S_0 + sum_{s <= t} k_s^T u_s, so for the chunk's rows (K, V, Q (C, d), beta (C,))

    T = I + tril(diag(beta) K K^T, -1)       unit lower triangular  (C, C)
    W = T^-1 diag(beta) K,   U = T^-1 diag(beta) V                   (one triangular solve)
    U_S = U - W S_0;   O = Q S_0 + tril(Q K^T) U_S;   S_C = S_0 + K^T U_S

T, W, U and tril(Q K^T) for every chunk at once; then the chunks one after another carry S (the
transitions I - K^T W are full matrices: no cumulative sum replaces this loop, whose length
models/kernels/chunks.py fixes off the CPU); then O for every chunk at once. The step form carries
S: H d_k d_v numbers a layer, and with `use_short_conv` the convolutions' last min(t, conv_size - 1)
inputs: 3 D min(t, conv_size - 1) more.

`impl` picks the form (linear_attention_cpu.kernel_runs): on the CPU `auto` and `fused` run the
recurrence in a compiled kernel (models/kernels/linear_attention_cpu.cpp: the state per
sequence-head, recomputed chunk by chunk in the backward pass), `reference` the chunked form;
elsewhere (CUDA, PyTorch's meta device) the chunked form. Either is the delta rule on q, k, v and
beta: the short convolutions come before it.

No library layer runs here: flash-linear-attention's delta-rule kernels are Triton (CUDA only), and
zoology's DeltaNet mixer (zoology/mixers/delta_net.py) imports them; torch has no delta rule.
Written from the equations, with torch.linalg.solve_triangular for the UT transform.
"""

import torch
from pydantic import PositiveInt
from torch import Tensor, nn
from torch.nn import functional as F

from longterm.models.kernels.chunks import chunk_plan, from_chunks, to_chunks
from longterm.models.kernels.linear_attention_cpu import delta_kernel, kernel_runs
from longterm.models.short_conv import QKVConvolutions, Recent
from longterm.models.stack import MixerStack


def delta_step(q: Tensor, k: Tensor, v: Tensor, beta: Tensor, S: Tensor) -> tuple[Tensor, Tensor]:
    """One step of the recurrent form: q, k (B, H, d_k), v (B, H, d_v), beta (B, H), S (B, H,
    d_k, d_v) -> o_t (B, H, d_v), S_t."""
    k_row = k[..., None, :]  # (B, H, 1, d_k)
    u = beta[..., None, None] * (v[..., None, :] - k_row @ S)  # the pseudo-value (B, H, 1, d_v)
    S = S + k_row.transpose(-1, -2) @ u
    o = (q[..., None, :] * q.shape[-1] ** -0.5) @ S
    return o.squeeze(-2), S


def delta_chunked(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    beta: Tensor,
    state: Tensor | None = None,
    plan: tuple[int, int] | None = None,
) -> tuple[Tensor, Tensor]:
    """The chunked form: q, k (B, H, T, d_k), v (B, H, T, d_v), beta (B, H, T), the state before
    step 0 (B, H, d_k, d_v) or None for zeros -> o (B, H, T, d_v), S after step T-1. `plan`
    (C, N): N chunks of C steps; by default models/kernels/chunks.py's for the device."""
    B, H, T, d_k = q.shape
    C, N = plan or chunk_plan(T, q.device)
    chunks = (q * d_k**-0.5, k, v, beta[..., None])
    q, k, v, beta = (to_chunks(x, C, N) for x in chunks)  # (B, H, N, C, .)
    strictly_lower = torch.ones(C, C, dtype=torch.bool, device=q.device).tril(-1)
    # T's diagonal is I: solve_triangular(unitriangular=True) reads only the part below it.
    T_ = ((beta * k) @ k.transpose(-1, -2)).masked_fill(~strictly_lower, 0)
    WU = torch.linalg.solve_triangular(
        T_, torch.cat([beta * k, beta * v], dim=-1), upper=False, unitriangular=True
    )
    W, U = WU.split([d_k, v.shape[-1]], dim=-1)
    scores = (q @ k.transpose(-1, -2)).masked_fill(strictly_lower.T, 0)  # tril(Q K^T)
    S = q.new_zeros(B, H, d_k, v.shape[-1]) if state is None else state
    # The chunks one after another, (B H) as one batch: U_S = U - W S_0, S_C = S_0 + K^T U_S,
    # each one torch.baddbmm (the fewest ops per chunk on an accelerator); the outputs after.
    S, entering, new_values = S.flatten(0, 1), [], []
    per_chunk = (x.flatten(0, 1).unbind(1) for x in (W, U, k.transpose(-1, -2)))
    for W_n, U_n, K_n_T in zip(*per_chunk, strict=True):
        entering.append(S)
        new_values.append(torch.baddbmm(U_n, W_n, S, alpha=-1))
        S = torch.baddbmm(S, K_n_T, new_values[-1])
    S_0, U_S = (torch.stack(x, dim=1).unflatten(0, (B, H)) for x in (entering, new_values))
    o = q @ S_0 + scores @ U_S  # (B, H, N, C, d_v)
    return from_chunks(o, T), S.unflatten(0, (B, H))


class DeltaNetMixer(nn.Module):
    """u (B, T, D) -> y (B, T, D): one DeltaNet layer of H heads (the module docstring)."""

    def __init__(
        self,
        dim: int,
        heads: int,
        impl: str = "auto",
        use_short_conv: bool = False,
        conv_size: int = 4,
    ):
        super().__init__()
        self.impl = impl
        if dim % heads:
            raise ValueError(f"heads={heads} must divide dim={dim}")
        self.heads, self.d_head = heads, dim // heads
        self.W_q = nn.Linear(dim, dim, bias=False)
        self.W_k = nn.Linear(dim, dim, bias=False)
        self.W_v = nn.Linear(dim, dim, bias=False)
        self.W_beta = nn.Linear(dim, heads, bias=False)
        self.conv = QKVConvolutions((dim, dim, dim), conv_size) if use_short_conv else None
        self.norm = nn.RMSNorm(self.d_head)
        self.W_o = nn.Linear(dim, dim, bias=False)

    def projections(
        self, u: Tensor, recent: Recent = None, step: bool = False
    ) -> tuple[Tensor, Tensor, Tensor, Tensor, Recent]:
        """u (B, T, D), or u_t (B, D) with the convolutions' last inputs (`step`) -> q, k, v
        (..., H, D / H), beta (..., H), and the convolutions' last inputs after u_t."""
        split = lambda x: x.unflatten(-1, (self.heads, -1))  # noqa: E731
        qkv = self.W_q(u), self.W_k(u), self.W_v(u)
        if self.conv is not None:
            qkv, recent = self.conv.step(qkv, recent) if step else (self.conv(qkv), None)
        q, k, v = (split(F.silu(x)) for x in qkv)
        q, k = F.normalize(q, dim=-1), F.normalize(k, dim=-1)
        return q, k, v, torch.sigmoid(self.W_beta(u)), recent

    def output(self, o: Tensor) -> Tensor:
        """y = RMSNorm(o) W_O:  o (..., H, d_v) -> (..., D)."""
        return self.W_o(self.norm(o).flatten(-2))

    def forward(self, u: Tensor) -> Tensor:
        q, k, v, beta, _ = self.projections(u)  # (B, T, H, .)
        if kernel_runs(self.impl, u):
            return self.output(delta_kernel(q, k, v, beta))
        o, _ = delta_chunked(*(x.transpose(1, 2) for x in (q, k, v, beta)))  # (B, H, T, .)
        return self.output(o.transpose(1, 2))

    def step(
        self, u_t: Tensor, state: tuple[Tensor, Recent] | None
    ) -> tuple[Tensor, tuple[Tensor, Recent]]:
        """u_t (B, D), (S (B, H, d_k, d_v), the convolutions' last inputs or None) or None before
        the first step -> y_t (B, D), the new state."""
        if state is None:
            state = u_t.new_zeros(u_t.shape[0], self.heads, self.d_head, self.d_head), None
        S, recent = state
        *qkv_beta, recent = self.projections(u_t, recent, step=True)
        o, S = delta_step(*qkv_beta, S)
        return self.output(o), (S, recent)

    def state_size(self, length: int) -> int:
        conv = 0 if self.conv is None else self.conv.state_size(length)
        return self.heads * self.d_head * self.d_head + conv


class DeltaNet(MixerStack):
    """x (B, T, F) -> h (B, T, D): `layers` pre-norm residual DeltaNet layers (models/stack.py)."""

    def __init__(
        self,
        in_features: int,
        dim: int,
        heads: PositiveInt = 4,
        layers: PositiveInt = 2,
        init: str = "paper",
        impl: str = "auto",
        use_short_conv: bool = False,
        conv_size: PositiveInt = 4,
    ):
        def mixer() -> DeltaNetMixer:
            return DeltaNetMixer(dim, heads, impl, use_short_conv, conv_size)

        super().__init__(in_features, dim, layers, mixer, init)
