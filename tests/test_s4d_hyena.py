"""S4D and Hyena (models/s4d.py, models/hyena.py): the convolutional training form equals the step
form in float64 on random weights, the declared state size is the measured one, causality,
the kernels against their definitions, parameter counts, and no loop over time on an
accelerator (ops per update on the meta device)."""

import math

import pytest
import torch
from helpers.configs import composed

from longterm.models.hyena import Hyena, ImplicitFilter
from longterm.models.ops import meta_batch, update_ops
from longterm.models.s4d import S4D, S4DMixer, vandermonde_kernel
from longterm.models.state import state_numbers
from longterm.tasks import default_width
from longterm.training.parts import build_model

pytestmark = pytest.mark.usefixtures("one_thread")  # small tensors (conftest.py)


SMALL = {
    "s4d-lin": (S4D, dict(layers=2, d_state=6, a_init="lin")),
    "s4d-inv": (S4D, dict(layers=2, d_state=4, a_init="inv")),
    "hyena": (Hyena, dict(layers=2, order=2, short_kernel=3, filter_width=8, pos_bands=3)),
    "hyena-order3": (Hyena, dict(layers=1, order=3, short_kernel=4, filter_width=6, pos_bands=2)),
    "hyena-k1": (Hyena, dict(layers=1, order=1, short_kernel=1, filter_width=6, pos_bands=1)),
}


def random_model(name: str, in_features: int = 3, dim: int = 8) -> torch.nn.Module:
    """The model in float64 with every parameter moved off its initialisation at random."""
    cls, keys = SMALL[name]
    model = cls(in_features, dim, **keys).double()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.3 * torch.randn_like(p))
    return model


def stepped(model: torch.nn.Module, x: torch.Tensor) -> tuple[torch.Tensor, list[int]]:
    """The step form over x (B, T, F): h (B, T, D) and the state's numbers after each step."""
    state, outputs, sizes = None, [], []
    for t in range(x.shape[1]):
        h_t, state = model.step(x[:, t], state)
        outputs.append(h_t)
        sizes.append(state_numbers(state))
    return torch.stack(outputs, dim=1), sizes


@pytest.mark.parametrize("name", SMALL)
def test_the_two_forms_are_equal_and_the_state_is_what_is_declared(name):
    """T = 40 crosses seven blocks of S4D's factored kernel (b = 7) and every filter lag."""
    torch.manual_seed(0)
    model = random_model(name)
    x = torch.randn(2, 40, 3, dtype=torch.float64)
    with torch.no_grad():
        h, (h_steps, sizes) = model(x), stepped(model, x)
    torch.testing.assert_close(h_steps, h, rtol=1e-10, atol=1e-10)
    assert sizes == [model.state_size(t) for t in range(1, 41)]
    assert model.state_size(0) == 0


@pytest.mark.parametrize("D, N, L", [(64, 64, 2), (64, 64, 1), (8, 6, 3)])
def test_the_declared_state_sizes_follow_the_formulas(D, N, L):
    """S4D: L D N whatever the length; Hyena: L (order D t + (order + 1) D min(t, k - 1))."""
    s4d = S4D(3, D, layers=L, d_state=N)
    hyena = Hyena(3, D, layers=L, order=2, short_kernel=3)
    for t in (1, 2, 100, 10_000):
        assert s4d.state_size(t) == L * D * N
        assert hyena.state_size(t) == L * (2 * D * t + 3 * D * min(t, 2))


@pytest.mark.parametrize("name", ["s4d-lin", "hyena"])
def test_steps_after_t_do_not_change_states_up_to_t(name):
    """Padding (anything) after the real steps leaves the real steps' states as they were."""
    torch.manual_seed(1)
    model = random_model(name)
    x = torch.randn(2, 30, 3, dtype=torch.float64)
    padded = x.clone()
    padded[:, 17:] = 100 * torch.randn(2, 13, 3, dtype=torch.float64)
    with torch.no_grad():
        h, h_padded = model(x), model(padded)
    torch.testing.assert_close(h_padded[:, :17], h[:, :17], rtol=1e-12, atol=1e-12)
    assert not torch.allclose(h_padded[:, 17], h[:, 17])


