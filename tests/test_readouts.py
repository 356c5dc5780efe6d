"""The pooling readouts (models/readouts.py: AttentionPooling, MeanPooling): weights, order
invariance, padding masked or seen, and the paper's initialisation."""

import pytest
import torch

from longterm.models.readouts import AttentionPooling, MeanPooling

B, T, D = 4, 13, 8


@pytest.fixture
def h():
    return torch.randn(B, T, D, generator=torch.Generator().manual_seed(0), dtype=torch.float64)


def make(cls, mask_padding=True):
    torch.manual_seed(0)
    return cls(D, mask_padding=mask_padding).double()


def test_attention_weights_sum_to_one(h):
    pool = make(AttentionPooling)
    mask = torch.arange(T) < torch.tensor([13, 9, 5, 11])[:, None]
    for m in (None, mask):
        alpha = pool.weights(h, m)
        torch.testing.assert_close(alpha.sum(1), torch.ones(B, dtype=h.dtype))
        assert (alpha >= 0).all()
    assert (pool.weights(h, mask)[~mask] == 0).all()


def test_zero_scores_give_the_mean(h):
    pool = make(AttentionPooling)
    torch.nn.init.zeros_(pool.score.weight)
    torch.nn.init.zeros_(pool.score.bias)
    torch.testing.assert_close(pool(h), make(MeanPooling)(h))
    mask = torch.arange(T) < torch.tensor([13, 9, 5, 11])[:, None]
    torch.testing.assert_close(pool(h, mask), make(MeanPooling)(h, mask))


@pytest.mark.parametrize("cls", [AttentionPooling, MeanPooling])
def test_order_invariance(cls, h):
    pool = make(cls)
    perm = torch.randperm(T, generator=torch.Generator().manual_seed(1))
    torch.testing.assert_close(pool(h[:, perm]), pool(h))


@pytest.mark.parametrize("cls", [AttentionPooling, MeanPooling])
def test_masked_padding_changes_nothing(cls, h):
    pool = make(cls)
    padded = torch.cat([h, 5 * torch.randn(B, 7, D, dtype=h.dtype)], dim=1)
    mask = torch.arange(T + 7) < T
    mask = mask.expand(B, -1)
    torch.testing.assert_close(pool(padded, mask), pool(h))


@pytest.mark.parametrize("cls", [AttentionPooling, MeanPooling])
def test_unmasked_pooling_sees_padding(cls, h):
    pool = make(cls, mask_padding=False)
    padded = torch.cat([h, 5 * torch.randn(B, 7, D, dtype=h.dtype)], dim=1)
    mask = (torch.arange(T + 7) < T).expand(B, -1)
    torch.testing.assert_close(pool(padded, mask), pool(padded))
    assert not torch.allclose(pool(padded, mask), pool(h))


def test_attention_init_as_the_paper():
    torch.manual_seed(0)
    pool = AttentionPooling(10_000)
    assert pool.score.bias.item() == 0
    assert abs(pool.score.weight.std().item() - 0.1) < 0.005
