"""The short causal convolution of today's linear-attention layers: a depthwise convolution of k
taps along time on each channel of a projection, as flash-linear-attention's `ShortConvolution`
(fla/modules/convolution.py) puts on q, k and v in its DeltaNet and GLA layers (`use_short_conv`,
`conv_size` k = 4), after Yang, Wang, Zhang, Shen & Kim 2024 ("Parallelizing Linear Transformers
with the Delta Rule over Sequence Length", arXiv 2406.06484), whose DeltaNet layer convolves q, k
and v right after their linear projections.

Per channel c, with taps w_c (k,) and x_s = 0 before the first step (s < 0):

    y_t[c] = sum_{j=0}^{k-1} w_c[j] x_{t-k+1+j}[c]  (+ b_c)

fla's layers build it without a bias (`conv_bias=False`) and with a SiLU after it (its
`activation='silu'`); the layers here apply the SiLU themselves (models/gla.py,
models/deltanet.py), so this module is the convolution alone, bias or not.

Step form: y_t needs the last k - 1 inputs before x_t, so the state holds them, min(t, k - 1)
after t steps (the zeros before the first step are constants, not state): C min(t, k - 1)
numbers for C channels. fla's cache holds k inputs (x_t among them); the one beyond k - 1 is the
input of the step being taken, not a number carried to the next.

`QKVConvolutions` is the three of fla's layers, one on each of q, k and v.
"""

import torch
from torch import Tensor, nn
from torch.nn import functional as F


class ShortConvolution(nn.Conv1d):
    """x (B, T, C) -> y (B, T, C): the causal depthwise convolution of `kernel` taps per channel
    (the module docstring); PyTorch's Conv1d initialisation, as fla's."""

    def __init__(self, channels: int, kernel: int, bias: bool = False):
        super().__init__(channels, channels, kernel, groups=channels, bias=bias)

    @property
    def kernel(self) -> int:
        return self.kernel_size[0]

    def forward(self, x: Tensor) -> Tensor:
        x = F.pad(x.transpose(1, 2), (self.kernel - 1, 0))  # k - 1 zeros before the first step
        return super().forward(x).transpose(1, 2)

    def step(self, x_t: Tensor, recent: Tensor | None) -> tuple[Tensor, Tensor]:
        """x_t (B, C), the last inputs before it (B, min(t, k - 1), C) or None before the first
        step -> y_t (B, C), the last min(t + 1, k - 1) inputs."""
        window = x_t[:, None] if recent is None else torch.cat([recent, x_t[:, None]], dim=1)
        taps = self.weight[:, 0, self.kernel - window.shape[1] :].T  # the last taps: (m + 1, C)
        y = (window * taps).sum(1)
        if self.bias is not None:
            y = y + self.bias
        return y, window[:, max(0, window.shape[1] - (self.kernel - 1)) :]

    def state_size(self, length: int) -> int:
        """C min(length, k - 1) numbers after `length` steps."""
        return self.in_channels * min(length, self.kernel - 1)


Recent = tuple[Tensor, Tensor, Tensor] | None  # q's, k's and v's last inputs (B, m, .), or None


class QKVConvolutions(nn.Module):
    """(q, k, v) (B, T, .) each -> the three convolved: fla's q_conv1d, k_conv1d and v_conv1d,
    `kernel` taps, no bias, of widths `widths` (q's, k's, v's)."""

    def __init__(self, widths: tuple[int, int, int], kernel: int):
        super().__init__()
        self.q, self.k, self.v = (ShortConvolution(width, kernel) for width in widths)

    def forward(self, qkv: tuple[Tensor, Tensor, Tensor]) -> tuple[Tensor, Tensor, Tensor]:
        q, k, v = qkv
        return self.q(q), self.k(k), self.v(v)

    def step(
        self, qkv: tuple[Tensor, Tensor, Tensor], recent: Recent
    ) -> tuple[tuple[Tensor, Tensor, Tensor], Recent]:
        """(q_t, k_t, v_t) (B, .) each, their last inputs (or None) -> the convolved, the new
        last inputs."""
        convs = (self.q, self.k, self.v)
        recent = recent or (None, None, None)
        out = [conv.step(x, r) for conv, x, r in zip(convs, qkv, recent, strict=True)]
        return tuple(y for y, _ in out), tuple(r for _, r in out)

    def state_size(self, length: int) -> int:
        return sum(conv.state_size(length) for conv in (self.q, self.k, self.v))
