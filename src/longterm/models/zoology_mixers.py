"""zoology's sequence mixers of its Figure 2 (Arora et al. 2023, arXiv 2312.04927; HazyResearch/
zoology d88d6f5) that the framework has no equal of: its attention (`MHA`) and its Hyena
(`Hyena`). BaseConv is models/base_conv.py, Mamba's block models/mamba.py. Each maps
u (B, T, D) -> (B, T, D) causally and has the step form (models/state.py).

Attention (zoology/mixers/attention.py, `MHA`), H heads of width d = D / H:

    q, k, v = W_qkv u + b_qkv                       (B, T, 3D)
    y_t = softmax_s<=t(q_t · k_s / sqrt(d)) v_s     dropout p on the weights while training
    out = W_out y + b_out

computed by scaled_dot_product_attention (causal); zoology masks the future with -10000 before
the softmax, which is 0 after it (exp(-10000) underflows). Step form: the keys and values of
every past step, 2 D t numbers after t steps.

Hyena (zoology/mixers/hyena.py, `Hyena` with its defaults: order 2, one head, filter width 64,
short filter 3), L = `max_positions` (zoology's l_max):

    x1, x2, v = ShortConv(W_in u + b_in)            3 D channels, 3 taps, causal, with a bias
    v' = v ⊙ x1
    y = (k * v') + β ⊙ v'                           the causal long convolution, by FFT
    out = W_out (y ⊙ x2) + b_out
    k_t = FFN(PE(t)) ⊙ exp(-t_L |δ|)                (D, T): PE as models/base_conv.py's, learned
    FFN = Linear(3, 64) -> Sin -> Linear(64, 64) -> Sin -> Linear(64, 64) -> Sin -> Linear(64, D)

with Sin(a) = sin(f ⊙ a), one f (64,) shared by the three (zoology builds one `Sin` module and
places it three times), t_L = t / (L - 1) and δ fixed, linspace(ln(1e-2)/1.5, ln(1e-2)/0.3, D)
(zoology's ExponentialModulation, a buffer); β (D,) is zoology's filter bias, N(0, 1). Defined
for T <= L. Step form: the short convolution's last min(t, 2) inputs (3 D each) and every past
v' (D each): 3 D min(t, 2) + D t numbers after t steps.
"""

import math

import torch
from torch import Tensor, nn
from torch.nn import functional as F

from longterm.models.base_conv import implicit_positions
from longterm.models.kernels.fft_conv import causal_fft_conv
from longterm.models.short_conv import ShortConvolution

KVCache = tuple[Tensor, Tensor]  # keys and values of every past step, (B, H, t, d) each


class MHA(nn.Module):
    """u (B, T, D) -> (B, T, D): zoology's MHA, causal softmax attention over every past step."""

    def __init__(self, dim: int, heads: int = 1, dropout: float = 0.0):
        super().__init__()
        if dim % heads:
            raise ValueError(f"heads={heads} must divide dim={dim}")
        self.heads, self.dropout = heads, dropout
        self.Wqkv = nn.Linear(dim, 3 * dim)  # noqa: N815  zoology's name
        self.out_proj = nn.Linear(dim, dim)

    def qkv(self, u: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """(B, T, D) -> q, k, v (B, H, T, d): zoology's "... (three h d)" split."""
        # chunks, not one permute of (B, T, 3, H, d): its backward is one cat, not a copy more
        q, k, v = (
            t.unflatten(-1, (self.heads, -1)).transpose(1, 2) for t in self.Wqkv(u).chunk(3, -1)
        )
        return q, k, v

    def forward(self, u: Tensor) -> Tensor:
        q, k, v = self.qkv(u)
        p = self.dropout if self.training else 0.0
        y = F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True)
        return self.out_proj(y.transpose(1, 2).flatten(2))

    def step(self, u_t: Tensor, cache: KVCache | None) -> tuple[Tensor, KVCache]:
        """u_t (B, D), the keys and values of the steps before -> y_t (B, D), the cache with
        step t's own."""
        q, k, v = self.qkv(u_t[:, None])
        if cache is not None:
            k, v = torch.cat([cache[0], k], dim=2), torch.cat([cache[1], v], dim=2)
        y = F.scaled_dot_product_attention(q, k, v)  # (B, H, 1, d): every key is in the past
        return self.out_proj(y.flatten(1)), (k, v)

    def state_size(self, length: int) -> int:
        return 2 * self.out_proj.in_features * length


