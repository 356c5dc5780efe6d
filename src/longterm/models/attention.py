"""Causal multi-head attention with a relative position term and persistent slots, shared by the
transformer, all-attention and feedback models.

The score of query step i on context step j adds a learned embedding of the offset i - j to the
key, as in the adaptive-span code (Sukhbaatar et al. 2019a, "Adaptive Attention Span in
Transformers"): s_ij = q_i · (k_j + p_{i-j}), one embedding per head for each offset the span
allows. Persistent slots (Sukhbaatar et al. 2019b, "Augmenting Self-attention with Persistent
Memory") are N key/value pairs per head that depend on no input; they enter the same
softmax as the context and carry no position term:

    a_i = softmax(([q_i · (k_j + p_{i-j})]_j  ++  [q_i · m^k_n]_n) / sqrt(d_h))
    y_i = sum_j a_ij v_j + sum_n a_in m^v_n

Shapes: queries q (B, H, Tq, d_h), keys and values k, v (B, H, Tk, d_h), position embeddings
pos (H, span, d_h), persistent m^k, m^v (H, N, d_h). Layers normalise their inputs with
`norm`, a LayerNorm without gain or bias (see models/transformer.py for why).
"""

import math

import torch
from torch import Tensor
from torch.nn import functional as F


def norm(x: Tensor) -> Tensor:
    """LayerNorm over the last dimension with no learned gain or bias."""
    return F.layer_norm(x, x.shape[-1:])


def heads(x: Tensor, n_heads: int) -> Tensor:
    """(B, T, D) -> (B, H, T, D / H)."""
    return x.unflatten(-1, (n_heads, -1)).transpose(1, 2)


def position_scores(q: Tensor, pos: Tensor) -> Tensor:
    """q_i · p_o for every query and every offset o:  (B, H, Tq, d_h), (H, span, d_h) ->
    (B, H, Tq, span)."""
    return torch.einsum("bhqd,hod->bhqo", q, pos)


def relative_bias(q: Tensor, pos: Tensor, q_steps: Tensor, k_steps: Tensor) -> Tensor:
    """q_i · p_{i-j} where 0 <= i - j < span, -inf where step j is in i's future or out of its
    span:  q (B, H, Tq, d_h), steps (Tq,), (Tk,) -> (B, H, Tq, Tk)."""
    span = pos.shape[1]
    offset = q_steps[:, None] - k_steps[None, :]  # i - j, (Tq, Tk)
    qp = position_scores(q, pos)
    bias = qp.gather(-1, offset.clamp(0, span - 1).expand(*qp.shape[:2], -1, -1))
    return bias.masked_fill((offset < 0) | (offset >= span), float("-inf"))


def attend(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    bias: Tensor,
    mem_k: Tensor | None = None,
    mem_v: Tensor | None = None,
) -> Tensor:
    """One softmax over the context (scores q·k + bias) and the persistent slots (q·m^k, no
    bias), scaled by 1/sqrt(d_h):  -> (B, H, Tq, d_h)."""
    if mem_k is not None and mem_k.shape[1] > 0:
        batch = (q.shape[0], -1, -1, -1)
        k = torch.cat([k, mem_k.expand(*batch)], dim=2)
        v = torch.cat([v, mem_v.expand(*batch)], dim=2)
        bias = F.pad(bias, (0, mem_k.shape[1]))  # persistent slots have no position
    scale = 1.0 / math.sqrt(q.shape[-1])
    return F.scaled_dot_product_attention(q, k, v, attn_mask=bias * scale, scale=scale)


def check_heads(dim: int, n_heads: int) -> None:
    """Heads split the width evenly: a constructor's check, reported before training."""
    if dim % n_heads:
        raise ValueError(f"heads={n_heads} must divide dim={dim}")
