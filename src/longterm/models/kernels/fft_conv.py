"""The causal long convolution of S4D (§3.1) and Hyena (§3.1), by FFT:

    y_t = Σ_{s<=t} k_{t-s} u_s   per channel,   u (B, D, T), k (D, T) -> y (B, D, T)

computed as the circular convolution over n >= 2T - 1 points (no wrap-around reaches the first T
steps), y = irfft(rfft(u, n) · rfft(k, n), n)[:T]. Its gradients are the matching correlations,

    ∂L/∂u_s = Σ_t g_t k_{t-s} = irfft(rfft(g, n) · conj(rfft(k, n)), n)[:T]
    ∂L/∂k_l = Σ_b Σ_t g_t u_{t-l} = irfft(Σ_b rfft(g, n) · conj(rfft(u, n)), n)[:T]

Two choices make it 1.3 to 3 times as fast on the CPU as `irfft(rfft(u, 2T) * rfft(k, 2T))`
under autograd (bench/fft_conv.py measures both and checks they agree):
- n is the least even 2^a 3^b 5^c 7^d >= 2T (`fft_length`), not 2T: a transform whose length has
  a large prime factor is slow (at T0 = 100 the batches' width is 111, and over 2T = 222 =
  2 · 3 · 37 points the convolution takes about twice as long as over n = 224 = 2^5 · 7: the
  "length only" column of docs/performance_fft_conv.md).
- The backward pass is written out (`CausalFFTConv`): autograd takes the gradient of rfft(u, n)
  through a complex transform of all n points, twice the work of the real one used here, and
  sums ∂L/∂k over the batch after the inverse transform instead of before it.
The two agree with the autograd form to float rounding, not bit for bit.
"""

import torch
from torch import Tensor

SMOOTH_PRIMES = (2, 3, 5, 7)  # the radices of the FFT libraries' fast paths (MKL, pocketfft, cuFFT)


def fft_length(n: int) -> int:
    """The least even m >= n whose prime factors are all 2, 3, 5 or 7.

    Written here because the library that has it (scipy.fft.next_fast_len) is not otherwise a
    dependency; the search takes a few steps (the gaps between such numbers are small)."""
    m = max(n, 2)
    while True:
        if m % 2 == 0:
            rest = m
            for p in SMOOTH_PRIMES:
                while rest % p == 0:
                    rest //= p
            if rest == 1:
                return m
        m += 1


class CausalFFTConv(torch.autograd.Function):
    """y = causal convolution of u (B, D, T) with k (D, T), its backward pass written out."""

    @staticmethod
    def forward(ctx, u: Tensor, k: Tensor, n: int) -> Tensor:
        T = u.shape[-1]
        u_f, k_f = torch.fft.rfft(u, n=n), torch.fft.rfft(k, n=n)  # (B, D, n/2 + 1), (D, n/2 + 1)
        ctx.save_for_backward(u_f, k_f)
        ctx.n, ctx.T = n, T
        return torch.fft.irfft(u_f * k_f, n=n)[..., :T]

    @staticmethod
    def backward(ctx, g: Tensor) -> tuple[Tensor | None, Tensor | None, None]:
        u_f, k_f = ctx.saved_tensors
        n, T = ctx.n, ctx.T
        g_f = torch.fft.rfft(g, n=n)
        grad_u = grad_k = None
        if ctx.needs_input_grad[0]:
            grad_u = torch.fft.irfft(g_f * k_f.conj(), n=n)[..., :T]
        if ctx.needs_input_grad[1]:
            grad_k = torch.fft.irfft((g_f * u_f.conj()).sum(0), n=n)[..., :T]
        return grad_u, grad_k, None


def causal_fft_conv(u: Tensor, k: Tensor, n: int | None = None) -> Tensor:
    """y_t = Σ_{s<=t} k_{t-s} u_s per channel:  u (B, D, T), k (D, T) -> y (B, D, T), over n
    points (default `fft_length(2T)`; n >= 2T - 1). Time is the last dimension: transforms
    along contiguous memory (about 1.4x faster on the CPU than along the middle dimension of
    (B, T, D))."""
    T = u.shape[-1]
    n = fft_length(2 * T) if n is None else n
    if n < 2 * T - 1:
        raise ValueError(f"n={n} points would wrap the convolution around: it needs n >= 2T - 1")
    return CausalFFTConv.apply(u, k, n)
