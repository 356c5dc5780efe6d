"""The paper's per-step layer and pooling in one pass (Raffel & Ellis 2015, §2.2).

    h_t = LReLU(W x_t + b);  e_t = tanh(w . h_t + b_w);  c = sum_t softmax(e)_t h_t   [eq. 1]
    or c = mean_t h_t                                                                   [eq. 2]

`encode_pool` computes c (B, D) from x (B, T, F), walking the time axis in steps or chunks with a
softmax that carries O(B D) from one to the next. The score is bounded (tanh, or 0 for the mean),
so exp(e_t) cannot overflow and no running maximum is needed on any backend. What the backward pass
needs is the input, the pooling weight alpha_t and, for attention, alpha_t (1 - e_t^2) per step,
O(B T (F + 2)); the states h are recomputed, except in a single chunk, where they are kept. The
readable path (StepEncoder + models/readouts.py) keeps several (B, T, D) tensors and stays the
reference these kernels are tested against.

Two backends compute the same function:
- `cpu`: vectorised C++ loops per sequence (models/kernels/fused_cpu.cpp), for CPU tensors;
- `chunked`: whole-tensor PyTorch ops over chunks of `chunk` steps, for any device (CUDA among
  them); a chunk of T steps or more is one pass with no loop over time.

`plan` is the one rule that picks the backend and the chunk per device, at forward time (a model
is built on the CPU and moved later):
- on the CPU, the compiled kernels, whatever `model.impl` says: the fewest ops and the least
  memory there;
- elsewhere (CUDA, or PyTorch's `meta` device that counts ops), `model.impl=auto`: the fewest ops
  per update that fits memory, with no loop over time while the states (B, T, D) fit CHUNK_BYTES
  (at every length of the paper: 100 x 11000 x 100 float32 is 0.44 GB). Attention: the whole
  sequence as one chunk, which issues fewer aten ops per update than the reference
  (models/ops.py counts them; tests/test_ops.py) and keeps one (B, T, D) tensor for the backward
  pass where the reference keeps several. The mean: the reference itself (`reference`), whose
  mean is cheaper still and keeps one (B, T, D) tensor too. States beyond CHUNK_BYTES: the fewest
  equal chunks that fit. The op count is the same at every T below that size;
- elsewhere, `model.impl=fused`: chunks of STREAM_CHUNK steps, the least memory at any T
  (O(B STREAM_CHUNK D)), at the price of ops that grow with T.
"""

import math
from functools import reduce

import torch
from torch import Tensor
from torch.nn import functional as F

from longterm.models.kernels import fused_cpu

STREAM_CHUNK = 64  # steps per chunk of model.impl=fused off the CPU
CHUNK_BYTES = 2**30  # the largest (B, chunk, D) tensor of model.impl=auto off the CPU (1 GiB)


def plan(impl: str, x: Tensor, D: int, attention: bool) -> tuple[str, int]:
    """How the feedforward model runs on x (B, T, F) with states of width D under `impl`
    (model.impl: auto or fused) and attention or mean pooling: a backend of `encode_pool` (cpu or
    chunked) and its chunk length, or `reference` (StepEncoder + models/readouts.py as written). The
    module docstring gives the rule."""
    if x.device.type == "cpu":
        return "cpu", STREAM_CHUNK
    if impl == "fused":
        return "chunked", STREAM_CHUNK
    B, T, _ = x.shape
    chunks = math.ceil(B * T * D * x.element_size() / CHUNK_BYTES)
    if chunks <= 1:
        return ("chunked", T) if attention else ("reference", T)
    return "chunked", math.ceil(T / chunks)


def pieces(t: Tensor | None, chunk: int, n: int = 1) -> tuple:
    """t (B, T, ...) in chunks of `chunk` steps (views); t itself when one chunk holds it; None
    as n Nones."""
    if t is None:
        return (None,) * n
    return (t,) if chunk >= t.shape[1] else t.split(chunk, dim=1)


def chunk_forward(x, keep, W, b, slope, w, bw, attention):
    """One chunk of t steps: sum_t p_t h_t (B, D), the scores e (B, t) (None for the mean) and
    p (B, t), where p_t = exp(e_t) on kept steps (keep None: every step) and 0 elsewhere. The
    score is bounded (tanh, or 0 for the mean), so exp needs no running maximum and the chunks'
    sums add up directly."""
    h = F.leaky_relu(F.linear(x, W, b), slope)
    if attention:
        e = torch.tanh(F.linear(h, w.unsqueeze(0), bw).squeeze(-1))
        p = torch.exp(e) if keep is None else torch.exp(e) * keep
    else:
        e = None
        p = x.new_ones(x.shape[:2]) if keep is None else keep.to(x.dtype)
    return torch.bmm(p.unsqueeze(1), h).squeeze(1), e, p, h