@pytest.mark.parametrize("length", [1, 2, 37, 49, 50])
def test_the_factored_kernel_is_the_vandermonde_product(length):
    """K_l = 2 Re Σ_n CB_n exp(l ΔA_n), written as the sum over l it is, against the factored
    matrix product, for lengths that are and are not whole blocks."""
    torch.manual_seed(2)
    CB = torch.randn(5, 3, dtype=torch.complex128)
    dtA = torch.complex(-torch.rand(5, 3, dtype=torch.float64), torch.randn(5, 3).double())
    naive = torch.stack([2 * (CB * torch.exp(lag * dtA)).sum(-1).real for lag in range(length)], -1)
    torch.testing.assert_close(vandermonde_kernel(CB, dtA, length), naive)


def test_the_initialisations_of_a():
    """S4D-Lin A_n = -1/2 + iπn, S4D-Inv A_n = -1/2 + i (N/π)(N/(2n + 1) - 1), every channel."""
    for a_init, N in (("lin", 8), ("inv", 8), ("inv", 64)):
        mixer = S4DMixer(4, N, a_init)
        n = torch.arange(N // 2, dtype=torch.float64)
        imag = math.pi * n if a_init == "lin" else N / math.pi * (N / (2 * n + 1) - 1)
        torch.testing.assert_close(
            -torch.exp(mixer.log_neg_a_real.double()),
            torch.full((4, N // 2), -0.5, dtype=torch.float64),
        )
        torch.testing.assert_close(mixer.a_imag.double(), imag.expand(4, -1), rtol=1e-6, atol=1e-5)
        assert ((mixer.log_dt.exp() >= 0.001) & (mixer.log_dt.exp() <= 0.1)).all()


def test_hyena_filters_do_not_depend_on_the_length_they_are_drawn_at():
    """The filter over T steps is the first T steps of the filter over any longer length, so a
    model trained at one length runs the same filters at another; windows fall to 1/100 at the
    first and last channel's span."""
    filters = ImplicitFilter(dim=5, order=2, width=8, bands=4, min_window=10, max_window=1000)
    torch.testing.assert_close(filters(50), filters(777)[..., :50])
    window = torch.exp(-filters.alpha[:, None] * torch.tensor([10.0, 1000.0]))
    torch.testing.assert_close(window[[0, -1], [0, 1]], torch.tensor([0.01, 0.01]))


def n_params(model: torch.nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("F, D, N, L", [(2, 64, 64, 2), (3, 8, 6, 3)])
def test_the_s4d_parameter_count(F, D, N, L):
    """F D + D, per layer 2D² + 2DN + 4D and its LayerNorm 2D, the final LayerNorm 2D."""
    assert (
        n_params(S4D(F, D, layers=L, d_state=N))
        == F * D + D + L * (2 * D**2 + 2 * D * N + 6 * D) + 2 * D
    )


@pytest.mark.parametrize(
    "F, D, order, k, W, K, L", [(2, 64, 2, 3, 64, 8, 2), (3, 8, 3, 4, 6, 2, 1)]
)
def test_the_hyena_parameter_count(F, D, order, k, W, K, L):
    """Per layer: projections (N + 1)(D² + D), the short convolution (N + 1) D (k + 1), the filter
    FFN 2K W + W + 2(W² + W) + 3W (frequencies) + W N D, β N D, the output D² + D, LayerNorm 2D."""
    model = Hyena(F, D, layers=L, order=order, short_kernel=k, filter_width=W, pos_bands=K)
    per_layer = (order + 1) * (D**2 + D) + (order + 1) * D * (k + 1)
    per_layer += 2 * K * W + W + 2 * (W**2 + W) + 3 * W + W * order * D + order * D + D**2 + D
    assert n_params(model) == F * D + D + L * (per_layer + 2 * D) + 2 * D


@pytest.mark.parametrize("model", ["s4d", "hyena"])
def test_no_loop_over_time_on_an_accelerator(model):
    """The same number of aten ops per update at T0 = 1000 and 10000, counted on the meta device
    as tests/test_ops.py counts them, for the model src/train.py builds (which T0 leaves as it
    is: one build, two batch widths)."""
    cfg = composed(f"model={model}")
    net = build_model(cfg)
    counts = [
        update_ops(net, meta_batch(100, default_width(T0), cfg.task.n_features))
        for T0 in (1000, 10_000)
    ]
    assert counts[0] == counts[1]
