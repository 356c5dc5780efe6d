"""The paper's per-step layer and pooling in one streaming pass (Raffel & Ellis 2015, §2.2).

    h_t = LReLU(W x_t + b);  e_t = tanh(w . h_t + b_w);  c = sum_t softmax(e)_t h_t   [eq. 1]
    or c = mean_t h_t                                                                   [eq. 2]

`encode_pool` computes c (B, D) from x (B, T, F) without keeping the states h (B, T, D): the time
axis is walked with an online (running-max) softmax that carries O(B D) from step to step, and the
backward pass recomputes the states instead of storing them. What is kept for the backward is the
input and one score per step, O(B T (F + 1)), against several (B, T, D) tensors for the readable
path (StepEncoder + pooling.py), which stays the reference these kernels are tested against.

Two backends compute the same function:
- `cpu`: compiled per-sequence loops (models/fused_cpu.py), for CPU tensors;
- `chunked`: PyTorch ops over chunks of `chunk` steps, for any device (CUDA among them).
"""

import torch
from torch import Tensor
from torch.nn import functional as F

from longterm.models import fused_cpu


def chunked_forward(x, keep, W, b, slope, w, bw, attention, chunk):
    """c (B, D), scores e (B, T), running max m (B,), softmax denominator s (B,)."""
    B, T, _ = x.shape
    c = x.new_zeros(B, W.shape[0])
    e = x.new_zeros(B, T)
    m = x.new_full((B,), float("-inf"))
    s = x.new_zeros(B)
    for t0 in range(0, T, chunk):
        h = F.leaky_relu(F.linear(x[:, t0 : t0 + chunk], W, b), slope)
        if attention:
            e[:, t0 : t0 + chunk] = torch.tanh(h @ w + bw)
        ec = e[:, t0 : t0 + chunk].masked_fill(~keep[:, t0 : t0 + chunk], float("-inf"))
        m_new = torch.maximum(m, ec.amax(dim=1))
        r = torch.exp(m - m_new).nan_to_num(0.0)  # 0 while nothing has been kept
        p = torch.exp(ec - m_new.unsqueeze(1)).nan_to_num(0.0)
        c = c * r.unsqueeze(1) + torch.einsum("bt,btd->bd", p, h)
        s, m = s * r + p.sum(dim=1), m_new
    return c / s.unsqueeze(1), e, m, s


def chunked_backward(g, x, keep, W, b, slope, w, c, alpha, q, attention, chunk):
    """Gradients for x, W (D, F), b, w, b_w, recomputing each chunk's states (see fused_cpu)."""
    gc = (g * c).sum(dim=1, keepdim=True)
    dx = torch.zeros_like(x)
    dW, db, dw, dbw = torch.zeros_like(W), torch.zeros_like(b), torch.zeros_like(w), 0.0
    for t0 in range(0, x.shape[1], chunk):
        xc, a, dz = x[:, t0 : t0 + chunk], alpha[:, t0 : t0 + chunk], q[:, t0 : t0 + chunk]
        u = F.linear(xc, W, b)
        h = F.leaky_relu(u, slope)
        if attention:
            dz = dz * ((h @ g.unsqueeze(-1)).squeeze(-1) - gc)
            dw += torch.einsum("bt,btd->d", dz, h)
            dbw += dz.sum()
        dh = a.unsqueeze(-1) * g.unsqueeze(1) + dz.unsqueeze(-1) * w
        du = torch.where(u > 0, dh, slope * dh)
        dW += torch.einsum("btd,btf->df", du, xc)
        db += du.sum(dim=(0, 1))
        dx[:, t0 : t0 + chunk] = du @ W
    return dx, dW, db, dw, dbw


def arrays(*tensors: Tensor):
    """Zero-copy numpy views of CPU tensors, for the compiled kernels."""
    return tuple(t.detach().numpy() for t in tensors)


class EncodePool(torch.autograd.Function):
    """c (B, D) from x (B, T, F); see the module docstring. Gradients for x and every parameter."""

    @staticmethod
    def forward(ctx, x, keep, W, b, w, bw, slope, attention, backend, chunk):
        if backend == "cpu":
            xa, ka, Wa, ba, wa = arrays(x, keep, W.t().flatten(), b, w)
            kernels = fused_cpu.kernels(W.shape[1], W.shape[0])
            outputs = kernels.forward(xa, ka, Wa, ba, slope, wa, bw.item(), attention)
            c, e, m, s = (torch.from_numpy(a) for a in outputs)
        else:
            c, e, m, s = chunked_forward(x, keep, W, b, slope, w, bw, attention, chunk)
        ctx.save_for_backward(x, keep, W, b, w, c, e, m, s)
        ctx.config = slope, attention, backend, chunk
        return c

    @staticmethod
    def backward(ctx, g):
        x, keep, W, b, w, c, e, m, s = ctx.saved_tensors
        slope, attention, backend, chunk = ctx.config
        # The pooling weights, and for attention dalpha-to-dz factor alpha (1 - e^2): whole (B, T)
        # tensor ops, so the kernels need no exp or tanh.
        alpha = torch.exp(e - m.unsqueeze(1)) / s.unsqueeze(1) * keep
        q = alpha * (1 - e * e) if attention else torch.zeros_like(alpha)
        if backend == "cpu":
            args = arrays(g.contiguous(), x, keep, W.t().flatten(), b, w, c, alpha, q)
            need_dx = ctx.needs_input_grad[0]
            kernels = fused_cpu.kernels(W.shape[1], W.shape[0])
            outputs = kernels.backward(*args[:5], slope, *args[5:], attention, need_dx)
            grads = (torch.as_tensor(a) for a in outputs)
            dx, dWt, db, dw, dbw = grads
            dW = dWt.view(W.shape[1], W.shape[0]).t()
        else:
            dx, dW, db, dw, dbw = chunked_backward(
                g, x, keep, W, b, slope, w, c, alpha, q, attention, chunk
            )
        dbw = torch.as_tensor(dbw, dtype=x.dtype, device=x.device).reshape(1)
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
    chunk: int = 64,
) -> Tensor:
    """x (B, T, F), keep (B, T) bool or None (every step counts), W (D, F), b (D,), and w (D,) or
    (1, D) and b_w (1,) for attention or None for the mean -> c (B, D).
    `backend`: auto (cpu for CPU tensors, else chunked) | cpu | chunked."""
    attention = w is not None
    if backend == "auto":
        backend = "cpu" if x.device.type == "cpu" else "chunked"
    if keep is None:
        keep = torch.ones(x.shape[:2], dtype=torch.bool, device=x.device)
    if not attention:  # the mean has no score; zeros keep one signature for the kernels
        w, bw = W.new_zeros(W.shape[0]), W.new_zeros(1)
    args = (x.contiguous(), keep.contiguous(), W, b, w.reshape(-1), bw.reshape(1))
    return EncodePool.apply(*args, slope, attention, backend, chunk)