def chunked_forward(x, keep, W, b, slope, w, bw, attention, chunk):
    """c (B, D), scores e (B, T) (None for the mean), pooling weights alpha (B, T), and the
    states h (B, T, D) when one chunk holds the whole sequence (kept for the backward pass, which
    then recomputes nothing; no larger than a chunk's temporaries), else None."""
    xs = pieces(x, chunk)
    parts = [
        chunk_forward(xc, kc, W, b, slope, w, bw, attention)
        for xc, kc in zip(xs, pieces(keep, chunk, len(xs)), strict=True)
    ]
    pooled, scores, weights, states = zip(*parts, strict=True)
    if len(parts) == 1:
        (p,), (e,), (h,) = weights, scores, states
    else:
        p, h = torch.cat(weights, dim=1), None
        e = torch.cat(scores, dim=1) if attention else None
    s = p.sum(dim=1, keepdim=True)
    return reduce(torch.add, pooled) / s, e, p / s, h


def chunk_backward(g, gc, x, W, b, slope, w, alpha, q, need_dx, h=None):
    """Gradients of sum(g * c) from one chunk, for x (or None), W, b, and w and b_w (None for the
    mean, q None), from its states h (recomputed when None): dc/dh_t = alpha_t g, and for
    attention dL/dz_t = q_t (g . h_t - g . c) for the score's pre-activation z_t = w . h_t + b_w."""
    if h is None:
        h = F.leaky_relu(F.linear(x, W, b), slope)
    dh = alpha.unsqueeze(-1) * g.unsqueeze(1)
    dw = dbw = None
    if q is not None:
        dz = q * (torch.bmm(h, g.unsqueeze(-1)).squeeze(-1) - gc)
        dh = torch.addcmul(dh, dz.unsqueeze(-1), w)
        dw, dbw = dz.flatten() @ h.flatten(0, 1), dz.sum().reshape(1)
    # dh where h > 0, else slope dh (h > 0 exactly where W x + b > 0, since slope >= 0)
    du = torch.ops.aten.leaky_relu_backward(dh, h, slope, True)
    dW = du.flatten(0, 1).t() @ x.flatten(0, 1)
    dx = du @ W if need_dx else None
    return dx, dW, du.sum(dim=(0, 1)), dw, dbw


def chunked_backward(g, x, W, b, slope, w, c, alpha, q, h, chunk, need_dx):
    """Gradients for x (or None), W (D, F), b, and w and b_w (None for the mean), chunk by chunk
    (from the states h when the forward pass kept them)."""
    gc = None if q is None else (g * c).sum(dim=1, keepdim=True)
    if h is not None:
        return chunk_backward(g, gc, x, W, b, slope, w, alpha, q, need_dx, h)
    xs = pieces(x, chunk)
    parts = [
        chunk_backward(g, gc, xc, W, b, slope, w, ac, qc, need_dx)
        for xc, ac, qc in zip(xs, pieces(alpha, chunk), pieces(q, chunk, len(xs)), strict=True)
    ]
    dx, *params = zip(*parts, strict=True)
    dx = None if not need_dx else dx[0] if len(parts) == 1 else torch.cat(dx, dim=1)
    return (dx, *(None if d[0] is None else reduce(torch.add, d) for d in params))


def cpu_forward(x, keep, W, b, slope, w, bw, attention):
    """c (B, D), pooling weights alpha (B, T) and, for attention, q = alpha (1 - e^2) (B, T)
    (None for the mean) from the compiled kernels."""
    W_t = W.detach().t().contiguous().flatten()
    c, alpha, q = fused_cpu.forward(x, keep, W_t, b, slope, w, bw.item(), attention)
    return c, alpha, q if attention else None


def cpu_backward(g, x, keep, W, b, slope, w, c, alpha, q, need_dx):
    """Gradients for x (None unless need_dx), W, b, w and b_w from the compiled kernels."""
    attention = q is not None
    q = q if attention else alpha  # the mean has no score: the kernel does not read q
    W_t = W.detach().t().contiguous().flatten()
    args = (g.contiguous(), x, keep, W_t, b, slope, w, c, alpha, q, attention, need_dx)
    dx, dW_t, db, dw, dbw = fused_cpu.backward(*args)
    return dx, dW_t.view(W.shape[1], W.shape[0]).t(), db, dw, dbw


class EncodePool(torch.autograd.Function):
    """c (B, D) from x (B, T, F); see the module docstring. Gradients for x and every parameter."""

    @staticmethod
    def forward(ctx, x, keep, W, b, w, bw, slope, attention, backend, chunk):
        # For attention, the dalpha-to-dz factor q = alpha (1 - e^2): the backward needs no e.
        h = None
        if backend == "cpu":
            keep = torch.ones(x.shape[:2], dtype=torch.bool) if keep is None else keep
            c, alpha, q = cpu_forward(x, keep, W, b, slope, w, bw, attention)
        else:
            c, e, alpha, h = chunked_forward(x, keep, W, b, slope, w, bw, attention, chunk)
            q = alpha * (1 - e * e) if attention else None
        ctx.save_for_backward(x, keep, W, b, w, c, alpha, q, h)
        ctx.config = slope, backend, chunk
        return c

    @staticmethod
    def backward(ctx, g):
        x, keep, W, b, w, c, alpha, q, h = ctx.saved_tensors
        slope, backend, chunk = ctx.config
        need_dx = ctx.needs_input_grad[0]
        if backend == "cpu":
            grads = cpu_backward(g, x, keep, W, b, slope, w, c, alpha, q, need_dx)
        else:
            grads = chunked_backward(g, x, W, b, slope, w, c, alpha, q, h, chunk, need_dx)
        dx, dW, db, dw, dbw = grads
        return dx, None, dW, db, dw, dbw, None, None, None, None


