"""Mamba (models/mamba.py) and its selective scan (models/kernels/selective_scan.py): the readable
scan, the parallel form and the compiled CPU kernel against mamba-ssm's reference outputs and each
other, the kernel's gradients, the two forms of the model, its state size, causality, and ops per
update on an accelerator."""

import numpy as np
import pytest
import torch
from helpers.configs import composed
from helpers.paths import SHARED
from test_ops import ops

from longterm.choices import IMPLS
from longterm.config.validate import ConfigError, validate
from longterm.models.kernels import selective_scan_cpu
from longterm.models.kernels.selective_scan import (
    KernelScan,
    chunked_scan,
    plan,
    scan_kernel,
    scan_steps,
)
from longterm.models.mamba import Mamba
from longterm.models.state import run_steps, state_numbers
from longterm.training.parts import build_model

FIXTURE = SHARED / "fixtures" / "mamba_selective_scan_reference.npz"
SCANS = {"steps": scan_steps, "kernel": scan_kernel, "parallel": chunked_scan}
CHUNK = selective_scan_cpu.library(16, 3, torch.float64).chunk_length()  # the kernel's L


pytestmark = pytest.mark.usefixtures("one_thread")  # small tensors (conftest.py)


def scan_inputs(b, T, E, N, dtype=torch.float64, seed=0):
    """Random u, delta (> 0), A (< 0), B, C, D of eq. 2."""
    g = torch.Generator().manual_seed(seed)
    u = torch.randn(b, T, E, generator=g, dtype=dtype)
    delta = torch.nn.functional.softplus(torch.randn(b, T, E, generator=g, dtype=dtype) - 1)
    A = -torch.exp(torch.randn(E, N, generator=g, dtype=dtype))
    B, C = (torch.randn(b, T, N, generator=g, dtype=dtype) for _ in range(2))
    return u, delta, A, B, C, torch.randn(E, generator=g, dtype=dtype)


@pytest.mark.skipif(not FIXTURE.exists(), reason="../shared/fixtures is absent")
@pytest.mark.parametrize("scan", list(SCANS))
def test_every_scan_gives_mamba_ssm_reference_outputs(scan):
    """selective_scan_ref of state-spaces/mamba, in float64 (the fixture's README)."""
    f = np.load(FIXTURE)
    for i in range(int(f["n_cases"])):
        case = {k.split("/")[1]: torch.from_numpy(f[k]) for k in f.files if k.startswith(f"{i}/")}
        delta = torch.nn.functional.softplus(case["delta"] + case["delta_bias"][:, None])
        u, z = case["u"].transpose(1, 2), case["z"].transpose(1, 2)
        B, C = case["B"].transpose(1, 2), case["C"].transpose(1, 2)
        y, last = SCANS[scan](u, delta.transpose(1, 2), case["A"], B, C, case["D"])
        out = y * torch.nn.functional.silu(z)
        torch.testing.assert_close(out, case["y"].transpose(1, 2), rtol=1e-10, atol=1e-12)
        torch.testing.assert_close(last, case["last_state"], rtol=1e-10, atol=1e-12)


def test_the_kernel_passes_gradcheck_in_float64():
    """Across chunks (T > 2 L) and with channels that are not whole vectors (E = 3)."""
    inputs = [t.requires_grad_() for t in scan_inputs(1, 2 * CHUNK + 5, 3, 3)]
    assert torch.autograd.gradcheck(lambda *t: KernelScan.apply(*t)[0], inputs)


@pytest.mark.parametrize("scan", ["kernel", "parallel"])
def test_float32_scans_agree_with_the_float64_reference(scan):
    """Outputs and gradients of a float32 scan within 1e-4 of the float64 step loop's, relative
    to the largest value (y, and each gradient); every length crosses several chunks."""
    exact = [t.requires_grad_() for t in scan_inputs(2, 4 * CHUNK + 9, 16, 8)]
    single = [t.detach().float().requires_grad_() for t in exact]
    y64, last64 = scan_steps(*exact)
    y32, last32 = SCANS[scan](*single)
    g = torch.randn_like(y64)
    for a, b in zip(
        [y64, last64, *torch.autograd.grad(y64, exact, g)],
        [y32, last32, *torch.autograd.grad(y32, single, g.float())],
        strict=True,
    ):
        assert (a - b.double()).abs().max() <= 1e-4 * a.abs().max()


