"""The contract of an encoder (docs/plugins.md, "The contract check"), on a small padded batch:
it builds; two builds with one seed are identical, and so are two forwards; x (B, T, F) float32
gives h (B, T, D) float32 (float64 gives float64); a readout that masks padding (`last`, and
`attention` and `mean` with mask_padding=true) gives the same result whatever the padded steps
hold; a model declared causal is causal (h_<=t does not change when steps after t do); every
parameter gets a gradient; one with the step form steps as it runs whole and carries the state
it declares (contract/step_form.py).

    encoder_report(encoder, in_features, dim, keys)   -> Report
"""

from typing import Any

import torch
from torch import Tensor, nn

from longterm.contract.probes import B, T, built_twice, dtype, padded_batch, same
from longterm.contract.report import Report
from longterm.contract.step_form import check_encoder_steps
from longterm.models.build import build_encoder, encoder_path
from longterm.models.readouts import AttentionPooling, LastStep, MeanPooling


def encoder_report(
    encoder: str | type, in_features: int, dim: int, keys: dict[str, Any], seed: int = 0
) -> Report:
    """The contract of the encoder `encoder` (an import path or the class) built from
    `in_features`, `dim` and the model section's other `keys`."""
    path = encoder_path(encoder)
    report = Report(f"encoder {path} (in_features={in_features}, dim={dim})")

    enc = built_twice(report, lambda: build_encoder(encoder, in_features, dim, **keys), seed)
    if enc is None:
        return report

    x, mask = padded_batch(in_features, seed)
    enc.eval()
    with torch.no_grad():
        h32 = enc.float()(x.float(), mask)
        again = enc(x.float(), mask)
        h = enc.double()(x, mask)
    shapes = h32.shape == (B, T, dim) and h32.dtype == torch.float32 and h.dtype == torch.float64
    report.add(
        shapes and torch.isfinite(h32).all(),
        f"x {tuple(x.shape)} float32 -> h {tuple(h32.shape)} {dtype(h32)}, finite (expected "
        f"({B}, {T}, {dim}) float32); x float64 -> h {dtype(h)}",
    )
    if not shapes:
        return report
    report.add(torch.equal(h32, again), "two forwards of one input are identical")
    check_padding(report, enc, x, mask, dim)
    check_causal(report, enc, x, mask)
    check_gradients(report, enc, x, mask)
    check_encoder_steps(report, enc, in_features, seed)
    return report


def check_padding(report: Report, enc: nn.Module, x: Tensor, mask: Tensor, dim: int) -> None:
    """What a masking readout pools does not depend on the padded steps."""
    noise = torch.randn(x.shape, generator=torch.Generator().manual_seed(1), dtype=x.dtype)
    changed = torch.where(mask[..., None], x, noise * 10)
    readouts = {
        "last": LastStep(dim),
        "attention": AttentionPooling(dim, mask_padding=True).double(),
        "mean": MeanPooling(dim, mask_padding=True),
    }
    with torch.no_grad():
        h, h_changed = enc(x, mask), enc(changed, mask)
        differ = [n for n, r in readouts.items() if not same(r(h, mask), r(h_changed, mask))]
    report.add(
        not differ,
        "padding cannot change what a masking readout pools (last; attention and mean with "
        "mask_padding=true)" + (f": it does for {', '.join(differ)}" if differ else ""),
    )


def check_causal(report: Report, enc: nn.Module, x: Tensor, mask: Tensor) -> None:
    """A causal encoder: h_<=t unchanged when the steps after t change, at three cut points."""
    cuts = (0, T // 3, 2 * T // 3)
    seen = []
    with torch.no_grad():
        for t in cuts:
            later = x.clone()
            later[:, t + 1 :] = torch.randn(later[:, t + 1 :].shape, dtype=x.dtype)
            full = torch.ones_like(mask)  # every step real: only order is tested here
            seen.append(not same(enc(x, full)[:, : t + 1], enc(later, full)[:, : t + 1]))
    if getattr(enc, "causal", False):
        bad = [t for t, s in zip(cuts, seen, strict=True) if s]
        report.add(
            not bad,
            f"declared causal: changing steps after t leaves h_<=t unchanged (t = "
            f"{', '.join(map(str, cuts))})"
            + (f": it changes at t = {', '.join(map(str, bad))}" if bad else ""),
        )
    else:
        report.facts["causal"] = "declared not causal; " + (
            "h_<=t does change with later steps" if any(seen) else "yet it acts causal here"
        )


def check_gradients(report: Report, enc: nn.Module, x: Tensor, mask: Tensor) -> None:
    """Every trained parameter (requires_grad) is reached by the gradient of a loss on h, with
    finite values."""
    enc.train()
    enc.zero_grad()
    h = enc(x, mask)
    weights = torch.randn(h.shape, generator=torch.Generator().manual_seed(2), dtype=h.dtype)
    (h * weights * mask[..., None]).sum().backward()
    params = {n: p for n, p in enc.named_parameters() if p.numel() and p.requires_grad}
    empty = [n for n, p in enc.named_parameters() if not p.numel()]
    frozen = [n for n, p in enc.named_parameters() if not p.requires_grad]
    none = [n for n, p in params.items() if p.grad is None]
    bad = [n for n, p in params.items() if p.grad is not None and not p.grad.isfinite().all()]
    zero = [n for n, p in params.items() if p.grad is not None and not p.grad.any()]
    report.add(
        not none and not bad,
        f"every parameter gets a finite gradient ({len(params)} tensors)"
        + (f": none reaches {', '.join(none)}" if none else "")
        + (f": not finite for {', '.join(bad)}" if bad else ""),
    )
    if zero:
        report.facts["zero gradient on this batch"] = ", ".join(zero)
    if empty:
        report.facts["parameters with no elements"] = ", ".join(empty)
    if frozen:  # zoology's fixed positions of an implicit filter (models/base_conv.py)
        report.facts["parameters not trained (requires_grad=False)"] = ", ".join(frozen)
