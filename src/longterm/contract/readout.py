"""The contract of a readout (docs/plugins.md, "The contract check"), on a small padded batch of
states: it builds, identically twice; h (B, T, D) gives c (B, D), or (B, T, D) for a per-step
one, in h's dtype, the same twice; with mask_padding=true the padded states cannot change c; a
per-step one keeps causality (c_<=t does not change when states after t do) unless it says
`causal = False` (plugins/resolve.py: reads_causally), which is reported, as an encoder's; the
gradient reaches h and every parameter; the step form as an encoder's (contract/step_form.py).

    readout_report(pool section, dim)   -> Report
"""

from typing import Any

import torch
from torch import Tensor, nn

from longterm.contract.probes import B, T, built_twice, dtype, padded_batch, same
from longterm.contract.report import Report
from longterm.contract.step_form import check_readout_steps
from longterm.models.build import build_readout, encoder_path
from longterm.plugins.resolve import reads_causally


def readout_report(
    pool: dict[str, Any], dim: int, model: dict[str, Any] | None = None, seed: int = 0
) -> Report:
    """The contract of the readout a pool section names (`readout`: an import path or the
    class; `mask_padding` and its own keys), built for width `dim` (and the model section's
    `init`, where it takes it)."""
    path = encoder_path(pool["readout"])
    report = Report(f"readout {path} (dim={dim}, mask_padding={pool['mask_padding']})")

    readout = built_twice(report, lambda: build_readout(pool, dim, model), seed)
    if readout is None:
        return report

    h, mask = padded_batch(dim, seed)  # states (B, T, D), zero on padding
    per_step = readout.per_step
    readout.eval()
    with torch.no_grad():
        c32 = readout.float()(h.float(), mask)
        again = readout(h.float(), mask)
        c = readout.double()(h, mask)
    expected = (B, T, dim) if per_step else (B, dim)
    shapes = tuple(c32.shape) == expected and c32.dtype == torch.float32
    report.add(
        shapes and c.dtype == torch.float64 and torch.isfinite(c32).all(),
        f"h {tuple(h.shape)} float32 -> c {tuple(c32.shape)} {dtype(c32)}, finite (expected "
        f"{expected} float32, per_step={per_step}); h float64 -> c {dtype(c)}",
    )
    if not shapes:
        return report
    report.add(torch.equal(c32, again), "two forwards of one input are identical")
    check_readout_padding(report, readout, h, mask, pool["mask_padding"])
    if per_step:
        check_readout_causal(report, readout, h, mask)
    check_readout_gradients(report, readout, h, mask)
    check_readout_steps(report, readout, dim, seed)
    return report


def real_steps(c: Tensor, mask: Tensor) -> Tensor:
    """What a readout gives for the real steps: c (B, D) as it is, c (B, T, D) on the mask."""
    return c[mask] if c.dim() == 3 else c


def check_readout_padding(
    report: Report, readout: nn.Module, h: Tensor, mask: Tensor, mask_padding: bool
) -> None:
    """A readout built with mask_padding=true gives the same c (on the real steps, per step)
    whatever the padded states hold."""
    if not mask_padding:
        report.facts["padding"] = "mask_padding=false: padded steps are read as real ones"
        return
    noise = torch.randn(h.shape, generator=torch.Generator().manual_seed(1), dtype=h.dtype)
    changed = torch.where(mask[..., None], h, noise * 10)
    with torch.no_grad():
        c, c_changed = readout(h, mask), readout(changed, mask)
    report.add(
        same(real_steps(c, mask), real_steps(c_changed, mask)),
        "mask_padding=true: padded states cannot change c",
    )


def check_readout_causal(report: Report, readout: nn.Module, h: Tensor, mask: Tensor) -> None:
    """A per-step readout: c_<=t unchanged when the states after t change, at three cut points
    (the model's causality, which per-step targets need, must survive the readout); one that
    says `causal = False` is reported as such, not failed."""
    cuts = (0, T // 3, 2 * T // 3)
    full = torch.ones_like(mask)
    bad = []
    with torch.no_grad():
        for t in cuts:
            later = h.clone()
            later[:, t + 1 :] = torch.randn(later[:, t + 1 :].shape, dtype=h.dtype)
            if not same(readout(h, full)[:, : t + 1], readout(later, full)[:, : t + 1]):
                bad.append(t)
    if not reads_causally(readout):
        report.facts["causal"] = "declared not causal; " + (
            "c_<=t does change with later states" if bad else "yet it acts causal here"
        )
        return
    report.add(
        not bad,
        f"per step: changing states after t leaves c_<=t unchanged (t = "
        f"{', '.join(map(str, cuts))})"
        + (f": it changes at t = {', '.join(map(str, bad))}" if bad else ""),
    )


def check_readout_gradients(report: Report, readout: nn.Module, h: Tensor, mask: Tensor) -> None:
    """The gradient of a loss on c reaches h and every parameter, with finite values."""
    readout.train()
    readout.zero_grad()
    h = h.clone().requires_grad_(True)
    c = readout(h, mask)
    weights = torch.randn(c.shape, generator=torch.Generator().manual_seed(2), dtype=c.dtype)
    (real_steps(c * weights, mask)).sum().backward()
    params = {n: p for n, p in readout.named_parameters() if p.numel()}
    none = [n for n, p in params.items() if p.grad is None]
    bad = [n for n, p in params.items() if p.grad is not None and not p.grad.isfinite().all()]
    reads = h.grad is not None and h.grad.isfinite().all() and h.grad.any()
    report.add(
        reads and not none and not bad,
        f"the gradient reaches h and every parameter, finite ({len(params)} tensors)"
        + ("" if reads else ": none reaches h")
        + (f": none reaches {', '.join(none)}" if none else "")
        + (f": not finite for {', '.join(bad)}" if bad else ""),
    )
