"""The recurrent baselines, the linear memory's scan, the last-state readout and padding."""

import numpy as np
import pytest
import torch

from longterm.config.builtins import encoder_of, generator_of
from longterm.models import sequence_model
from longterm.models.linear_memory import linear_scan
from longterm.models.readouts import AttentionPooling, LastStep, MeanPooling
from longterm.tasks import generate


def n_params(model: torch.nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def model(name: str, in_features: int, out_features: int, readout, dim: int = 100, **kw):
    """Model `name` of width D = 100 unless given, the reference implementation."""
    return sequence_model(
        encoder_of(name), in_features, out_features, readout, dim, name=name, **kw
    )


HEAD = 100 * 100 + 100 + 100 * 4 + 4  # the paper's head, D = hidden = 100, 4 outputs


def test_parameter_counts():
    F, D = 8, 100
    assert n_params(model("rnn", F, 4, LastStep(D))) == D * (F + D + 2) + HEAD
    assert n_params(model("lstm", F, 4, LastStep(D))) == 4 * D * (F + D + 2) + HEAD
    assert n_params(model("linear_memory", F, 4, LastStep(D))) == D * (F + 2) + HEAD
    assert n_params(model("lstm", F, 4, AttentionPooling(D))) == 4 * D * (F + D + 2) + HEAD + D + 1


@pytest.mark.parametrize("T", [1, 63, 64, 65, 200])
def test_linear_scan_equals_the_recurrence(T):
    torch.manual_seed(0)
    u = torch.randn(3, T, 5, dtype=torch.float64)
    lam = torch.rand(5, dtype=torch.float64)
    h, expected = torch.zeros(3, 5, dtype=torch.float64), []
    for t in range(T):
        h = lam * h + u[:, t]
        expected.append(h)
    torch.testing.assert_close(linear_scan(u, lam.log()), torch.stack(expected, 1))


def test_linear_memory_learns_its_decays():
    torch.manual_seed(0)
    net = model("linear_memory", 2, 1, LastStep(16), dim=16, hidden=8)
    lam = net.encoder.lam
    assert lam.min() >= 0.9 and lam.max() <= 0.999
    net(torch.randn(4, 30, 2)).sum().backward()
    assert net.encoder.nu.grad is not None and net.encoder.nu.grad.abs().sum() > 0


def test_last_step_reads_the_last_real_step():
    h = torch.arange(2 * 5, dtype=torch.float32).reshape(2, 5, 1)
    mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], dtype=torch.bool)
    assert LastStep(1)(h, mask).flatten().tolist() == [2.0, 9.0]
    assert LastStep(1, mask_padding=False)(h, mask).flatten().tolist() == [4.0, 9.0]


RECURRENT = ("rnn", "lstm", "linear_memory")


@pytest.mark.parametrize("name", RECURRENT)
@pytest.mark.parametrize("readout", [LastStep, AttentionPooling, MeanPooling])
def test_padding_never_changes_the_output(name, readout):
    """Real steps then any padding: the output equals that of the unpadded sequence."""
    torch.manual_seed(0)
    net = model(name, 8, 4, readout(100, mask_padding=True))
    x, _, mask = generate(generator_of("temporal_order"), np.random.RandomState(0), 30, 6)
    x, mask = torch.from_numpy(x).float(), torch.from_numpy(mask)
    padded = torch.cat([x, torch.randn(6, 9, 8)], dim=1)  # garbage on 9 more padded steps
    padded_mask = torch.cat([mask, torch.zeros(6, 9, dtype=torch.bool)], dim=1)
    x = x * mask[..., None]
    torch.testing.assert_close(net(padded, padded_mask), net(x, mask))
    one = [net(x[i : i + 1, : int(mask[i].sum())]) for i in range(6)]  # each alone, no padding
    torch.testing.assert_close(torch.cat(one), net(x, mask))


def swap_relevant_symbols(x: torch.Tensor) -> torch.Tensor:
    """XY <-> YX: exchange the steps of the two relevant symbols (a permutation of steps)."""
    steps = (x[:, :, 6:].sum(-1) > 0).nonzero()[:, 1].reshape(-1, 2)
    swapped = x.clone()
    rows = torch.arange(len(x))
    swapped[rows, steps[:, 0]], swapped[rows, steps[:, 1]] = (
        x[rows, steps[:, 1]],
        x[rows, steps[:, 0]],
    )
    return swapped


def xy_and_yx(T0: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Temporal-order sequences of classes XY and YX, the same with the symbols swapped, mask."""
    X, y, mask = generate(generator_of("temporal_order"), np.random.RandomState(0), T0, 400)
    keep = (y == 1) | (y == 2)
    x, mask = torch.from_numpy(X[keep]).float(), torch.from_numpy(mask[keep])
    swapped = swap_relevant_symbols(x)
    assert not torch.equal(swapped, x)
    return x, swapped, mask


@pytest.mark.parametrize("pool", [AttentionPooling, MeanPooling])
@pytest.mark.parametrize("mask_padding", [False, True])
def test_pooling_gives_identical_outputs_for_xy_and_yx(pool, mask_padding):
    x, swapped, mask = xy_and_yx(100)
    torch.manual_seed(0)
    net = model("feedforward", 8, 4, pool(100, mask_padding=mask_padding), impl="fused")
    torch.testing.assert_close(net(swapped, mask), net(x, mask))


@pytest.mark.parametrize("name", RECURRENT)
def test_recurrent_models_tell_xy_from_yx(name):
    x, swapped, mask = xy_and_yx(20)  # short: an untrained model's memory fades within ~50 steps
    torch.manual_seed(0)
    net = model(name, 8, 4, LastStep(100))
    assert (net(swapped, mask) - net(x, mask)).abs().max() > 1e-4
