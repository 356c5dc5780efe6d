"""Hyena: gated long convolutions with implicitly parametrised filters (Poli et al. 2023, "Hyena
Hierarchy: Towards Larger Convolutional Language Models", arXiv 2302.10866, §3), the long
convolutions computed by FFT.

The operator of order N on u (B, T, D) (§3.1, Def. 3.1; §3.3, Algorithms 1-3):

    (v, x^1, ..., x^N) = ShortConv(W_in u + b_in)      N + 1 projections, a causal depthwise
                                                        convolution of `short_kernel` taps each
    z^1 = v;   z^{n+1}_t = x^n_t ⊙ ((h^n * z^n)_t + β^n ⊙ z^n_t),   n = 1..N
    y = W_out z^{N+1} + b_out

with the causal long convolution (h * z)_t = Σ_{s<=t} h_{t-s} z_s, by FFT
(models/kernels/fft_conv.py), and β^n the per-channel skip of the paper's code. The filters are
implicit (§3.2, eq. 7):

    h^n_t[d] = Window_d(t) · FFN(PE(t))[n, d],   Window_d(t) = exp(-α_d t)
    PE(t) = (cos ω_k t, sin ω_k t),  k = 1..K   (K = `pos_bands`)
    FFN = Linear(2K, W) -> Sin -> Linear(W, W) -> Sin -> Linear(W, W) -> Sin -> Linear(W, N D)

with Sin(a) = sin(f ⊙ a), f learned per unit (initialised to 1), W = `filter_width`, and α_d fixed
so that channel d's window falls to 1/100 after s_d steps, s_d spaced geometrically over the D
channels from `min_window` to `max_window`.

Where this departs from the paper's code (HazyResearch/safari, models/sequence/hyena.py): there
the positional features are (t / L, cos 2πk t / L, sin 2πk t / L) and the decay rates are set from
a maximum length L fixed at construction (windows reaching 1/100 between 0.3 L and 1.5 L), so a
filter is only defined for t < L and changes with L. Here time is counted in steps: the
frequencies ω_k are geometric from π/2 (a period of 4 steps) down to π / (2 `max_window`) (a
quarter period over the longest window), and the windows are set in steps, so the same filter is
defined at every length and a model trained at one length runs at another. The code's `order`
counts projections minus one with one long convolution fewer (order 2: one filter, gated on both
sides); `order` here is the paper's N, N filters.

Step form: z^n_t needs every z^n_s, s <= t, so the state holds the long convolutions' inputs
z^1..z^N of every past step (N D numbers per step, growing with the length as attention's cache
does) and the short convolution's last min(t, short_kernel - 1) projected inputs ((N + 1) D
each): N D t + (N + 1) D min(t, short_kernel - 1) numbers per layer after t steps.
"""

import math

import torch
from pydantic import PositiveInt
from torch import Tensor, nn
from torch.nn import functional as F

from longterm.models.kernels.fft_conv import causal_fft_conv
from longterm.models.stack import MixerStack

WINDOW_FLOOR = 0.01  # Window_d(s_d) = 1/100 (the paper's code's `target`)


class Sin(nn.Module):
    """a (..., W) -> sin(f ⊙ a), the filter FFN's periodic activation, f (W,) learned."""

    def __init__(self, width: int):
        super().__init__()
        self.freq = nn.Parameter(torch.ones(width))

    def forward(self, a: Tensor) -> Tensor:
        return torch.sin(self.freq * a)


class ImplicitFilter(nn.Module):
    """The N long filters of one operator, h^n_t[d] = Window_d(t) · FFN(PE(t))[n, d] (§3.2)."""

    def __init__(
        self, dim: int, order: int, width: int, bands: int, min_window: int, max_window: int
    ):
        super().__init__()
        self.order, self.dim = order, dim
        slowest = math.pi / (2 * max_window)
        omega = (math.pi / 2) * (slowest / (math.pi / 2)) ** torch.linspace(0, 1, bands)
        spans = torch.logspace(math.log10(min_window), math.log10(max_window), dim)
        # Derived from the keys, not learned (the paper's code keeps its decay rates fixed too).
        self.register_buffer("omega", omega, persistent=False)  # ω_k  (K,)
        self.register_buffer("alpha", -math.log(WINDOW_FLOOR) / spans, persistent=False)  # α_d
        self.ffn = nn.Sequential(
            nn.Linear(2 * bands, width),
            Sin(width),
            nn.Linear(width, width),
            Sin(width),
            nn.Linear(width, width),
            Sin(width),
            nn.Linear(width, order * dim, bias=False),
        )

    def forward(self, length: int) -> Tensor:
        """h^n_t for t = 0..length - 1:  -> (N, D, length)."""
        t = torch.arange(length, device=self.omega.device, dtype=self.omega.dtype)
        phase = t[:, None] * self.omega  # (T, K)
        h = self.ffn(torch.cat([phase.cos(), phase.sin()], dim=-1))  # (T, N D)
        window = torch.exp(-t[:, None] * self.alpha)  # (T, D)
        return (h.view(length, self.order, self.dim) * window[:, None]).permute(1, 2, 0)


