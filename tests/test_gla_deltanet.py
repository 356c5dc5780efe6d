"""Gated linear attention (models/gla.py) and DeltaNet (models/deltanet.py): their recurrences
against flash-linear-attention's step-by-step references, the chunked and step forms and the CPU
kernels (models/kernels/linear_attention_cpu.cpp) against each other, the state size, causality,
RetNet's retention as GLA's fixed decay, the short convolutions on q, k and v
(models/short_conv.py) as fla's layers have them, the keys checked before training, and the ops
per update on an accelerator."""

import math

import numpy as np
import pytest
import torch
from helpers.paths import CONF, SHARED
from test_ops import ops
from torch import nn
from torch.nn import functional as F
from torch.profiler import ProfilerActivity, profile

from longterm.config.command_line import check
from longterm.config.validate import ConfigError
from longterm.models.deltanet import DeltaNet, delta_chunked, delta_step
from longterm.models.gla import SUB, GatedLinearAttention, gla_chunked, gla_step
from longterm.models.kernels.chunks import ACCEL_CHUNKS, CHUNK, chunk_plan, fixed_plan
from longterm.models.kernels.linear_attention_cpu import delta_kernel, gla_kernel, kernel_runs
from longterm.models.short_conv import ShortConvolution
from longterm.models.state import run_steps, state_numbers
from longterm.tasks import default_width

FLA = SHARED / "fixtures" / "fla_naive_reference.npz"
META = torch.device("meta")


pytestmark = pytest.mark.usefixtures("one_thread")  # small tensors (conftest.py)


def fla_cases(prefix: str) -> list[dict[str, torch.Tensor]]:
    if not FLA.exists():
        pytest.skip(f"{FLA} is absent (../shared)")
    data = np.load(FLA)
    names = [key.split("/")[1] for key in data.files if key.startswith(f"{prefix}0/")]
    n = int(data["n_cases"])
    return [{m: torch.from_numpy(data[f"{prefix}{i}/{m}"]) for m in names} for i in range(n)]


def stepped(step, inputs: tuple[torch.Tensor, ...], S: torch.Tensor):
    """The step form over inputs (B, H, T, ...) from S: o (B, H, T, d_v), S after the last step."""
    outputs = []
    for t in range(inputs[0].shape[2]):
        o_t, S = step(*(x[:, :, t] for x in inputs), S)
        outputs.append(o_t)
    return torch.stack(outputs, dim=2), S


def plans(T: int, multiple: int = 1) -> list[tuple[int, int] | None]:
    """The default plan, chunk_plan off the CPU (ACCEL_CHUNKS chunks, most of them padding), and
    chunks of `multiple` or 2 steps: the chunked form must not depend on how T is cut."""
    small = max(multiple, 2)
    return [None, chunk_plan(T, META, multiple), (small, math.ceil(T / small))]


