"""The causal FFT convolution of S4D and Hyena (models/kernels/fft_conv.py): the transform length,
the convolution against its sum, and the written-out backward pass against autograd's gradients."""

import pytest
import torch

from longterm.models.kernels.fft_conv import causal_fft_conv, fft_length

pytestmark = pytest.mark.usefixtures("one_thread")  # small tensors (conftest.py)


def seven_smooth(m: int) -> bool:
    """m has no prime factor above 7 (trial division by every prime up to m)."""
    primes = [p for p in range(2, m + 1) if all(p % q for q in range(2, p))]
    return all(m % p or p <= 7 for p in primes)


def test_the_length_is_the_least_even_seven_smooth_number_at_or_above():
    smooth = [m for m in range(2, 1200) if m % 2 == 0 and seven_smooth(m)]
    for n in range(1, 1100):
        assert fft_length(n) == next(m for m in smooth if m >= n)
    assert [fft_length(2 * T) for T in (56, 111, 1100, 11000)] == [112, 224, 2240, 22050]


def direct(u: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """y_t = Σ_{s<=t} k_{t-s} u_s written as the sum it is: u (B, D, T), k (D, T)."""
    T = u.shape[-1]
    return torch.stack([(k[:, : t + 1].flip(-1) * u[..., : t + 1]).sum(-1) for t in range(T)], -1)


@pytest.mark.parametrize("T, n", [(1, None), (2, None), (37, None), (50, None), (37, 73), (20, 64)])
def test_the_convolution_and_its_gradients_are_the_sums_they_stand_for(T, n):
    """Float64, at the default length and at others (the least n that avoids wrap-around, 2T - 1,
    and a larger one): the output and both gradients equal the direct sum's under autograd."""
    torch.manual_seed(0)
    u = torch.randn(3, 4, T, dtype=torch.float64, requires_grad=True)
    k = torch.randn(4, T, dtype=torch.float64, requires_grad=True)
    g = torch.randn(3, 4, T, dtype=torch.float64)
    y = causal_fft_conv(u, k, n)
    grads = torch.autograd.grad(y, (u, k), g)
    y_sum = direct(u, k)
    grads_sum = torch.autograd.grad(y_sum, (u, k), g)
    torch.testing.assert_close(y, y_sum)
    for a, b in zip(grads, grads_sum, strict=True):
        torch.testing.assert_close(a, b)


def test_one_input_without_a_gradient():
    """A filter that is not learned (k without grad) or an input that is not: the other's gradient
    alone, the same as with both."""
    torch.manual_seed(1)
    u = torch.randn(2, 3, 9, dtype=torch.float64, requires_grad=True)
    k = torch.randn(3, 9, dtype=torch.float64, requires_grad=True)
    both = torch.autograd.grad(causal_fft_conv(u, k).sum(), (u, k))
    (only_u,) = torch.autograd.grad(causal_fft_conv(u, k.detach()).sum(), (u,))
    (only_k,) = torch.autograd.grad(causal_fft_conv(u.detach(), k).sum(), (k,))
    torch.testing.assert_close(only_u, both[0])
    torch.testing.assert_close(only_k, both[1])


def test_too_few_points_is_refused():
    with pytest.raises(ValueError, match="n >= 2T - 1"):
        causal_fft_conv(torch.zeros(1, 1, 10), torch.zeros(1, 10), n=18)