class HyenaMixer(nn.Module):
    """u (B, T, D) -> y (B, T, D): the Hyena operator of order N (Def. 3.1)."""

    def __init__(
        self,
        dim: int,
        order: int,
        short_kernel: int,
        filter_width: int,
        pos_bands: int,
        min_window: int,
        max_window: int,
    ):
        super().__init__()
        if min_window > max_window:
            raise ValueError(f"min_window={min_window} must be <= max_window={max_window}")
        channels = (order + 1) * dim
        self.order, self.dim, self.short_kernel = order, dim, short_kernel
        self.in_proj = nn.Linear(dim, channels)
        # The short causal depthwise convolution: k - 1 zeros are padded before the first step.
        self.short = nn.Conv1d(channels, channels, short_kernel, groups=channels)
        self.filters = ImplicitFilter(dim, order, filter_width, pos_bands, min_window, max_window)
        self.beta = nn.Parameter(torch.randn(order, dim))  # β^n, the long convolutions' skip
        self.out_proj = nn.Linear(dim, dim)

    def forward(self, u: Tensor) -> Tensor:
        # Channels first, time last, up to the output projection: the short and the long
        # convolutions run along contiguous memory.
        p = F.pad(self.in_proj(u).transpose(1, 2), (self.short_kernel - 1, 0))
        v, *x = self.short(p).chunk(self.order + 1, dim=1)  # each (B, D, T)
        h = self.filters(u.shape[1])  # (N, D, T)
        z = v
        for n in range(self.order):
            z = x[n] * (causal_fft_conv(z, h[n]) + self.beta[n, :, None] * z)
        return self.out_proj(z.transpose(1, 2))

    def step(self, u_t: Tensor, state: dict[str, Tensor] | None) -> tuple[Tensor, dict]:
        """u_t (B, D); state `short` (B, min(t, k - 1), (N + 1) D), the short convolution's last
        inputs, and `inputs` (B, N, D, t), z^1..z^N of the t steps before (None: no steps)
        -> (y_t (B, D), the state after this step)."""
        p = self.in_proj(u_t)[:, None]  # (B, 1, (N + 1) D)
        recent = p if state is None else torch.cat([state["short"], p], dim=1)
        taps = self.short.weight[:, 0, self.short_kernel - recent.shape[1] :].T  # the last taps
        v, *x = ((recent * taps).sum(1) + self.short.bias).chunk(self.order + 1, dim=-1)
        past = (
            u_t.new_zeros(u_t.shape[0], self.order, self.dim, 0)
            if state is None
            else state["inputs"]
        )
        h = self.filters(past.shape[-1] + 1).flip(-1)  # h^n_{t-s} for s = 0..t  (N, D, t + 1)
        z, inputs = v, []
        for n in range(self.order):
            inputs.append(z)
            history = torch.cat([past[:, n], z[..., None]], dim=-1)  # z^n_0..z^n_t  (B, D, t + 1)
            z = x[n] * ((history * h[n]).sum(-1) + self.beta[n] * z)
        keep = max(0, recent.shape[1] - (self.short_kernel - 1))
        new = {
            "short": recent[:, keep:],
            "inputs": torch.cat([past, torch.stack(inputs, 1)[..., None]], -1),
        }
        return self.out_proj(z), new

    def state_size(self, length: int) -> int:
        """N D length + (N + 1) D min(length, short_kernel - 1) numbers after `length` steps."""
        short = (self.order + 1) * self.dim * min(length, self.short_kernel - 1)
        return self.order * self.dim * length + short


class Hyena(MixerStack):
    """x (B, T, F) -> h (B, T, D): `layers` pre-norm residual Hyena operators of order `order`
    (model=hyena)."""

    def __init__(
        self,
        in_features: int,
        dim: int,
        layers: PositiveInt = 2,
        order: PositiveInt = 2,
        short_kernel: PositiveInt = 3,
        filter_width: PositiveInt = 64,
        pos_bands: PositiveInt = 8,
        min_window: PositiveInt = 10,
        max_window: PositiveInt = 10_000,
        init: str = "paper",
    ):
        keys = (order, short_kernel, filter_width, pos_bands, min_window, max_window)

        def mixer() -> HyenaMixer:
            return HyenaMixer(dim, *keys)

        super().__init__(in_features, dim, layers, mixer, init)
