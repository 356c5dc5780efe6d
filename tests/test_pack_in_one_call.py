"""A pack's members updated in one call on the CPU (launcher=packed): the members' kernels in one
call (models/feedforward.py: forward_members) and their Adam steps on flat buffers
(sweeps/flat_adam.py), each member's numbers those of its model alone, to the bit. The whole
runs are held equal in tests/test_packed.py."""

import copy

import pytest
import torch

from longterm.models import sequence_model
from longterm.models.feedforward import forward_members, same_shape
from longterm.models.readouts import AttentionPooling, MeanPooling
from longterm.sweeps.flat_adam import ALIGN, FlatAdam, plain_adam

# (dtype, F, D): the shapes other tests build the kernels for (the paper's model in float32,
# tests/test_fused.py's gradient check in float64), so that no test compiles them for this one
SHAPES = [(torch.float32, 2, 100), (torch.float64, 3, 6)]


def member(pool: type, seed: int, shape: tuple = SHAPES[0]) -> torch.nn.Module:
    """The paper's model (fused) of `shape` with random weights of its own."""
    dtype, F, D = shape
    torch.manual_seed(seed)
    net = sequence_model(
        "longterm.models.feedforward.StepEncoder", F, 1, pool(D), D, impl="fused"
    ).to(dtype)
    with torch.no_grad():
        for p in net.parameters():
            p.add_(torch.randn_like(p))
    return net


@pytest.mark.parametrize("pool", [AttentionPooling, MeanPooling])
@pytest.mark.parametrize("shape", SHAPES)
def test_members_in_one_call_are_their_models_alone(pool, shape):
    """Three models, each on a batch of its own length (two seeds' variable-length batches) with
    padding: outputs and every parameter's gradient equal to each model's own forward."""
    nets = [member(pool, seed, shape) for seed in range(3)]
    alone = copy.deepcopy(nets)
    dtype, F, _ = shape
    xs = [torch.randn(9, T, F, dtype=dtype) for T in (70, 70, 131)]
    masks = [torch.rand(9, x.shape[1]) > 0.2 for x in xs]
    assert same_shape(nets, xs[0])
    outs = forward_members(nets, xs, masks)
    sum((out**2).sum() for out in outs).backward()
    for net, own, x, mask, out in zip(nets, alone, xs, masks, outs, strict=True):
        expected = own(x, mask)
        (expected**2).sum().backward()
        assert torch.equal(out, expected)
        for p, q in zip(net.parameters(), own.parameters(), strict=True):
            assert torch.equal(p.grad, q.grad)


def test_models_of_other_shapes_run_one_after_another():
    nets = [member(AttentionPooling, 0), member(MeanPooling, 1)]
    assert not same_shape(nets, torch.zeros(2, 5, 2))
    assert not same_shape(nets[:1], torch.zeros(2, 5, 2, device="meta"))


def test_flat_adam_is_each_members_adam_as_alone():
    """Three members of other learning rates, four steps, then one stops and two go on: every
    parameter and Adam state equal to each member's own torch.optim.Adam, each tensor aligned as
    a tensor of its own."""
    nets = [member(AttentionPooling, seed) for seed in range(3)]
    alone = copy.deepcopy(nets)
    lrs = (1e-3, 3e-3, 1e-2)
    optimizers = [torch.optim.Adam(n.parameters(), lr=lr) for n, lr in zip(nets, lrs, strict=True)]
    own = [torch.optim.Adam(n.parameters(), lr=lr) for n, lr in zip(alone, lrs, strict=True)]
    assert plain_adam(optimizers)
    assert not plain_adam([torch.optim.Adam(nets[0].parameters(), amsgrad=True)])
    flat = FlatAdam(optimizers)
    for step in range(6):
        training = [0, 1, 2] if step < 4 else [0, 2]
        for i in training:
            for p, q in zip(nets[i].parameters(), alone[i].parameters(), strict=True):
                p.grad = torch.randn_like(p)
                q.grad = p.grad.clone()
        assert flat.step(training)
        for i in training:
            own[i].step()
        for net in nets:
            assert all(p.data_ptr() % ALIGN == 0 for p in net.parameters())
    for net, ours, theirs, mine in zip(nets, alone, own, optimizers, strict=True):
        for p, q in zip(net.parameters(), ours.parameters(), strict=True):
            assert torch.equal(p, q)
        for a, b in zip(mine.state.values(), theirs.state.values(), strict=True):
            assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
