"""The contract of an encoder, a readout and a task generator (docs/plugins.md), checked on small
inputs: what a model, readout or task must do for the framework to train, pool, log and compare
it as a built-in.

    encoder_report(encoder, in_features, dim, keys)   -> Report
    readout_report(pool section, dim)                 -> Report
    task_report(task section, min_length)             -> Report

Encoder: it builds; two builds with one seed are identical, and so are two forwards; x (B, T, F)
float32 gives h (B, T, D) float32 (float64 gives float64); a readout that masks padding (`last`,
and `attention` and `mean` with mask_padding=true) gives the same result whatever the padded steps
hold; a model declared causal is causal (h_<=t does not change when steps after t do); every
parameter gets a gradient; one with the step form steps as it runs whole and carries the state
it declares (config/step_form_check.py). Readout: it builds, identically twice; h (B, T, D) gives
c (B, D), or (B, T, D) for a per-step one, in h's dtype, the same twice; with mask_padding=true
the padded states cannot change c; a per-step one keeps causality (c_<=t does not change when
states after t do); the gradient reaches h and every parameter; the step form as an encoder's.
Task: the same rng gives the same batch; X, y and mask have the shapes and the features the
section declares, classes lie in 0..n_outputs - 1; padding is zero and comes after the real
steps; its chance level, the accuracy of the best constant prediction.

`python src/contract.py [overrides]` composes a config as src/train.py does (`--config-dir` too)
and prints the three reports; the tests run them on every built-in model, readout and task.
"""

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from longterm.choices import TOLERANCE
from longterm.config.step_form_check import check_encoder_steps, check_readout_steps
from longterm.config.validate import task_error
from longterm.models.build import build_encoder, build_readout, encoder_path
from longterm.models.readouts import AttentionPooling, LastStep, MeanPooling
from longterm.plugins.resolve import generator
from longterm.tasks import NO_TARGET, default_width

B, T = 4, 24  # the encoder's test batch: long enough for three cut points, short to run
N_SEQUENCES = 1000  # the task's sample, a validation set's size


@dataclass
class Check:
    ok: bool
    what: str


@dataclass
class Report:
    """The checks on one model or task, in order; `facts` are measured, not judged."""

    subject: str
    checks: list[Check] = field(default_factory=list)
    facts: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)

    def add(self, ok: bool, what: str) -> bool:
        self.checks.append(Check(bool(ok), what))
        return bool(ok)

    def __str__(self) -> str:
        lines = [self.subject]
        lines += [f"  {'ok  ' if c.ok else 'FAIL'}  {c.what}" for c in self.checks]
        lines += [f"  info  {k}: {v}" for k, v in self.facts.items()]
        return "\n".join(lines)


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
    (the model's causality, which per-step targets need, must survive the readout)."""
    cuts = (0, T // 3, 2 * T // 3)
    full = torch.ones_like(mask)
    bad = []
    with torch.no_grad():
        for t in cuts:
            later = h.clone()
            later[:, t + 1 :] = torch.randn(later[:, t + 1 :].shape, dtype=h.dtype)
            if not same(readout(h, full)[:, : t + 1], readout(later, full)[:, : t + 1]):
                bad.append(t)
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


def task_report(task: dict[str, Any], min_length: int, seed: int = 0) -> Report:
    """The contract of a task section (name, generator, labels, n_features, n_outputs, loss,
    params) at sequences of `min_length` steps and up."""
    report = Report(f"task {task['name']} ({task['generator']}, min_length={min_length})")
    draw: Callable[..., Any] = generator(task["generator"])
    params = dict(task.get("params") or {})
    try:
        X, y, mask = draw(np.random.RandomState(seed), min_length, N_SEQUENCES, None, **params)
    except Exception as e:
        report.add(False, f"draws a batch: {type(e).__name__}: {e}")
        return report
    again = draw(np.random.RandomState(seed), min_length, N_SEQUENCES, None, **params)
    report.add(
        all(np.array_equal(a, b) for a, b in zip((X, y, mask), again, strict=True)),
        f"the same batch from the same rng (RandomState({seed}))",
    )
    other = draw(np.random.RandomState(seed + 1), min_length, N_SEQUENCES, None, **params)
    report.add(not np.array_equal(X, other[0]), "another rng gives another batch")
    width = default_width(min_length)
    error = task_error(task, X[:2], np.asarray(y)[:2], mask[:2], width)
    tokens = task.get("inputs", "onehot") == "tokens"
    inputs = f"token ids in 0..{task['vocab'] - 1}" if tokens else f"{task['n_features']} features"
    report.add(
        error is None,
        f"X {X.shape} {X.dtype}, y {np.shape(y)}, mask {mask.shape} {mask.dtype}: "
        f"{inputs}, one target per {task['labels']}" + (f": {error}" if error else ""),
    )
    if error:
        return report
    lengths = mask.sum(1)
    prefix = np.array_equal(mask, np.arange(width)[None, :] < lengths[:, None])
    report.add(
        mask.dtype == bool and prefix and lengths.min() >= min_length,
        f"real steps first, then padding; lengths {lengths.min()}..{lengths.max()}",
    )
    report.add(not X[~mask].any(), f"X is zero on padding{' (token id 0)' if tokens else ''}")
    if tokens:
        report.facts["memory"] = memory_fact(X, y, mask, task["vocab"])
    labels = np.asarray(y)
    labels = labels[labels != NO_TARGET] if task["labels"] == "step" else labels
    if task["loss"] == "cross_entropy":
        found = np.unique(labels).astype(int)
        report.add(
            found.min() >= 0 and found.max() < task["n_outputs"],
            f"classes {found.min()}..{found.max()} within 0..{task['n_outputs'] - 1}",
        )
    else:
        report.add(np.isfinite(labels.astype(float)).all(), "finite targets")
    report.facts["chance"] = f"{chance(labels, task['loss']):.4f} ({chance_rule(task['loss'])})"
    return report


def memory_fact(X: np.ndarray, y: np.ndarray, mask: np.ndarray, vocab: int) -> str:
    """The bytes per sequence of a batch of token ids (X, y, mask), and of one-hot float32
    inputs over the same `vocab` instead."""
    n, width = mask.shape
    held = (X.nbytes + np.asarray(y).nbytes + mask.nbytes) / n
    one_hot = width * vocab * 4 + (np.asarray(y).nbytes + mask.nbytes) / n
    return f"{held:,.0f} bytes per sequence of {width} steps; one-hot inputs: {one_hot:,.0f}"


def chance(labels: np.ndarray, loss: str) -> float:
    """The accuracy of the best constant prediction: the most frequent class, or for a value the
    constant within TOLERANCE of the most targets (metrics.ToleranceAccuracy's rule)."""
    if loss == "cross_entropy":
        return float(np.bincount(labels.astype(int)).max() / len(labels))
    values = np.sort(labels.astype(float).ravel())
    # a window of width 2 * TOLERANCE starting at each target holds the targets it covers
    ends = np.searchsorted(values, values + 2 * TOLERANCE, side="left")
    return float((ends - np.arange(len(values))).max() / len(values))


def chance_rule(loss: str) -> str:
    if loss == "cross_entropy":
        return "the most frequent class"
    return f"the best constant c, |y - c| < {TOLERANCE}"