def test_gla_reproduces_flash_linear_attentions_reference():
    """Both forms give naive_recurrent_gla's o and final state (float64)."""
    for case in fla_cases("gla"):
        q, k, v, gk = (case[m].transpose(1, 2) for m in ("q", "k", "v", "gk"))  # (B, H, T, .)
        zero = q.new_zeros(*case["state"].shape)
        for plan in plans(q.shape[2], SUB):
            o, S = gla_chunked(q, k, v, gk, plan=plan)
            torch.testing.assert_close(o.transpose(1, 2), case["o"], rtol=1e-12, atol=1e-12)
            torch.testing.assert_close(S, case["state"], rtol=1e-12, atol=1e-12)
        o, S = stepped(gla_step, (q, k, v, gk), zero)
        torch.testing.assert_close(o.transpose(1, 2), case["o"], rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(S, case["state"], rtol=1e-12, atol=1e-12)
        o = gla_kernel(*(case[m] for m in ("q", "k", "v", "gk")))  # (B, T, H, .)
        torch.testing.assert_close(o, case["o"], rtol=1e-12, atol=1e-12)


def test_the_delta_rule_reproduces_flash_linear_attentions_reference():
    """Both forms give delta_rule_recurrence's o and final state (float64)."""
    for case in fla_cases("delta"):
        inputs = tuple(case[m] for m in ("q", "k", "v", "beta"))  # (B, H, T, .)
        for plan in plans(inputs[0].shape[2]):
            o, S = delta_chunked(*inputs, plan=plan)
            torch.testing.assert_close(o, case["o"], rtol=1e-12, atol=1e-12)
            torch.testing.assert_close(S, case["state"], rtol=1e-12, atol=1e-12)
        o, S = stepped(delta_step, inputs, torch.zeros_like(case["state"]))
        torch.testing.assert_close(o, case["o"], rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(S, case["state"], rtol=1e-12, atol=1e-12)
        o = delta_kernel(*(x.transpose(1, 2) for x in inputs)).transpose(1, 2)
        torch.testing.assert_close(o, case["o"], rtol=1e-12, atol=1e-12)


def random_encoder(cls, seed: int, **keys) -> torch.nn.Module:
    """A float64 encoder whose every parameter is redrawn at random (not PyTorch's init)."""
    torch.manual_seed(seed)
    encoder = cls(3, 16, heads=2, layers=2, **keys).double()
    with torch.no_grad():
        for p in encoder.parameters():
            p.normal_(0.0, 0.6)
    return encoder


ENCODERS = {  # on the CPU: the compiled kernel unless impl=reference (the chunked form)
    "gla": (GatedLinearAttention, {"impl": "reference"}),
    "gla-kernel": (GatedLinearAttention, {}),
    "gla-fixed": (GatedLinearAttention, {"decay": "fixed", "impl": "reference"}),
    "gla-fixed-kernel": (GatedLinearAttention, {"decay": "fixed"}),
    "deltanet": (DeltaNet, {"impl": "reference"}),
    "deltanet-kernel": (DeltaNet, {}),
    "gla-conv": (GatedLinearAttention, {"use_short_conv": True, "impl": "reference"}),
    "gla-conv-kernel": (GatedLinearAttention, {"use_short_conv": True}),
    "deltanet-conv": (DeltaNet, {"use_short_conv": True, "impl": "reference"}),
    "deltanet-conv-kernel": (DeltaNet, {"use_short_conv": True}),
}
T_LONG = 2 * CHUNK + 11  # three chunks on the CPU, the last one part-filled


@pytest.mark.parametrize("name", ENCODERS)
def test_the_chunked_and_step_forms_are_equal_with_random_weights(name):
    cls, keys = ENCODERS[name]
    encoder = random_encoder(cls, 0, **keys)
    x = torch.randn(2, T_LONG, 3, dtype=torch.float64)
    h_steps, state = run_steps(encoder, x)
    torch.testing.assert_close(h_steps, encoder(x), rtol=1e-10, atol=1e-10)
    assert state_numbers(state) == encoder.state_size(T_LONG)


@pytest.mark.parametrize("name", ENCODERS)
def test_the_declared_state_size_is_the_step_forms(name):
    """heads d_k d_v per layer at any length: 2 layers x 2 heads x d_k x 8 at D = 16; with the
    short convolutions (conv_size 4) also their last min(T, 3) inputs of q and k (2 d_k each) and
    v (16) per layer."""
    cls, keys = ENCODERS[name]
    encoder = random_encoder(cls, 1, **keys)
    d_k = 4 if cls is GatedLinearAttention else 8  # expand_k = 0.5 for GLA
    channels = 2 * 2 * d_k + 16 if keys.get("use_short_conv") else 0
    for T in (1, 2, 5, 17):
        _, state = run_steps(encoder, torch.randn(3, T, 3, dtype=torch.float64))
        expected = 2 * (2 * d_k * 8 + channels * min(T, 3))
        assert state_numbers(state) == encoder.state_size(T) == expected


@pytest.mark.parametrize("name", ENCODERS)
def test_later_steps_never_reach_earlier_states_across_chunks(name):
    cls, keys = ENCODERS[name]
    encoder = random_encoder(cls, 2, **keys)
    x = torch.randn(2, T_LONG, 3, dtype=torch.float64)
    changed = x.clone()
    t = CHUNK + 5  # in the second chunk
    changed[:, t + 1 :] = torch.randn_like(changed[:, t + 1 :])
    h, h_changed = encoder(x), encoder(changed)
    torch.testing.assert_close(h_changed[:, : t + 1], h[:, : t + 1], rtol=0, atol=0)
    assert not torch.allclose(h_changed[:, t + 1 :], h[:, t + 1 :])


def test_the_short_convolution_is_flas():
    """fla's ShortConvolution (fla/modules/convolution.py): nn.Conv1d(C, C, k, groups=C,
    padding=k - 1) on (B, C, T), its first T outputs; the step form, from the last min(t, k - 1)
    inputs, gives the same, with a bias or without."""
    x = torch.randn(2, 9, 6, dtype=torch.float64)
    for bias in (False, True):
        conv = ShortConvolution(6, 4, bias=bias).double()
        fla = nn.Conv1d(6, 6, 4, groups=6, padding=3, bias=bias).double()
        fla.load_state_dict(conv.state_dict())
        expected = fla(x.transpose(1, 2))[..., :9].transpose(1, 2)
        torch.testing.assert_close(conv(x), expected, rtol=1e-12, atol=1e-12)
        recent, steps = None, []
        for t in range(9):
            y, recent = conv.step(x[:, t], recent)
            steps.append(y)
            assert (
                recent.shape == (2, min(t + 1, 3), 6)
                and conv.state_size(t + 1) == recent[0].numel()
            )
        torch.testing.assert_close(torch.stack(steps, 1), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("cls", [GatedLinearAttention, DeltaNet])
def test_q_k_v_are_flas_with_the_short_convolutions(cls):
    """After the projections, before the feature map and the norm (fla/layers/gla.py,
    fla/layers/delta_net.py, use_short_conv=True): GLA q, k, v = SiLU(Conv(u W)); DeltaNet q, k =
    L2(SiLU(Conv(u W))), v = SiLU(Conv(u W_V)); each Conv k taps on each channel and no bias; the
    decay and beta read u. The convolutions add 4 taps per channel of q, k and v, nothing else."""
    mixer = random_encoder(cls, 3, use_short_conv=True).mixers[0]
    u = torch.randn(2, 11, 16, dtype=torch.float64)
    T = u.shape[1]
    convolved = [
        F.conv1d(W(u).transpose(1, 2), c.weight, padding=3, groups=c.in_channels)[..., :T]
        for W, c in (
            (mixer.W_q, mixer.conv.q),
            (mixer.W_k, mixer.conv.k),
            (mixer.W_v, mixer.conv.v),
        )
    ]
    q, k, v = (F.silu(x.transpose(1, 2)).unflatten(-1, (2, -1)) for x in convolved)
    if cls is DeltaNet:
        q, k = F.normalize(q, dim=-1), F.normalize(k, dim=-1)
    *qkv, gate, _ = mixer.projections(u)
    for got, expected in zip(qkv, (q, k, v), strict=True):
        torch.testing.assert_close(got, expected, rtol=1e-12, atol=1e-12)
    if cls is DeltaNet:
        expected = torch.sigmoid(mixer.W_beta(u))
    else:
        expected = F.logsigmoid(mixer.W_a(u).unflatten(-1, (2, -1))) / 16
    torch.testing.assert_close(gate, expected, rtol=1e-12, atol=1e-12)
    with_conv, without = (cls(3, 16, heads=2, use_short_conv=c) for c in (True, False))
    added = sum(p.numel() for p in with_conv.parameters())
    added -= sum(p.numel() for p in without.parameters())
    channels = 16 + 16 + 16 if cls is DeltaNet else 8 + 8 + 16  # d_k = D / 2 for GLA
    assert added == 2 * 4 * channels  # two layers
    assert all(c.bias is None for c in (mixer.conv.q, mixer.conv.k, mixer.conv.v))


def test_fixed_decay_is_retnets_retention():
    """decay=fixed: gamma_h = 1 - 2^(-5-h), no gate parameters, and the chunked form equals
    RetNet's parallel form o_t = sum_{s<=t} gamma^(t-s) (q_t · k_s / sqrt(d_k)) v_s."""
    fixed, data = (GatedLinearAttention(2, 64, decay=d) for d in ("fixed", "data"))
    gate = sum(p.numel() for n, p in data.named_parameters() if ".W_a." in n)
    assert gate == 2 * (64 * 16 + 16 * 32 + 32)  # two layers of W_a1, W_a2 and b_a
    assert sum(p.numel() for p in data.parameters()) - gate == sum(
        p.numel() for p in fixed.parameters()
    )
    gamma = 1 - torch.exp(fixed.mixers[0].log_gamma.double())
    torch.testing.assert_close(gamma, 2.0 ** -(5.0 + torch.arange(4, dtype=torch.float64)))

    B, H, T, d_k, d_v = 2, 3, 40, 4, 5
    q, k = torch.randn(2, B, H, T, d_k, dtype=torch.float64)
    v = torch.randn(B, H, T, d_v, dtype=torch.float64)
    log_gamma = torch.log1p(-(2.0 ** -(5.0 + torch.arange(H, dtype=torch.float64))))
    lag = torch.arange(T)[:, None] - torch.arange(T)[None, :]  # t - s
    decay = torch.where(lag >= 0, torch.exp(lag.clamp_min(0) * log_gamma[:, None, None]), 0)
    retention = ((q @ k.transpose(-1, -2)) * d_k**-0.5 * decay) @ v
    log_alpha = log_gamma[:, None, None].expand(B, H, T, d_k)
    o, _ = gla_chunked(q, k, v, log_alpha, plan=(SUB, math.ceil(T / SUB)))
    torch.testing.assert_close(o, retention, rtol=1e-12, atol=1e-12)


def test_strong_decays_stay_finite():
    """Log decays of -1000 a step: every exponent of the chunked form is <= 0, so nothing
    overflows, and the output is the step form's (float32)."""
    B, H, T, d = 1, 2, 50, 4
    q, k, v = torch.randn(3, B, H, T, d)
    log_alpha = torch.full((B, H, T, d), -1000.0)
    log_alpha[:, :, ::7] = -0.01
    o, S = gla_chunked(q, k, v, log_alpha, plan=(SUB, math.ceil(T / SUB)))
    o_steps, S_steps = stepped(gla_step, (q, k, v, log_alpha), q.new_zeros(B, H, d, d))
    assert torch.isfinite(o).all()
    torch.testing.assert_close(o, o_steps)
    torch.testing.assert_close(S, S_steps)


def kernel_inputs(name: str, T: int, dtype: torch.dtype, seed: int = 0) -> list[torch.Tensor]:
    """Leaves q, k (2, T, 3, 8), v (2, T, 3, 16) and the gate: GLA's log alpha (2, T, 3, 8), from
    -6 to 0, or the delta rule's beta (2, T, 3) with unit keys, as the layers make them."""
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(2, T, 3, d, generator=g, dtype=dtype) for d in (8, 8, 16))
    if name == "gla":
        gate = F.logsigmoid(3 * torch.randn(2, T, 3, 8, generator=g, dtype=dtype))
    else:
        k = F.normalize(k, dim=-1)
        gate = torch.rand(2, T, 3, generator=g, dtype=dtype)
    return [t.requires_grad_() for t in (q, k, v, gate)]


KERNELS = {"gla": (gla_kernel, gla_chunked), "delta": (delta_kernel, delta_chunked)}


@pytest.mark.parametrize("name", KERNELS)
@pytest.mark.parametrize("T", [1, 63, 64, 65, 150])
def test_the_kernels_and_the_chunked_forms_give_the_same_outputs_and_gradients(name, T):
    """Float64, across the backward pass's chunks of 64 steps (recomputed from their starts)."""
    kernel, chunked = KERNELS[name]
    inputs = kernel_inputs(name, T, torch.float64)
    grad_o = torch.randn(2, T, 3, 16, dtype=torch.float64)
    o = kernel(*inputs)
    o_chunked = chunked(*(x.transpose(1, 2) for x in inputs))[0].transpose(1, 2)
    torch.testing.assert_close(o, o_chunked, rtol=1e-12, atol=1e-12)
    for mine, theirs in zip(
        torch.autograd.grad(o, inputs, grad_o),
        torch.autograd.grad(o_chunked, inputs, grad_o),
        strict=True,
    ):
        torch.testing.assert_close(mine, theirs, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("name", KERNELS)
def test_the_kernels_gradients_are_their_outputs_derivatives(name):
    assert torch.autograd.gradcheck(KERNELS[name][0], kernel_inputs(name, 70, torch.float64))


@pytest.mark.parametrize("name", KERNELS)
def test_the_kernels_give_the_same_numbers_on_any_number_of_threads(name):
    inputs = kernel_inputs(name, 130, torch.float32)
    results = []
    for threads in (1, 2):
        torch.set_num_threads(threads)
        o = KERNELS[name][0](*inputs)
        results.append([o, *torch.autograd.grad(o.square().sum(), inputs)])
    for one, two in zip(*results, strict=True):
        assert torch.equal(one, two)


def test_the_kernels_run_where_they_can():
    cpu = torch.empty(1, 1, 4)
    assert kernel_runs("auto", cpu) and kernel_runs("fused", cpu)
    assert not kernel_runs("reference", cpu)
    assert not kernel_runs("auto", cpu.half())
    assert not kernel_runs("auto", torch.empty(1, device=META))


def test_the_accelerators_plan_has_a_fixed_number_of_chunks():
    for T in (1, 1100, 11000):
        C, N = chunk_plan(T, META, SUB)
        assert N == ACCEL_CHUNKS and C % SUB == 0 and C * N >= T > (C - SUB) * N
    # The fewest chunks of at most CHUNK steps, each as short as covers T: 18 of 62 for 1100
    # steps, two of 40 (a multiple of SUB) for 71, one of 32 (a multiple of 16) for 20.
    assert chunk_plan(1100, torch.device("cpu")) == fixed_plan(1100) == (62, 18)
    assert fixed_plan(71, SUB) == (40, 2)
    assert fixed_plan(20, 16) == (32, 1)


@pytest.mark.slow  # about 15 s: profiling some 20,000 ops four times
@pytest.mark.parametrize("model", ["gla", "deltanet"])
@pytest.mark.parametrize("conv", ["false", "true"])
def test_ops_per_update_on_an_accelerator_do_not_grow_with_the_length(model, conv):
    keys = (f"model={model}", f"model.use_short_conv={conv}")
    assert ops(1000, *keys) == ops(10000, *keys)


@pytest.mark.parametrize("chunked", [gla_chunked, delta_chunked])
def test_the_chunked_forms_ops_do_not_grow_with_the_length(chunked):
    """The part of an update whose ops could grow with T (the default run's check; the whole
    update is held above): forward and backward of the chunked form at the widths of T0 = 1000
    and 10000, on the meta device."""

    def count(T: int) -> int:
        q, k, v, gate = (torch.empty(2, 2, T, 4, device=META, requires_grad=True) for _ in "qkvg")
        gate = gate if chunked is gla_chunked else gate[..., 0]
        with profile(activities=[ProfilerActivity.CPU]) as prof:  # once: no optimiser state
            chunked(q, k, v, gate)[0].sum().backward()
        return sum(event.name.startswith("aten::") for event in prof.events())

    assert count(default_width(1000)) == count(default_width(10000))


@pytest.mark.parametrize(
    "args, expected",
    [
        (["model=gla", "model.heads=3"], "model: heads=3 must divide dim=64 and dim * expand_k"),
        (["model=gla", "model.decay=linear"], "model.decay='linear' is invalid"),
        (["model=deltanet", "model.heads=5"], "model: heads=5 must divide dim=64"),
        (["model=deltanet", "model.conv_size=0"], "model.conv_size=0 is invalid"),
        (["model=gla", "model.use_short_conv=maybe"], "model.use_short_conv='maybe' is invalid"),
    ],
)
def test_own_keys_are_checked_before_training(args, expected):
    with pytest.raises(ConfigError) as err:
        check(args, CONF)
    assert str(err.value).startswith(expected) and "\n" not in str(err.value)
