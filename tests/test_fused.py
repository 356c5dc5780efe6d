"""The fused encoder + pooling (models/fused.py) against autograd and the readable reference."""

import platform
import shutil
import subprocess
from functools import cache

import pytest
import torch
from helpers.presets import QUICK
from helpers.runs import multirun

from longterm.analysis.events import curve
from longterm.config.builtins import encoder_of
from longterm.models import feedforward as feedforward_module
from longterm.models import sequence_model
from longterm.models.fused import encode_pool
from longterm.models.kernels import fused_cpu
from longterm.models.readouts import AttentionPooling, MeanPooling

# (backend, chunk): the compiled kernels; PyTorch ops in chunks of 5 steps (several chunks, as
# model.impl=fused off the CPU) and in one chunk (the whole sequence, as model.impl=auto there).
BACKENDS = [("cpu", 5), ("chunked", 5), ("chunked", 1000)]


def feedforward(in_features, out_features, readout, dim=100, impl="fused", **kw):
    """The paper's model, fused as conf/model/feedforward.yaml has it, D = 100 unless given."""
    return sequence_model(
        encoder_of("feedforward"), in_features, out_features, readout, dim, impl=impl, **kw
    )


def params(D: int = 6, F: int = 3, dtype: torch.dtype = torch.float64) -> list[torch.Tensor]:
    """W (D, F), b (D,), w (D,), b_w (1,) with nonzero biases, as leaves that want gradients."""
    torch.manual_seed(1)
    shapes = [(D, F), (D,), (D,), (1,)]
    return [torch.randn(s, dtype=dtype).requires_grad_() for s in shapes]


