"""Ops per update: how many aten operators one training update issues, counted on PyTorch's
`meta` device, which dispatches like CUDA (device type not `cpu`, so models/fused.py plans as it
would on a GPU) and computes nothing. On an accelerator each op is at least one kernel launch of
several microseconds, so this machine-independent count is the floor of an update's time there.

One update is what training does: the module's forward and loss on one batch, backward, and a
step of the module's own optimiser (Adam). The count is the number of `aten::` events that
torch.profiler records for the second of two updates (the first creates Adam's state), nested
events included.
"""

from collections.abc import Callable

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile


def meta_batch(batch_size: int, T: int, n_features: int) -> tuple[torch.Tensor, ...]:
    """x (B, T, F) float32, y (B,) float32 and mask (B, T) bool on the meta device."""
    return (
        torch.empty(batch_size, T, n_features, device="meta"),
        torch.empty(batch_size, device="meta"),
        torch.empty(batch_size, T, dtype=torch.bool, device="meta"),
    )


def update_ops(module: nn.Module, batch: tuple[torch.Tensor, ...]) -> int:
    """aten ops of one update of `module` (a longterm.training.module.MemoryTaskModule: its forward,
    `loss` and `configure_optimizers`) on `batch` (x, y, mask), both moved to the meta device first;
    `module` is left there."""
    module = module.to("meta")
    x, y, mask = (t.to("meta") for t in batch)
    optimizer = module.configure_optimizers()

    def update() -> None:
        optimizer.zero_grad(set_to_none=True)
        module.loss(module(x, mask), y).backward()
        optimizer.step()

    return counted_ops(update)


def counted_ops(update: Callable[[], None]) -> int:
    """aten ops of the second of two calls of `update` (the first creates the optimiser's
    state), nested events included."""
    update()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        update()
    return sum(event.name.startswith("aten::") for event in prof.events())
