"""The contract of the step form (docs/plugins.md, "Step form and state size";
models/state.py), part of the contract check (contract/encoder.py, contract/readout.py): an
encoder or a readout that offers `step` and `state_size` must compute, step by step, what its
training form computes, and carry the state it declares.

    check_step_form(report, module, x, training_form)

On a copy of the module in float64 with normal noise added to every parameter (weights that no
initialisation gives), over x (B, STEP_LENGTH, ...) of random values: the outputs of `step`,
run in pieces that end at STEP_CUTS (each continuing from the state the last left), equal
`training_form(copy, x)`; and the numbers in the state after each piece (state_numbers) equal
`state_size` of its length. STEP_LENGTH crosses two chunks of 64 steps and the built-in attention
spans; an encoder defined for fewer steps (`max_positions`, models/bounded.py) is run over that
many, the cuts beyond left out. A module with no step form is reported as such, which is not a
failure.
"""

import copy
from collections.abc import Callable

import torch
from torch import Tensor, nn

from longterm.contract.report import Report
from longterm.models.state import has_step_form, run_steps, state_numbers

STEP_LENGTH = 160  # three chunks of 64 steps, two spans of 64 and more
STEP_CUTS = (1, 40, STEP_LENGTH)  # the state measured after these steps: below and above a span
NOISE = 0.1  # std of the normal noise added to every parameter
RTOL, ATOL = 1e-9, 1e-10  # float64: two orders of summation, never two functions


def randomised(module: nn.Module, seed: int) -> nn.Module:
    """A float64 copy of `module` in eval mode, every parameter moved by N(0, NOISE^2) noise."""
    module = copy.deepcopy(module).double().eval()
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.add_(torch.randn(p.shape, generator=g, dtype=p.dtype) * NOISE)
    return module


def cuts(length: int) -> tuple[int, ...]:
    """STEP_CUTS below `length`, then `length`."""
    return (*(c for c in STEP_CUTS if c < length), length)


def stepped(module: nn.Module, x: Tensor) -> tuple[Tensor, dict[int, int]]:
    """The step form over x (B, T, ...) in pieces ending at cuts(T): its outputs (B, T, ...)
    and the numbers its state holds after each piece."""
    outputs, sizes, state, start = [], {}, None, 0
    for cut in cuts(x.shape[1]):
        y, state = run_steps(module, x[:, start:cut], state)
        outputs.append(y)
        sizes[cut] = state_numbers(state)
        start = cut
    return torch.cat(outputs, dim=1), sizes


def check_step_form(
    report: Report,
    module: nn.Module,
    x: Tensor,
    training_form: Callable[[nn.Module, Tensor], Tensor],
    seed: int = 0,
) -> None:
    """Two checks on a module with the step form, or a fact on one without: over x (B,
    STEP_LENGTH, ...) float64, `step` gives `training_form(module, x)`; `state_size(t)` is
    what its state holds after t steps, t in STEP_CUTS."""
    missing = [name for name in ("step", "state_size") if not callable(getattr(module, name, None))]
    if not has_step_form(module):
        report.facts["step form"] = (
            f"none ({' and '.join(missing)} not defined): two forms and state size not checked"
        )
        return
    net = randomised(module, seed)
    try:
        with torch.no_grad():
            expected = training_form(net, x)
            got, sizes = stepped(net, x)
    except Exception as e:
        report.add(False, f"step form runs over x {tuple(x.shape)}: {type(e).__name__}: {e}")
        return
    if got.shape != expected.shape:
        shapes = f"{tuple(got.shape)} where the training form gives {tuple(expected.shape)}"
        report.add(False, f"step form over x {tuple(x.shape)}: outputs {shapes}")
        return
    gap = (got - expected).abs().max().item()
    report.add(
        torch.allclose(got, expected, RTOL, ATOL),
        f"step form equals training form: x {tuple(x.shape)} float64, random weights, in "
        f"pieces to steps {', '.join(map(str, sizes))} (max |difference| {gap:.1e})",
    )
    declared = {t: module.state_size(t) for t in sizes}
    report.add(
        declared == sizes,
        f"state_size is the step form's state, measured (after {', '.join(map(str, sizes))} "
        f"steps: declared {', '.join(map(str, declared.values()))}"
        + ("" if declared == sizes else f", carried {', '.join(map(str, sizes.values()))}")
        + ")",
    )


def random_sequence(width: int, seed: int) -> Tensor:
    """x (4, STEP_LENGTH, width) float64, standard normal: inputs, or a readout's states."""
    g = torch.Generator().manual_seed(seed)
    return torch.randn(4, STEP_LENGTH, width, generator=g, dtype=torch.float64)


def check_encoder_steps(report: Report, enc: nn.Module, in_features: int, seed: int = 0) -> None:
    """An encoder's step form: h_t = enc(x)[:, t], over at most its `max_positions` steps."""
    x = random_sequence(in_features, seed)[:, : getattr(enc, "max_positions", None)]
    check_step_form(report, enc, x, lambda e, x: e(x), seed)


def check_readout_steps(report: Report, readout: nn.Module, dim: int, seed: int = 0) -> None:
    """A readout's step form: c_t = readout(h[:, :t + 1]), or readout(h)[:, t] per step."""
    check_step_form(report, readout, random_sequence(dim, seed), readout_form, seed)


def readout_form(readout: nn.Module, h: Tensor) -> Tensor:
    """What the step form of `readout` must give at every step of h (B, T, D): (B, T, D)."""
    if readout.per_step:
        return readout(h)
    return torch.stack([readout(h[:, : t + 1]) for t in range(h.shape[1])], dim=1)
