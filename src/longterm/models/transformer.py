"""Causal transformer and all-attention encoders (Sukhbaatar et al. 2019b, "Augmenting
Self-attention with Persistent Memory"), the second an ablation of the first: the
feed-forward sublayer is replaced by N persistent key/value slots per head inside the attention's
softmax (models/attention.py).

    h^0 = W_in x + b_in
    transformer:    a^l = h^{l-1} + Attn(LN(h^{l-1}));   h^l = a^l + W_2 ReLU(W_1 LN(a^l))
    all-attention:  h^l = h^{l-1} + AllAttn(LN(h^{l-1}))            (N = 0: attention alone)
    h = LN(h^L)

Each query step t attends to steps t - span + 1..t (offsets 0..span - 1, the relative position
term on context keys only). x (B, T, F) -> h (B, T, D), then a readout over time (`pool=last`
by default) and the paper's head. Causal, so padding after the real steps never changes them.

Departures from the paper, to make the two models' parameters match exactly and training stable
without warm-up: pre-norm blocks (the paper's code is post-norm), LayerNorms without gain or bias
(the gain of a pre-norm LayerNorm is absorbed by the bias-free projection after it), and no biases
in the attention and feed-forward projections. The hand-written layers, not
nn.TransformerEncoderLayer: its attention has no place for a term that depends on the query
(q_i · p_{i-j}) or for slots outside the sequence.

Parameters (L layers, width D, span S, F inputs):
    all_attention:  F*D + D + L * (4 D^2 + S*D + 2 N*D)
    transformer:    F*D + D + L * (4 D^2 + S*D + 2 D*d_ff)
so with N = d_ff the two are equal; add the head D*hidden + hidden + hidden*out + out and the
readout's own (attention pooling: D + 1).
"""

import torch
from torch import Tensor, nn

from longterm.models.attention import attend, heads, norm, relative_bias
from longterm.models.init import init_linear_
from longterm.models.sequence import SequenceModel, with_head


class SelfAttention(nn.Module):
    """x (B, T, D) -> (B, T, D): multi-head attention of each step over the last `span` steps and
    `n_persistent` persistent slots per head."""

    def __init__(self, dim: int, n_heads: int, span: int, n_persistent: int = 0):
        super().__init__()
        d_h = dim // n_heads
        self.n_heads, self.span = n_heads, span
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.out = nn.Linear(dim, dim, bias=False)
        # p_0..p_{S-1}, m^k and m^v drawn from N(0, 1), as the paper's code
        self.pos = nn.Parameter(torch.randn(n_heads, span, d_h))
        self.mem_k = nn.Parameter(torch.randn(n_heads, n_persistent, d_h))
        self.mem_v = nn.Parameter(torch.randn(n_heads, n_persistent, d_h))

    def forward(self, x: Tensor) -> Tensor:
        q, k, v = (heads(p, self.n_heads) for p in self.qkv(x).chunk(3, dim=-1))
        steps = torch.arange(x.shape[1], device=x.device)
        blocks = []
        # Queries in blocks of `span` steps, each against the keys it can reach: the scores take
        # O(T * span) memory instead of O(T^2).
        for start in range(0, x.shape[1], self.span):
            end, first = start + self.span, max(0, start - self.span + 1)
            qb = q[:, :, start:end]
            bias = relative_bias(qb, self.pos, steps[start:end], steps[first:end])
            blocks.append(
                attend(qb, k[:, :, first:end], v[:, :, first:end], bias, self.mem_k, self.mem_v)
            )
        return self.out(torch.cat(blocks, dim=2).transpose(1, 2).flatten(2))


class TransformerLayer(nn.Module):
    """Pre-norm: a = h + Attn(LN(h)); h' = a + W_2 ReLU(W_1 LN(a)):  (B, T, D) -> (B, T, D)."""

    def __init__(self, dim: int, n_heads: int, span: int, d_ff: int):
        super().__init__()
        self.attn = SelfAttention(dim, n_heads, span)
        self.ff = nn.Sequential(
            nn.Linear(dim, d_ff, bias=False), nn.ReLU(), nn.Linear(d_ff, dim, bias=False)
        )

    def forward(self, h: Tensor) -> Tensor:
        h = h + self.attn(norm(h))
        return h + self.ff(norm(h))


class AllAttentionLayer(nn.Module):
    """Pre-norm: h' = h + AllAttn(LN(h)), context and persistent slots in one softmax."""

    def __init__(self, dim: int, n_heads: int, span: int, n_persistent: int):
        super().__init__()
        self.attn = SelfAttention(dim, n_heads, span, n_persistent)

    def forward(self, h: Tensor) -> Tensor:
        return h + self.attn(norm(h))


class AttentionStack(nn.Module):
    """x (B, T, F) -> h (B, T, D): input projection, the layers, a final LayerNorm."""

    def __init__(self, embed: nn.Linear, layers: list[nn.Module]):
        super().__init__()
        self.embed, self.layers = embed, nn.ModuleList(layers)

    def forward(self, x: Tensor) -> Tensor:
        h = self.embed(x)
        for layer in self.layers:
            h = layer(h)
        return norm(h)


def check_shape(dim: int, n_heads: int, impl: str) -> None:
    if dim % n_heads:
        raise ValueError(f"heads={n_heads} must divide dim={dim}")
    if impl != "reference":
        raise ValueError(f"impl={impl!r}: attention models have only impl=reference")


def transformer(
    in_features: int,
    out_features: int,
    readout: nn.Module,
    dim: int = 64,
    heads: int = 4,
    layers: int = 2,
    attn_span: int = 64,
    d_ff: int = 64,
    hidden: int = 100,
    negative_slope: float = 0.01,
    init: str = "paper",
    impl: str = "reference",
) -> SequenceModel:
    """`layers` pre-norm transformer layers of width `dim`, then `readout` and the head; `init`
    applies to the input projection and the head, the layers keep PyTorch's initialisation."""
    check_shape(dim, heads, impl)
    stack = [TransformerLayer(dim, heads, attn_span, d_ff) for _ in range(layers)]
    encoder = AttentionStack(init_linear_(nn.Linear(in_features, dim), init), stack)
    return with_head(encoder, readout, dim, hidden, out_features, negative_slope, init)


def all_attention(
    in_features: int,
    out_features: int,
    readout: nn.Module,
    dim: int = 64,
    heads: int = 4,
    layers: int = 2,
    attn_span: int = 64,
    n_persistent: int = 64,
    hidden: int = 100,
    negative_slope: float = 0.01,
    init: str = "paper",
    impl: str = "reference",
) -> SequenceModel:
    """`layers` all-attention layers with `n_persistent` slots per head, then `readout` and the
    head; `init` as in `transformer`."""
    check_shape(dim, heads, impl)
    stack = [AllAttentionLayer(dim, heads, attn_span, n_persistent) for _ in range(layers)]
    encoder = AttentionStack(init_linear_(nn.Linear(in_features, dim), init), stack)
    return with_head(encoder, readout, dim, hidden, out_features, negative_slope, init)
