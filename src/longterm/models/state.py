"""The step form of a model and the state it carries (docs/plugins.md, "Step form and state size").

An encoder or a readout that can run one step at a time offers, beside `forward` (its training
form: parallel, chunked or convolutional over the whole sequence),

    step(x_t, state) -> (y_t, state)   x_t (B, F) or h_t (B, D); state None before the first step
    state_size(length) -> int          numbers carried per sequence after `length` steps

A state is a tensor or a tuple, list or dict of them (nested), each with the batch as its first
dimension; a complex element counts as two numbers, and what is not a tensor (a step counter)
is not counted. `state_numbers` measures it; `run_steps` runs a step form over a sequence, so a
test can hold the two forms equal and the declared size equal to the measured one.
"""

from typing import Any

import torch
from torch import Tensor, nn


def state_numbers(state: Any) -> int:
    """Numbers per sequence in `state`: the tensors' elements (complex ones twice) over the
    batch, their first dimension. All tensors of one state share that batch."""
    leaves = list(_tensors(state))
    if not leaves:
        return 0
    batch = leaves[0].shape[0]
    total = sum(t.numel() * (2 if t.is_complex() else 1) for t in leaves)
    return total // batch


def _tensors(state: Any):
    if isinstance(state, Tensor):
        yield state
    elif isinstance(state, dict):
        for value in state.values():
            yield from _tensors(value)
    elif isinstance(state, (tuple, list)):
        for value in state:
            yield from _tensors(value)


def has_step_form(module: nn.Module) -> bool:
    """Whether `module` offers both `step` and `state_size`."""
    return callable(getattr(module, "step", None)) and callable(getattr(module, "state_size", None))


def run_steps(module: nn.Module, x: Tensor, state: Any = None) -> tuple[Tensor, Any]:
    """The step form over a sequence: x (B, T, F) -> y (B, T, D) stacked from T calls of
    `module.step`, and the state after the last step."""
    outputs = []
    for t in range(x.shape[1]):
        y_t, state = module.step(x[:, t], state)
        outputs.append(y_t)
    return torch.stack(outputs, dim=1), state