def test_the_kernel_gives_the_same_bits_with_any_number_of_threads():
    inputs = [t.float().requires_grad_() for t in scan_inputs(4, 100, 16, 8)]
    results = []
    threads = torch.get_num_threads()
    try:
        for n in (1, 3):
            torch.set_num_threads(n)
            y, last = scan_kernel(*inputs)
            results.append([y, last, *torch.autograd.grad(y.square().sum(), inputs)])
    finally:
        torch.set_num_threads(threads)
    for a, b in zip(*results, strict=True):
        assert torch.equal(a, b)


def random_mamba(impl: str, layers: int = 2, **keys) -> Mamba:
    """A float64 Mamba with every parameter moved off its initialisation."""
    torch.manual_seed(0)
    enc = Mamba(3, 8, layers=layers, d_state=3, impl=impl, **keys).double()
    with torch.no_grad():
        for p in enc.parameters():
            p.add_(0.3 * torch.randn_like(p))
    return enc


@pytest.mark.parametrize("impl", ["reference", "fused"])
def test_the_step_form_equals_the_training_form(impl):
    """float64, random weights, a length that crosses the kernel's chunks; the state the step
    form carries is the size the model declares."""
    enc = random_mamba(impl)
    x = torch.randn(2, 2 * CHUNK + 7, 3, dtype=torch.float64)
    h_steps, state = run_steps(enc, x)
    torch.testing.assert_close(h_steps, enc(x), rtol=1e-10, atol=1e-10)
    assert state_numbers(state) == enc.state_size(x.shape[1])
    for T in (1, 5, 40):
        assert state_numbers(run_steps(enc, x[:, :T])[1]) == enc.state_size(T)


def test_the_state_size_formula_and_the_parameter_count():
    """layers E (N + d_conv - 1), whatever the length; the module docstring's parameter count."""
    enc = Mamba(2, 64, layers=2, d_state=16, d_conv=4, expand=2)
    E, N, R, D = 128, 16, 4, 64
    assert enc.state_size(10) == enc.state_size(10000) == 2 * E * (N + 4 - 1)
    block = D * 2 * E + E * 4 + E + E * (R + 2 * N) + R * E + E + E * N + E + E * D + 2 * D
    assert sum(p.numel() for p in enc.parameters()) == 2 * D + D + 2 * block + 2 * D


@pytest.mark.parametrize("impl", ["reference", "fused"])
def test_mamba_is_causal(impl):
    enc = random_mamba(impl, layers=1, d_conv=3)
    x = torch.randn(2, 50, 3, dtype=torch.float64)
    h = enc(x)
    for t in (0, 20, 40):
        changed = x.clone()
        changed[:, t + 1 :] = torch.randn_like(changed[:, t + 1 :])
        h2 = enc(changed)
        torch.testing.assert_close(h2[:, : t + 1], h[:, : t + 1], rtol=0, atol=0)
        assert not torch.allclose(h2[:, t + 1 :], h[:, t + 1 :])


def test_the_plan_per_device():
    cpu, meta = torch.device("cpu"), torch.device("meta")
    assert plan("reference", cpu) == "steps"
    assert plan("auto", cpu) == plan("fused", cpu) == "kernel"
    assert plan("auto", meta) == plan("reference", meta) == "parallel"


def test_mamba_on_an_accelerator_has_no_loop_over_time():
    """The parallel scan: the same ops per update at T0 = 1000 and 10000 (on the meta device)."""
    assert ops(1000, "model=mamba") == ops(10000, "model=mamba")


@pytest.mark.parametrize(
    "impl, pool", [(impl, "last") for impl in IMPLS] + [("fused", "attention"), ("fused", "mean")]
)
def test_every_impl_of_mamba_builds_with_any_readout(impl, pool):
    """Mamba takes model.impl itself (its __init__ names it), so fused is no error here; the
    encoder's every block is built with the impl asked for."""
    cfg = composed("model=mamba", f"model.impl={impl}", f"pool={pool}")
    validate(cfg)
    assert {m.impl for m in build_model(cfg).net.encoder.mixers} == {impl}


@pytest.mark.parametrize(
    "key, value, expected",
    [
        ("d_state", 0, "model: d_state=0 must be >= 1"),
        ("expand", 1.5, "model.expand=1.5 is invalid: Input should be a valid integer"),
        ("dt_rank", 0, "model: dt_rank=0 must be >= 1 (or auto: ceil(dim / 16))"),
        ("d_model", 4, "model.d_model is not a key of model=mamba"),
    ],
)
def test_bad_mamba_keys_fail_with_one_line(key, value, expected):
    with pytest.raises(ConfigError) as err:
        validate(composed("model=mamba", f"++model.{key}={value}"))
    assert str(err.value).startswith(expected) and "\n" not in str(err.value)