class Sin(nn.Module):
    """a (..., W) -> sin(f ⊙ a), f (1, W) learned, initialised to 1 (zoology's w)."""

    def __init__(self, width: int):
        super().__init__()
        self.freq = nn.Parameter(torch.ones(1, width))

    def forward(self, a: Tensor) -> Tensor:
        return torch.sin(self.freq * a)


class HyenaFilter(nn.Module):
    """k (D, T) for T <= L: zoology's Filter (implicit, exponentially modulated)."""

    def __init__(self, dim: int, max_positions: int, width: int = 64):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(dim))  # β
        self.z = nn.Parameter(implicit_positions(max_positions))  # PE (1, L, 3), learned
        self.register_buffer("t", torch.linspace(0, 1, max_positions)[None, :, None])  # t_L
        sin = Sin(width)  # one module, three places: one f
        self.implicit_filter = nn.Sequential(
            *(nn.Linear(3, width), sin, nn.Linear(width, width), sin),
            *(nn.Linear(width, width), sin, nn.Linear(width, dim, bias=False)),
        )
        fast, slow = math.log(1e-2) / 0.3, math.log(1e-2) / 1.5
        self.register_buffer("deltas", torch.linspace(slow, fast, dim)[None, None])  # δ

    def forward(self, length: int) -> Tensor:
        h = self.implicit_filter(self.z[:, :length]) * torch.exp(
            -self.t[:, :length] * self.deltas.abs()
        )
        return h[0].T


class Hyena(nn.Module):
    """u (B, T, D) -> (B, T, D): zoology's Hyena operator of order 2 (the module docstring)."""

    def __init__(self, dim: int, max_positions: int, filter_width: int = 64, short: int = 3):
        super().__init__()
        self.dim = dim
        self.in_proj = nn.Linear(dim, 3 * dim)
        self.short_filter = ShortConvolution(3 * dim, short, bias=True)
        self.filter_fn = HyenaFilter(dim, max_positions, filter_width)
        self.out_proj = nn.Linear(dim, dim)

    def forward(self, u: Tensor) -> Tensor:
        x1, x2, v = self.short_filter(self.in_proj(u)).transpose(1, 2).split(self.dim, dim=1)
        v = v * x1  # (B, D, T)
        y = causal_fft_conv(v, self.filter_fn(u.shape[1])) + self.filter_fn.bias[:, None] * v
        return self.out_proj((y * x2).transpose(1, 2))

    def step(self, u_t: Tensor, state: tuple[Tensor, Tensor] | None) -> tuple[Tensor, tuple]:
        """u_t (B, D), (the short filter's last inputs (B, m, 3D), every past v' (B, t, D))
        -> y_t (B, D), the new state."""
        recent, past = (None, None) if state is None else state
        p, recent = self.short_filter.step(self.in_proj(u_t), recent)
        x1, x2, v = p.split(self.dim, dim=-1)
        v = v * x1
        past = v[:, None] if past is None else torch.cat([past, v[:, None]], dim=1)
        k = self.filter_fn(past.shape[1]).flip(-1)  # k_{t-s} for s = 0..t  (D, t + 1)
        y = (past * k.T).sum(1) + self.filter_fn.bias * v
        return self.out_proj(y * x2), (recent, past)

    def state_size(self, length: int) -> int:
        return self.short_filter.state_size(length) + self.dim * length
