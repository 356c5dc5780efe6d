"""Ops per update on an accelerator, counted on the meta device (models/ops.py), and the rule that
picks how the paper's model runs on each device (models/fused.py: plan)."""

import pytest
import torch
from helpers.configs import composed

from longterm.models.fused import CHUNK_BYTES, plan
from longterm.models.ops import meta_batch, update_ops
from longterm.tasks import default_width
from longterm.training.parts import build_model


def ops(T0: int, *overrides: str) -> int:
    """aten ops of one update of the model src/train.py builds, on the meta device: like CUDA,
    not the CPU, so model.impl=auto takes the path it takes on a GPU."""
    cfg = composed(f"T0={T0}", *overrides)
    return update_ops(build_model(cfg), meta_batch(100, default_width(T0), cfg.task.n_features))


@pytest.mark.parametrize("pool", ["attention", "mean"])
def test_the_default_on_an_accelerator_has_no_loop_over_time(pool):
    """model.impl=auto (the default): the same count at T0 = 1000 and 10000, within 2x of the
    reference's (in fact no more than it), where model.impl=fused's chunks grow with T."""
    auto = {T0: ops(T0, f"pool={pool}") for T0 in (1000, 10000)}
    reference = {T0: ops(T0, f"pool={pool}", "model.impl=reference") for T0 in (1000, 10000)}
    assert auto[1000] == auto[10000]
    for T0 in (1000, 10000):
        assert auto[T0] <= 2 * reference[T0]
        assert auto[T0] <= reference[T0]
    assert ops(1000, f"pool={pool}", "model.impl=fused") > 4 * auto[1000]


def test_the_plan_per_device():
    x_cpu, x_gpu = torch.empty(100, 11000, 2), torch.empty(100, 11000, 2, device="meta")
    assert plan("auto", x_cpu, 100, True)[0] == plan("fused", x_cpu, 100, True)[0] == "cpu"
    assert plan("auto", x_gpu, 100, True) == ("chunked", 11000)  # one chunk: no loop over time
    assert plan("auto", x_gpu, 100, False) == ("reference", 11000)
    assert plan("fused", x_gpu, 100, True) == ("chunked", 64)
    # States larger than CHUNK_BYTES: the fewest equal chunks that fit.
    T = 3 * CHUNK_BYTES // (100 * 100 * 4) + 1
    backend, chunk = plan("auto", torch.empty(100, T, 2, device="meta"), 100, True)
    assert backend == "chunked" and -(-T // chunk) == 4 and chunk * 100 * 100 * 4 <= CHUNK_BYTES
