"""BaseConv: a gated convolution, the simplest of zoology's recall models (Arora et al. 2023,
"Zoology: Measuring and Improving Recall in Efficient Language Models", arXiv 2312.04927, §4 and
Appendix; HazyResearch/zoology, zoology/mixers/base_conv.py and convolution.py). Per layer, on
u (B, T, D):

    y = conv(u) ⊙ (W u + b) + u                     (B, T, D)

where conv is, by the layer's entry of `kernels`:
- k > 0: a short causal depthwise convolution of k taps with a bias (models/short_conv.py);
- -1: an implicit long convolution over every past step, k_t = MLP(PE(t)) per channel, then
  (k * u)_t + u_t (zoology's fft_conv adds its input), by FFT (models/kernels/fft_conv.py), with
      PE(t) = (t / (L - 1), cos(2π f t / L), -sin(2π f t / L)),  f = 1e-4,  t = 0..L - 1,
      MLP = Linear(3, 16) -> ReLU -> Linear(16, D),
  L = `max_positions` (zoology's l_max). PE is a parameter zoology does not train
  (requires_grad False) and counts among the parameters; the filter is defined for t < L only
(models/bounded.py).

`model=base_conv` runs these mixers on the framework's pre-norm residual stack (models/stack.py);
`arch=zoology_base_conv` in zoology's own block (models/zoology.py).

Step form: a short convolution carries its last min(t, k - 1) inputs (D each), a long one every
past input (D per step, growing with the length as attention's cache): after t steps,
D min(t, k - 1) or D t numbers per layer.
"""

import math

import torch
from pydantic import PositiveInt
from torch import Tensor, nn

from longterm.models.bounded import within
from longterm.models.kernels.fft_conv import causal_fft_conv
from longterm.models.short_conv import ShortConvolution
from longterm.models.stack import MixerStack

LONG = -1  # an entry of `kernels`: the implicit long convolution


def implicit_positions(length: int, emb_dim: int = 3) -> Tensor:
    """zoology's PositionalEmbedding (mixers/convolution.py, mixers/hyena.py): (t / (L - 1),
    Re and Im of exp(-i f_k 2π t / L)) for t = 0..L - 1, f_k = linspace(1e-4, K - 1, K) with
    K = (emb_dim - 1) // 2 bands:  -> (1, L, emb_dim), in float32 as zoology makes it."""
    bands = (emb_dim - 1) // 2
    t = torch.linspace(0, 1, length)[None, :, None]
    w = 2 * math.pi * torch.linspace(0, length - 1, length)[None, :, None] / length
    z = torch.exp(-1j * torch.linspace(1e-4, bands - 1, bands)[None, None] * w)
    return torch.cat([t, z.real, z.imag], dim=-1)


class ImplicitLongConv(nn.Module):
    """u (B, T, D) -> (k * u) + u (B, T, D), k (D, T) from an MLP of positions (the module
    docstring); T <= max_positions."""

    def __init__(self, dim: int, max_positions: int, d_emb: int = 3, d_hidden: int = 16):
        super().__init__()
        self.z = nn.Parameter(implicit_positions(max_positions, d_emb), requires_grad=False)
        self.mlp = nn.Sequential(nn.Linear(d_emb, d_hidden), nn.ReLU(), nn.Linear(d_hidden, dim))

    def filter(self, length: int) -> Tensor:
        """k_t for t = 0..length - 1:  -> (D, length)."""
        return self.mlp(self.z[0, :length]).T

    def forward(self, u: Tensor) -> Tensor:
        k = self.filter(u.shape[1])
        return (causal_fft_conv(u.transpose(1, 2), k) + u.transpose(1, 2)).transpose(1, 2)

    def step(self, u_t: Tensor, past: Tensor | None) -> tuple[Tensor, Tensor]:
        """u_t (B, D), the inputs before it (B, t, D) -> y_t (B, D), the inputs up to t."""
        past = u_t[:, None] if past is None else torch.cat([past, u_t[:, None]], dim=1)
        k = self.filter(past.shape[1]).flip(-1)  # k_{t-s} for s = 0..t  (D, t + 1)
        return (past * k.T).sum(1) + u_t, past

    def state_size(self, length: int) -> int:
        return self.mlp[-1].out_features * length


class BaseConvMixer(nn.Module):
    """u (B, T, D) -> conv(u) ⊙ (W u + b) + u (B, T, D): one BaseConv layer, its convolution
    short (`kernel` taps) or implicit and long (`kernel` = -1)."""

    def __init__(self, dim: int, kernel: int, max_positions: int):
        super().__init__()
        if kernel != LONG and kernel < 1:
            raise ValueError(f"kernels: {kernel} is invalid: a width >= 1, or -1 (long)")
        self.projection = nn.Linear(dim, dim)
        self.conv = (
            ImplicitLongConv(dim, max_positions)
            if kernel == LONG
            else ShortConvolution(dim, kernel, bias=True)
        )

    def forward(self, u: Tensor) -> Tensor:
        return self.conv(u) * self.projection(u) + u

    def step(self, u_t: Tensor, state: Tensor | None) -> tuple[Tensor, Tensor]:
        """u_t (B, D), the convolution's state -> y_t (B, D), its new state."""
        y, state = self.conv.step(u_t, state)
        return y * self.projection(u_t) + u_t, state

    def state_size(self, length: int) -> int:
        return self.conv.state_size(length)


class BaseConv(MixerStack):
    """x (B, T, F) -> h (B, T, D): a BaseConv layer per entry of `kernels` (k > 0: a short
    convolution of k taps; -1: the implicit long convolution) on the pre-norm residual stack
    (model=base_conv). T <= max_positions where a layer is long."""

    def __init__(
        self,
        in_features: int,
        dim: int,
        kernels: list[int] = [3, -1],  # noqa: B006  read, never changed
        max_positions: PositiveInt = 1024,
        init: str = "paper",
    ):
        if not kernels:
            raise ValueError("kernels=[] is invalid: give one entry per layer")
        entries = iter(kernels)

        def mixer() -> BaseConvMixer:
            return BaseConvMixer(dim, next(entries), max_positions)

        super().__init__(in_features, dim, len(kernels), mixer, init)
        self.max_positions = max_positions if LONG in kernels else None

    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        return within(super().forward, x, mask, self.max_positions)
