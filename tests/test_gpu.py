"""Every implementation of the paper's model against the reference on CUDA, and every model of
the framework on CUDA against itself on the CPU (`make gpu-check`; `pytest -m gpu`). Skipped
without CUDA; the default run leaves them out (pyproject.toml)."""

import copy

import pytest
import torch
from helpers.configs import composed
from helpers.paths import CONF

from longterm.config.builtins import generator_of
from longterm.models import fused
from longterm.training.batches import FixedLengthBatches, batch_rng
from longterm.training.parts import build_model

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
]
DEVICE = "cuda"
# float32, T = 1000..1100 steps summed in different orders (tests/test_fused.py has the same).
F32 = dict(rtol=1e-4, atol=1e-5)
# model.impl, and CHUNK_BYTES to force auto's fallback to several chunks (states of 100 x 1100 x
# 100 float32 are 44 MB: 4 MB gives 11 chunks).
IMPLS = {"auto": None, "fused": None, "auto in chunks": 4 * 2**20}


def update(net: torch.nn.Module, batch: tuple) -> tuple[torch.Tensor, dict]:
    """The output and every parameter's gradient of one forward and backward on `batch`."""
    x, y, mask = batch
    out = net(x, mask).squeeze(-1)
    torch.nn.functional.mse_loss(out, y).backward()
    return out.detach(), {n: p.grad for n, p in net.named_parameters()}


@pytest.mark.parametrize("impl", list(IMPLS))
@pytest.mark.parametrize("pool", ["attention", "mean"])
@pytest.mark.parametrize("mask_padding", [False, True])
def test_every_implementation_agrees_with_the_reference(impl, pool, mask_padding, monkeypatch):
    """At T0 = 1000 on the paper's data: outputs and gradients within float32 rounding."""
    if IMPLS[impl] is not None:
        monkeypatch.setattr(fused, "CHUNK_BYTES", IMPLS[impl])
    overrides = ["T0=1000", f"pool={pool}", f"pool.mask_padding={mask_padding}"]
    torch.manual_seed(0)
    reference = build_model(composed(*overrides, "model.impl=reference")).net.to(DEVICE)
    model = build_model(composed(*overrides, f"model.impl={impl.split()[0]}")).net
    model.load_state_dict(reference.state_dict())
    model.to(DEVICE)
    batch = FixedLengthBatches(generator_of("addition"), 1000, 100)(batch_rng(0, 0, 0, 0))
    batch = tuple(t.to(DEVICE) for t in batch)
    (ref_out, ref_grads), (out, grads) = update(reference, batch), update(model, batch)
    torch.testing.assert_close(out, ref_out, **F32)
    assert grads.keys() == ref_grads.keys()
    for name, g in ref_grads.items():
        torch.testing.assert_close(grads[name], g, **F32, msg=name)


MODELS = sorted(p.stem for p in (CONF / "model").glob("*.yaml"))


def relative_difference(a: torch.Tensor, b: torch.Tensor) -> float:
    """The largest difference of two tensors over the largest magnitude of the first."""
    return ((b.cpu() - a).abs().max() / a.abs().max().clamp_min(1e-12)).item()


@pytest.mark.parametrize("model", MODELS)
def test_every_model_on_cuda_equals_itself_on_the_cpu(model, monkeypatch):
    """The same weights and batch (the paper's addition at T0 = 100, 8 sequences, the model's
    default readout) on both devices: the paths that differ by device (Mamba's selective scan,
    GLA's and DeltaNet's chunks, the fused kernels, cuFFT) give the CPU's output and gradients
    within float32 rounding. cuDNN's convolutions are held to float32 here (its default allows
    TF32, a 10-bit mantissa, in Mamba's and Hyena's short convolutions). In eval mode: the
    dropout of zoology's models draws differently on the two devices."""
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", False)
    torch.manual_seed(0)
    on_cpu = build_model(composed(f"model={model}", "T0=100")).net.eval()  # no dropout draws
    on_gpu = copy.deepcopy(on_cpu).to(DEVICE)
    batch = FixedLengthBatches(generator_of("addition"), 100, 8)(batch_rng(0, 0, 0, 0))
    out, grads = update(on_cpu, batch)
    gpu_out, gpu_grads = update(on_gpu, tuple(t.to(DEVICE) for t in batch))
    assert relative_difference(out, gpu_out) < 1e-4, model
    for name, g in grads.items():
        assert (g is None) == (gpu_grads[name] is None), name
        if g is not None:
            assert relative_difference(g, gpu_grads[name]) < 1e-3, f"{model}: {name}"


def test_the_plan_on_cuda_has_no_loop_over_time():
    x = torch.empty(100, 11000, 2, device=DEVICE)
    assert fused.plan("auto", x, 100, True) == ("chunked", 11000)


def test_a_packed_sweep_stacks_its_members_on_the_gpu(tmp_path):
    """launcher=packed on CUDA stacks the members (longterm.sweeps.stacked): four runs, a diverging
    learning rate among them, end as the same runs alone on the CPU do, within the stacked path's
    bounds (tests/test_packed.py)."""
    from helpers.presets import QUICK
    from helpers.runs import train_py
    from test_packed import assert_close_runs

    # On an accelerator the divergence check reads the device every log_every_n_steps updates
    # (callbacks.StopOnDivergence, `auto`), on the CPU every update: both runs are given QUICK's
    # interval, so the diverging member stops at the same update.
    every = "callbacks.stop_on_divergence.every_n_updates=10"
    assert "trainer.log_every_n_steps=10" in QUICK
    args = ("-m", "task=addition", "lr=1e-3,1e30", "seed=1,2", every, *QUICK)
    alone, packed = tmp_path / "cpu", tmp_path / "packed"
    out = train_py(*args, "trainer.accelerator=cpu", f"hydra.sweep.dir={alone}")
    assert out.returncode == 0, out.stderr
    on_gpu = ("launcher=packed", "launcher.jobs=1", "trainer.accelerator=gpu")
    out = train_py(*args, *on_gpu, f"hydra.sweep.dir={packed}")
    assert out.returncode == 0, out.stderr
    for run in alone.iterdir():  # the same runs, named by the accelerator each was given
        run.rename(run.with_name(run.name.replace("accelerator=cpu", "accelerator=gpu")))
    assert_close_runs(alone, packed)


def test_a_token_run_scores_its_eval_lengths_on_the_gpu(tmp_path):
    """mqar on CUDA, then eval.lengths scored where it trained: the memory estimate probes the
    trained model on its device, and the batches are split by the GPU's free memory."""
    from helpers.results import read_json
    from test_token_inputs import TOKEN_RUN

    from longterm.training.run import train

    run_dir = tmp_path / "run"
    on_gpu = composed(*TOKEN_RUN, "model=lstm", "trainer.accelerator=gpu", f"run_dir={run_dir}")
    result = train(on_gpu)
    assert result["status"] == "max_epochs" and sorted(result["eval_lengths"]) == ["48", "64"]
    assert read_json(run_dir / "result.json")["eval_lengths"] == result["eval_lengths"]