def ragged_mask(B: int, T: int) -> torch.Tensor:
    """(B, T) with different numbers (at least 8) of real steps; one row starts with 7 masked."""
    lengths = torch.randint(max(T // 2, 8), T + 1, (B,))
    mask = torch.arange(T) < lengths.unsqueeze(1)
    mask[0, :7] = False
    return mask


@pytest.mark.parametrize("backend, chunk", BACKENDS)
@pytest.mark.parametrize("attention", [True, False])
@pytest.mark.parametrize("masked", [True, False])
def test_gradcheck_float64(backend, chunk, attention, masked):
    """Analytic gradients for x and every parameter against finite differences."""
    W, b, w, bw = params()
    x = torch.randn(3, 17, 3, dtype=torch.float64, requires_grad=True)
    keep = ragged_mask(3, 17) if masked else None
    score = (w, bw) if attention else ()

    def f(x, W, b, *score):
        return encode_pool(x, keep, W, b, 0.01, *score, backend=backend, chunk=chunk)

    assert torch.autograd.gradcheck(f, (x, W, b, *score))


@pytest.mark.parametrize("backend, chunk", BACKENDS)
def test_variable_length_batches_share_one_function(backend, chunk):
    """Per-batch lengths: consecutive batches of different T against the reference."""
    model = feedforward(3, 1, AttentionPooling(6, mask_padding=True), dim=6, hidden=4)
    for T in (11, 40, 97):
        x, keep = torch.randn(4, T, 3), ragged_mask(4, T)
        enc, pool = model.encoder, model.readout
        ref = pool(enc(x), keep)
        out = encode_pool(
            x,
            keep,
            enc.proj.weight,
            enc.proj.bias,
            enc.negative_slope,
            pool.score.weight,
            pool.score.bias,
            backend=backend,
            chunk=chunk,
        )
        torch.testing.assert_close(out, ref)


def twin_models(pool: type, mask_padding: bool) -> tuple[torch.nn.Module, torch.nn.Module]:
    """The reference and the fused model with the same parameters."""
    torch.manual_seed(0)
    reference = feedforward(2, 1, pool(100, mask_padding=mask_padding), impl="reference")
    fused = feedforward(2, 1, pool(100, mask_padding=mask_padding), impl="fused")
    fused.load_state_dict(reference.state_dict())
    return reference, fused


# float32 over T steps: both paths sum T terms in different orders, so the error grows with T;
# these bounds leave room for that at T = 10000 and are still far below any change in the math.
F32 = dict(rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("T", [1000, 10000])
@pytest.mark.parametrize("pool", [AttentionPooling, MeanPooling])
@pytest.mark.parametrize("plan", ["cpu", "one chunk", "64-step chunks"])
def test_float32_outputs_and_gradients_agree_with_the_reference(T, pool, plan, monkeypatch):
    """The model's CPU kernels, and the plans it takes off the CPU (models/fused.py: plan) run
    here on the CPU: the whole sequence in one chunk (model.impl=auto) and chunks of 64 steps
    (model.impl=fused)."""
    if plan != "cpu":
        chunk = T if plan == "one chunk" else 64
        monkeypatch.setattr(feedforward_module, "plan", lambda *_: ("chunked", chunk))
    reference, fused = twin_models(pool, mask_padding=True)
    torch.manual_seed(T)
    x = torch.rand(8, T, 2)
    x[..., 1] = (torch.rand(8, T) < 0.01).float()
    mask = ragged_mask(8, T)
    y = torch.randn(8, 1)
    grads = []
    for model in (reference, fused):
        out = model(x, mask)
        torch.nn.functional.mse_loss(out, y).backward()
        grads.append((out.detach(), {n: p.grad for n, p in model.named_parameters()}))
    (ref_out, ref_grads), (out, fused_grads) = grads
    torch.testing.assert_close(out, ref_out, **F32)
    assert ref_grads.keys() == fused_grads.keys()
    for name, g in ref_grads.items():
        torch.testing.assert_close(fused_grads[name], g, **F32, msg=name)


def test_unmasked_padding_is_pooled_as_in_the_paper_code():
    """mask_padding=false pools every step, padding included, on both paths."""
    reference, fused = twin_models(AttentionPooling, mask_padding=False)
    x, mask = torch.rand(4, 60, 2), ragged_mask(4, 60)
    torch.testing.assert_close(fused(x, mask), reference(x, mask))
    torch.testing.assert_close(fused(x, mask), fused(x, None))


def test_fused_needs_a_pooling_it_computes():
    with pytest.raises(ValueError, match="model.impl=fused is invalid with pool=Identity"):
        feedforward(2, 1, torch.nn.Identity(), impl="fused")
    with pytest.raises(ValueError, match="model.impl='triton' is invalid"):
        feedforward(2, 1, MeanPooling(100), impl="triton")


@pytest.mark.parametrize("attention", [True, False])
def test_cpu_kernels_give_the_same_bits_with_any_number_of_threads(attention):
    """Each thread takes whole sequences and the parameter gradients are summed in sequence
    order, so 1, 2 and 3 threads (an uneven split) give identical outputs and gradients."""
    W, b, w, bw = params(D=100, F=2, dtype=torch.float32)
    torch.manual_seed(2)
    x = torch.rand(7, 300, 2, requires_grad=True)
    keep, g = ragged_mask(7, 300), torch.randn(7, 100)
    score = (w, bw) if attention else ()
    results, before = [], torch.get_num_threads()
    try:
        for n in (1, 2, 3):
            torch.set_num_threads(n)
            leaves = (x, W, b, *score)
            c = encode_pool(x, keep, W, b, 0.01, *score, backend="cpu")
            results.append([c, *torch.autograd.grad(c, leaves, g)])
    finally:
        torch.set_num_threads(before)
    for other in results[1:]:
        for a, b_ in zip(results[0], other, strict=True):
            assert torch.equal(a, b_)


def test_cpu_kernels_name_a_missing_compiler(monkeypatch):
    monkeypatch.setenv("CXX", "no-such-compiler")
    with pytest.raises(RuntimeError, match="need a C\\+\\+ compiler and found none of no-such"):
        fused_cpu.library.__wrapped__(2, 3, torch.float32)


def compiler(tmp_path, script: str) -> str:
    """A C++ compiler: g++ called with the arguments as `script` (sh, the arguments in "$@")
    passes them on."""
    cxx = tmp_path / "cxx"
    cxx.write_text(f"#!/bin/sh\n{script}\n")
    cxx.chmod(0o755)
    return str(cxx)


def test_cpu_kernels_build_for_one_thread_without_openmp(tmp_path, monkeypatch):
    """A compiler that refuses -fopenmp (Apple's clang) still builds kernels that compute the
    same function, on one thread, with a warning."""
    refuse = 'for a in "$@"; do [ "$a" = -fopenmp ] && echo "no -fopenmp" >&2 && exit 1; done'
    W, b, w, bw = params(D=5, F=2, dtype=torch.float32)
    x, keep = torch.rand(3, 40, 2), ragged_mask(3, 40)
    expected = encode_pool(x, keep, W, b, 0.01, w, bw, backend="cpu")
    monkeypatch.setenv("CXX", compiler(tmp_path, f'{refuse}\nexec g++ "$@"'))
    monkeypatch.setattr(fused_cpu, "KERNEL_DIR", tmp_path / "kernels")
    with pytest.warns(UserWarning, match="without OpenMP: one thread runs them"):
        single = fused_cpu.library.__wrapped__(2, 5, torch.float32)
    monkeypatch.setattr(fused_cpu, "library", lambda *_: single)
    torch.testing.assert_close(encode_pool(x, keep, W, b, 0.01, w, bw, backend="cpu"), expected)


@pytest.mark.skipif(platform.machine() != "x86_64", reason="-mno-avx512f is an x86 flag")
@pytest.mark.parametrize("attention", [True, False])
def test_cpu_kernels_on_256_bit_vectors(tmp_path, monkeypatch, attention):
    """Built without AVX-512 (most laptops), the kernels work on 256-bit vectors (8 float32 or
    4 float64 steps): the float64 gradients against finite differences, and float32 against the
    default build."""
    monkeypatch.setenv("CXX", compiler(tmp_path, 'exec g++ "$@" -mno-avx512f'))
    monkeypatch.setattr(fused_cpu, "KERNEL_DIR", tmp_path / "kernels")
    W, b, w, bw = params(D=6, F=3, dtype=torch.float32)
    x, keep = torch.rand(4, 300, 3), ragged_mask(4, 300)
    score = (w, bw) if attention else ()
    expected = encode_pool(x, keep, W, b, 0.01, *score, backend="cpu")
    monkeypatch.setattr(fused_cpu, "library", cache(fused_cpu.library.__wrapped__))
    out = encode_pool(x, keep, W, b, 0.01, *score, backend="cpu")
    torch.testing.assert_close(out, expected, **F32)
    leaves = [t.detach().double().requires_grad_() for t in (x[:2, :17], W, b, *score)]

    def f(x, W, b, *score):
        return encode_pool(x, keep[:2, :17], W, b, 0.01, *score, backend="cpu")

    assert torch.autograd.gradcheck(f, leaves)
    builds = sorted((tmp_path / "kernels").glob("*.so"))
    assert [p.name.split("_")[3] for p in builds] == sorted(["float", "double"])
    if shutil.which("objdump"):  # no 512-bit register in the code
        assert not any(
            "zmm" in subprocess.check_output(["objdump", "-d", p], text=True) for p in builds
        )


def test_cpu_kernels_refuse_other_dtypes():
    with pytest.raises(TypeError, match="take float32 or float64, not torch.bfloat16"):
        fused_cpu.library(2, 3, torch.bfloat16)
    W, b, w, bw = params(D=5, F=2, dtype=torch.float32)
    with pytest.raises(TypeError, match="one dtype: x is torch.float64, not torch.float32"):
        encode_pool(torch.rand(2, 9, 2, dtype=torch.float64), None, W, b, 0.01, w, bw)


def test_training_curves_match_the_reference(tmp_path):
    """The same seed through src/train.py: same loss curve and accuracies within float32 noise."""
    runs = {}
    for result in multirun(tmp_path, *QUICK, "model.impl=reference,fused"):  # one process
        tags = {tag: curve(result["run_dir"], tag).tolist() for tag in ("train/loss", "val/loss")}
        runs[result["config"]["model"]["impl"]] = (result, tags)
    (ref, ref_tags), (fused, fused_tags) = runs["reference"], runs["fused"]
    assert len(ref_tags["train/loss"]) == len(fused_tags["train/loss"]) == 4
    assert fused_tags["train/loss"] == pytest.approx(ref_tags["train/loss"], rel=1e-3)
    assert fused["val_acc_history"] == pytest.approx(ref["val_acc_history"], abs=0.01)
    assert fused_tags["val/loss"] == pytest.approx(ref_tags["val/loss"], rel=1e-3)