def encode_pool(
    x: Tensor,
    keep: Tensor | None,
    W: Tensor,
    b: Tensor,
    slope: float,
    w: Tensor | None = None,
    bw: Tensor | None = None,
    backend: str = "auto",
    chunk: int = STREAM_CHUNK,
) -> Tensor:
    """x (B, T, F), keep (B, T) bool or None (every step counts), W (D, F), b (D,), and w (D,) or
    (1, D) and b_w (1,) for attention or None for the mean -> c (B, D).
    `backend`: cpu | chunked (in chunks of `chunk` steps) | auto (cpu for CPU tensors, else
    chunked); models/feedforward.py asks `plan` for both."""
    attention = w is not None
    if backend == "auto":
        backend = "cpu" if x.device.type == "cpu" else "chunked"
    if not attention:  # the mean has no score; zeros keep one signature for the kernels
        w, bw = W.new_zeros(W.shape[0]), W.new_zeros(1)
    keep = None if keep is None else keep.contiguous()
    args = (x.contiguous(), keep, W, b, w.reshape(-1), bw.reshape(1))
    return EncodePool.apply(*args, slope, attention, backend, chunk)


class EncodePoolMembers(torch.autograd.Function):
    """c_m (B, D) of M models of one shape on the CPU, each from its own x_m (B, T_m, F), in one
    call of the compiled kernels per pass (fused_cpu.forward_members, backward_members): each c_m
    and each gradient is EncodePool's of that model alone, to the bit (the same kernel code per
    sequence, the same sums). Inputs: slope, attention, M, then the M xs, keeps, Ws, bs, ws and
    bws; x_m needs no gradient (a pack's data)."""

    @staticmethod
    def forward(ctx, slope, attention, M, *tensors):
        xs, keeps, Ws, bs, ws, bws = (tensors[k * M : (k + 1) * M] for k in range(6))
        W_ts = [W.detach().t().contiguous().flatten() for W in Ws]
        bw_values = [bw.item() for bw in bws]
        outs = fused_cpu.forward_members(xs, keeps, W_ts, bs, slope, ws, bw_values, attention)
        cs, alphas, qs = (list(t) for t in zip(*outs, strict=True))
        ctx.save_for_backward(*xs, *keeps, *Ws, *bs, *ws, *cs, *alphas, *qs)
        ctx.config = slope, attention, M
        return tuple(cs)

    @staticmethod
    def backward(ctx, *gs):
        slope, attention, M = ctx.config
        saved = ctx.saved_tensors
        xs, keeps, Ws, bs, ws, cs, alphas, qs = (saved[k * M : (k + 1) * M] for k in range(8))
        qs = qs if attention else alphas  # the mean has no score: the kernel does not read q
        gs = [
            torch.zeros_like(c) if g is None else g.contiguous()
            for g, c in zip(gs, cs, strict=True)
        ]
        W_ts = [W.detach().t().contiguous().flatten() for W in Ws]
        args = (gs, xs, keeps, W_ts, bs, slope, ws, cs, alphas, qs, attention)
        grads = fused_cpu.backward_members(*args)
        dWs = [
            dW_t.view(W.shape[1], W.shape[0]).t() for (dW_t, *_), W in zip(grads, Ws, strict=True)
        ]
        dbs, dws, dbws = ([g[k] for g in grads] for k in (1, 2, 3))
        return (None, None, None, *[None] * 2 * M, *dWs, *dbs, *dws, *[d.reshape(1) for d in dbws])


def encode_pool_members(
    xs: list[Tensor],
    keeps: list[Tensor | None],
    Ws: list[Tensor],
    bs: list[Tensor],
    slope: float,
    ws: list[Tensor] | None = None,
    bws: list[Tensor] | None = None,
) -> list[Tensor]:
    """`encode_pool(x_m, keep_m, W_m, b_m, slope, w_m, b_w_m)` of each of M models of one shape,
    on the CPU, in one call of the compiled kernels per pass (EncodePoolMembers); `ws` and `bws`
    None for the mean."""
    attention = ws is not None
    if not attention:  # as encode_pool: zeros keep one signature for the kernels
        ws, bws = [W.new_zeros(W.shape[0]) for W in Ws], [W.new_zeros(1) for W in Ws]
    keeps = [
        torch.ones(x.shape[:2], dtype=torch.bool) if k is None else k.contiguous()
        for x, k in zip(xs, keeps, strict=True)
    ]
    flat = [x.contiguous() for x in xs] + keeps + list(Ws) + list(bs)
    flat += [w.reshape(-1) for w in ws] + [bw.reshape(1) for bw in bws]
    return list(EncodePoolMembers.apply(slope, attention, len(xs), *flat))
