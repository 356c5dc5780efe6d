"""Causal transformer and all-attention encoders (Sukhbaatar et al. 2019b, "Augmenting
Self-attention with Persistent Memory"), the second an ablation of the first: the
feed-forward sublayer is replaced by N persistent key/value slots per head inside the attention's
softmax (models/attention.py).

    h^0 = W_in x + b_in
    post-norm (default, the paper's):
      transformer:    a^l = LN(h^{l-1} + Attn(h^{l-1}));   h^l = LN(a^l + W_2 ReLU(W_1 a^l))
      all-attention:  h^l = LN(h^{l-1} + AllAttn(h^{l-1}))          (N = 0: attention alone)
    pre-norm (`norm=pre`):
      transformer:    a^l = h^{l-1} + Attn(LN(h^{l-1}));   h^l = a^l + W_2 ReLU(W_1 LN(a^l))
      all-attention:  h^l = h^{l-1} + AllAttn(LN(h^{l-1}));  then h = LN(h^L)

Each query step t attends to steps t - span + 1..t (offsets 0..span - 1, the relative position
term on context keys only). x (B, T, F) -> h (B, T, D), then a readout over time (`pool=last`
by default) and the paper's head. Causal, so padding after the real steps never changes them.

The persistent slots use the paper's reparametrisation: stored as N(0, 1/d_h) keys and N(0, 1/N)
values, multiplied by sqrt(d_h) and sqrt(N) when used, so their effective scale is unit variance.
Departures from the paper, to make the two models' parameters match exactly: LayerNorms
without gain or bias, and no biases in the attention and feed-forward projections. The
hand-written layers, not nn.TransformerEncoderLayer: its attention has no place for a term that
depends on the query (q_i · p_{i-j}) or for slots outside the sequence.

The step form (models/state.py) runs one step through the same layers with a cache of keys and
values per layer: a query attends to its own step and the S - 1 before it, so after `length`
steps each layer carries those of the last min(length, S - 1) steps, 2 D min(length, S - 1)
numbers per sequence; the persistent slots are parameters, not state.

Parameters (L layers, width D, span S, F inputs):
    all_attention:  F*D + D + L * (4 D^2 + S*D + 2 N*D)
    transformer:    F*D + D + L * (4 D^2 + S*D + 2 D*d_ff)
so with N = d_ff the two are equal; add the head D*hidden + hidden + hidden*out + out and the
readout's own (attention pooling: D + 1).
"""

from typing import Literal

import torch
from pydantic import NonNegativeInt, PositiveInt
from torch import Tensor, nn

from longterm.choices import NORMS
from longterm.models.attention import (
    attend,
    check_heads,
    heads,
    norm,
    position_scores,
    relative_bias,
)
from longterm.models.init import init_linear_

KVCache = tuple[Tensor, Tensor]  # keys and values of the last steps, (B, H, n, d_h) each


class SelfAttention(nn.Module):
    """x (B, T, D) -> (B, T, D): multi-head attention of each step over the last `span` steps and
    `n_persistent` persistent slots per head."""

    def __init__(self, dim: int, n_heads: int, span: int, n_persistent: int = 0):
        super().__init__()
        d_h = dim // n_heads
        self.n_heads, self.span = n_heads, span
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.out = nn.Linear(dim, dim, bias=False)
        self.pos = nn.Parameter(torch.randn(n_heads, span, d_h))  # p_0..p_{S-1}, N(0, 1)
        # stored at N(0, 1/d_h) and N(0, 1/N), used times sqrt(d_h) and sqrt(N) (persistent())
        self.mem_k = nn.Parameter(torch.randn(n_heads, n_persistent, d_h) / d_h**0.5)
        n = max(n_persistent, 1)
        self.mem_v = nn.Parameter(torch.randn(n_heads, n_persistent, d_h) / n**0.5)

    def persistent(self) -> tuple[Tensor, Tensor]:
        """The persistent keys m^k and values m^v at unit scale:  (H, N, d_h) each."""
        d_h, n = self.mem_k.shape[-1], max(self.mem_k.shape[1], 1)
        return self.mem_k * d_h**0.5, self.mem_v * n**0.5

    def forward(self, x: Tensor) -> Tensor:
        q, k, v = (heads(p, self.n_heads) for p in self.qkv(x).chunk(3, dim=-1))
        steps = torch.arange(x.shape[1], device=x.device)
        mem_k, mem_v = self.persistent()
        blocks = []
        # Queries in blocks of `span` steps, each against the keys it can reach: the scores take
        # O(T * span) memory instead of O(T^2).
        for start in range(0, x.shape[1], self.span):
            end, first = start + self.span, max(0, start - self.span + 1)
            qb = q[:, :, start:end]
            bias = relative_bias(qb, self.pos, steps[start:end], steps[first:end])
            blocks.append(attend(qb, k[:, :, first:end], v[:, :, first:end], bias, mem_k, mem_v))
        return self.out(torch.cat(blocks, dim=2).transpose(1, 2).flatten(2))

    def step(self, x_t: Tensor, cache: KVCache | None) -> tuple[Tensor, KVCache]:
        """x_t (B, D) and the cached keys and values of the n <= span - 1 steps before, oldest
        first -> y_t (B, D) and the cache with step t's own, keeping the last span - 1."""
        q, k, v = (
            p.unflatten(-1, (self.n_heads, -1))[:, :, None] for p in self.qkv(x_t).chunk(3, -1)
        )
        if cache is not None:
            k, v = torch.cat([cache[0], k], dim=2), torch.cat([cache[1], v], dim=2)
        n = k.shape[2]  # the keys' offsets are n - 1, ..., 0
        bias = position_scores(q, self.pos)[..., :n].flip(-1)  # (B, H, 1, n)
        y = attend(q, k, v, bias, *self.persistent())  # (B, H, 1, d_h)
        keep = max(n - (self.span - 1), 0)
        return self.out(y.flatten(1)), (k[:, :, keep:], v[:, :, keep:])

    def cache_size(self, length: int) -> int:
        """Numbers per sequence in the cache after `length` steps: 2 D min(length, span - 1)."""
        return 2 * self.out.in_features * min(length, self.span - 1)


