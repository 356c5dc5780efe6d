"""What the encoder's and the readout's contract checks share (contract/encoder.py,
contract/readout.py): the small padded batch they run on, equality to float64 rounding, and a
module built twice with one seed."""

from collections.abc import Callable

import torch
from torch import Tensor, nn

from longterm.contract.report import Report

B, T = 4, 24  # the encoder's test batch: long enough for three cut points, short to run


def padded_batch(in_features: int, seed: int) -> tuple[Tensor, Tensor]:
    """x (B, T, F) float64, zero on padding, and mask (B, T) with lengths T/2..T."""
    g = torch.Generator().manual_seed(seed)
    lengths = torch.linspace(T // 2, T, B).round().long()
    mask = torch.arange(T)[None, :] < lengths[:, None]
    x = torch.randn(B, T, in_features, generator=g, dtype=torch.float64) * mask[..., None]
    return x, mask


def dtype(t: Tensor) -> str:
    return str(t.dtype).removeprefix("torch.")


def same(a: Tensor, b: Tensor) -> bool:
    """Equal to float64 rounding: the outputs of two inputs that must give one result."""
    return a.shape == b.shape and torch.allclose(a, b, rtol=1e-10, atol=1e-12)


def built_twice(report: Report, build: Callable[[], nn.Module], seed: int) -> nn.Module | None:
    """The module `build` makes after seeding with `seed`, reported with its parameter count and
    checked equal to a second build; None (reported) when it cannot be built."""

    def seeded() -> nn.Module:
        torch.manual_seed(seed)
        return build()

    try:
        module = seeded()
    except Exception as e:
        report.add(False, f"builds: {type(e).__name__}: {e}")
        return None
    report.add(True, f"builds: {sum(p.numel() for p in module.parameters()):,} parameters")
    a, b = module.state_dict(), seeded().state_dict()
    identical = a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    report.add(identical, f"two builds with seed {seed} are identical")
    return module
