"""The paper's feed-forward network with attention (models/feedforward.py): its parameter counts,
shapes, initialisation and the leaky output."""

import math

import pytest
import torch

from longterm.config.builtins import encoder_of
from longterm.models import sequence_model
from longterm.models.readouts import AttentionPooling, MeanPooling


def feedforward(in_features, out_features, readout, dim=100, impl="fused", **kw):
    """The paper's model, fused as conf/model/feedforward.yaml has it, D = 100 unless given."""
    return sequence_model(
        encoder_of("feedforward"), in_features, out_features, readout, dim, impl=impl, **kw
    )


def n_params(model):
    return sum(p.numel() for p in model.parameters())


def test_parameter_counts_match_the_paper():
    assert n_params(feedforward(2, 1, AttentionPooling(100))) == 10_602
    assert n_params(feedforward(2, 1, MeanPooling(100))) == 10_501


@pytest.mark.parametrize("pool", [AttentionPooling, MeanPooling])
def test_forward_shapes(pool):
    model = feedforward(2, 1, pool(100))
    x, mask = torch.randn(5, 60, 2), torch.ones(5, 60, dtype=torch.bool)
    assert model(x, mask).shape == (5, 1)


def test_paper_initialisation():
    torch.manual_seed(0)
    model = feedforward(2, 1, AttentionPooling(100), dim=100, hidden=400)
    head = model.head.hidden
    assert abs(head.weight.std().item() - 1 / math.sqrt(100)) < 0.003
    for bias in (model.encoder.proj.bias, head.bias, model.head.out.bias, model.readout.score.bias):
        assert (bias == 0).all()


def test_torch_initialisation_is_one_flag_away():
    torch.manual_seed(0)
    model = feedforward(2, 1, MeanPooling(100), init="torch")
    assert (model.head.hidden.bias != 0).any()  # PyTorch draws biases uniformly
    with pytest.raises(ValueError, match="unknown init"):
        feedforward(2, 1, MeanPooling(100), init="xavier")


def test_leaky_relu_slope_on_the_output():
    model = feedforward(2, 1, MeanPooling(4), dim=4, hidden=4)
    torch.nn.init.constant_(model.head.out.bias, -1.0)
    torch.nn.init.zeros_(model.head.out.weight)
    out = model(torch.randn(2, 15, 2))
    torch.testing.assert_close(out, torch.full((2, 1), -0.01))