def residual(h: Tensor, sublayer: nn.Module, position: str) -> Tensor:
    """LN(h + f(h)) for post-norm, h + f(LN(h)) for pre-norm:  (B, T, D) -> (B, T, D)."""
    return norm(h + sublayer(h)) if position == "post" else h + sublayer(norm(h))


def attention_step(
    h_t: Tensor, attn: SelfAttention, cache: KVCache | None, position: str
) -> tuple[Tensor, KVCache]:
    """`residual` around the attention sublayer for one step: h_t (B, D) -> (B, D), its cache."""
    if position == "post":
        y, cache = attn.step(h_t, cache)
        return norm(h_t + y), cache
    y, cache = attn.step(norm(h_t), cache)
    return h_t + y, cache


class TransformerLayer(nn.Module):
    """An attention sublayer then a ReLU feed-forward sublayer:  (B, T, D) -> (B, T, D)."""

    def __init__(self, dim: int, n_heads: int, span: int, d_ff: int, norm_position: str):
        super().__init__()
        self.attn = SelfAttention(dim, n_heads, span)
        self.ff = nn.Sequential(
            nn.Linear(dim, d_ff, bias=False), nn.ReLU(), nn.Linear(d_ff, dim, bias=False)
        )
        self.norm_position = norm_position

    def forward(self, h: Tensor) -> Tensor:
        h = residual(h, self.attn, self.norm_position)
        return residual(h, self.ff, self.norm_position)

    def step(self, h_t: Tensor, cache: KVCache | None) -> tuple[Tensor, KVCache]:
        h_t, cache = attention_step(h_t, self.attn, cache, self.norm_position)
        return residual(h_t, self.ff, self.norm_position), cache


class AllAttentionLayer(nn.Module):
    """One all-attention sublayer, context and persistent slots in one softmax:
    (B, T, D) -> (B, T, D)."""

    def __init__(self, dim: int, n_heads: int, span: int, n_persistent: int, norm_position: str):
        super().__init__()
        self.attn = SelfAttention(dim, n_heads, span, n_persistent)
        self.norm_position = norm_position

    def forward(self, h: Tensor) -> Tensor:
        return residual(h, self.attn, self.norm_position)

    def step(self, h_t: Tensor, cache: KVCache | None) -> tuple[Tensor, KVCache]:
        return attention_step(h_t, self.attn, cache, self.norm_position)


class AttentionStack(nn.Module):
    """x (B, T, F) -> h (B, T, D): input projection, the layers, and for pre-norm a final
    LayerNorm (post-norm layers already end in one)."""

    causal = True  # every layer's scores are masked to steps <= t

    def __init__(self, embed: nn.Linear, layers: list[nn.Module], norm_position: str):
        super().__init__()
        self.embed, self.layers = embed, nn.ModuleList(layers)
        self.final_norm = norm_position == "pre"

    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        h = self.embed(x)
        for layer in self.layers:
            h = layer(h)
        return norm(h) if self.final_norm else h

    def step(self, x_t: Tensor, state: list[KVCache] | None) -> tuple[Tensor, list[KVCache]]:
        """x_t (B, F), one cache per layer (None before the first step) -> h_t (B, D), caches."""
        h, caches = self.embed(x_t), []
        for layer, cache in zip(self.layers, state or [None] * len(self.layers), strict=True):
            h, cache = layer.step(h, cache)
            caches.append(cache)
        return (norm(h) if self.final_norm else h), caches

    def state_size(self, length: int) -> int:
        """sum over layers of 2 D min(length, span - 1): every layer's keys and values."""
        return sum(layer.attn.cache_size(length) for layer in self.layers)


class Transformer(AttentionStack):
    """`layers` TransformerLayers of width `dim` after an input projection initialised by `init`
    (model=transformer):  x (B, T, F) -> h (B, T, D)."""

    def __init__(
        self,
        in_features: int,
        dim: int,
        heads: PositiveInt = 4,
        layers: PositiveInt = 2,
        attn_span: PositiveInt = 64,
        d_ff: PositiveInt = 64,
        norm: Literal[NORMS] = "post",
        init: str = "paper",
    ):
        check_heads(dim, heads)
        stack = [TransformerLayer(dim, heads, attn_span, d_ff, norm) for _ in range(layers)]
        super().__init__(init_linear_(nn.Linear(in_features, dim), init), stack, norm)


class AllAttention(AttentionStack):
    """`layers` AllAttentionLayers of width `dim`, `n_persistent` slots per head, after an input
    projection initialised by `init` (model=all_attention):  x (B, T, F) -> h (B, T, D)."""

    def __init__(
        self,
        in_features: int,
        dim: int,
        heads: PositiveInt = 4,
        layers: PositiveInt = 2,
        attn_span: PositiveInt = 64,
        n_persistent: NonNegativeInt = 64,
        norm: Literal[NORMS] = "post",
        init: str = "paper",
    ):
        check_heads(dim, heads)
        stack = [
            AllAttentionLayer(dim, heads, attn_span, n_persistent, norm) for _ in range(layers)
        ]
        super().__init__(init_linear_(nn.Linear(in_features, dim), init), stack, norm)
