"""Mamba's selective scan (S6; Gu & Dao 2023, arXiv 2312.00752, §3.2, Algorithm 2), three ways.

For each sequence, channel e and state index n (A < 0, Δ > 0, zero-order hold for A and Euler
for B, as Mamba's code does):

    x_t = exp(Δ_t A) ⊙ x_{t-1} + Δ_t B_t u_t      x (E, N), x_{-1} = 0             [eq. 2a]
    y_t = C_t · x_t + D ⊙ u_t                      y (E)                            [eq. 2b]

Shapes: u, delta (B, T, E), A (E, N), B, C (B, T, N), D (E,) -> y (B, T, E).

- `scan_steps`: the rule above one step at a time (`ssm_step`, which the step form of
  models/mamba.py runs too), a Python loop over time: the readable reference (CPU);
- `scan_parallel`: the same function with no loop over time, for an accelerator: per chunk of
  CHUNK steps a log-space cumulative sum, x_t = Σ_{s<=t} exp(S_t - S_s) Δ_s B_s u_s with
  S = cumsum(Δ A) (logcumsumexp of the positive and negative parts, so nothing overflows), and
  across chunks the same scan over the chunks' last states in float64 (whose sums reach T |Δ A|).
  The number of ops does not depend on T; autograd recomputes it in the backward pass
  (torch.utils.checkpoint) instead of keeping its (B, T, E, N) temporaries for every layer;
- `scan_kernel`: the compiled CPU kernel (models/kernels/selective_scan_cpu.cpp), which streams
  over time keeping the (E, N) state per sequence and recomputes chunk by chunk in the backward
  pass.

`plan` picks one per device and `model.impl`; `selective_scan` runs it. On CUDA, with the
`mamba-ssm` package installed (`pip install .[mamba]`), `fused` and `auto` run its
selective_scan_fn, the paper's kernel.
"""

import importlib.util

import torch
from torch import Tensor
from torch.nn import functional as F
from torch.utils.checkpoint import checkpoint

from longterm.models.kernels import selective_scan_cpu

CHUNK = 64  # steps per chunk of scan_parallel


def ssm_step(x: Tensor, u_t: Tensor, delta_t: Tensor, A: Tensor, B_t: Tensor, C_t: Tensor,
             D: Tensor) -> tuple[Tensor, Tensor]:  # fmt: skip
    """One step of eq. 2: the state x (B, E, N), u_t, delta_t (B, E), B_t, C_t (B, N) ->
    y_t (B, E), the new state."""
    decay = torch.exp(delta_t[..., None] * A)  # exp(Δ_t A)           (B, E, N)
    drive = (delta_t * u_t)[..., None] * B_t[:, None, :]  # Δ_t B_t u_t
    x = decay * x + drive
    y = torch.einsum("ben,bn->be", x, C_t) + D * u_t
    return y, x


def scan_steps(u, delta, A, B, C, D) -> tuple[Tensor, Tensor]:
    """y (B, T, E) and the last state (B, E, N), one step at a time (`ssm_step`)."""
    x = u.new_zeros(u.shape[0], u.shape[2], A.shape[1])
    ys = []
    for t in range(u.shape[1]):
        y, x = ssm_step(x, u[:, t], delta[:, t], A, B[:, t], C[:, t], D)
        ys.append(y)
    return torch.stack(ys, dim=1), x


def decayed_cumsum(v: Tensor, S: Tensor, dim: int) -> Tensor:
    """Σ_{s<=t} exp(S_t - S_s) v_s along `dim` for S non-increasing along it (S = cumsum of
    log-decays <= 0), in log space: exp(S_t) Σ_s exp(log v_s - S_s), the positive and negative
    parts of v apart. A part's zeros are the smallest normal number instead (their log is
    finite, so logcumsumexp's gradient is too); each adds less than that number per step."""
    tiny = torch.finfo(v.dtype).tiny
    pos = torch.logcumsumexp(torch.log(v.clamp_min(tiny)) - S, dim)
    neg = torch.logcumsumexp(torch.log((-v).clamp_min(tiny)) - S, dim)
    return torch.exp(S + pos) - torch.exp(S + neg)


def chunked_scan(u, delta, A, B, C, D, chunk: int = CHUNK) -> tuple[Tensor, Tensor]:
    """y (B, T, E) and the last state (B, E, N) with no loop over time (the module docstring)."""
    b, T, E = u.shape
    pad = -T % chunk  # zero steps after the last: Δ = 0 keeps the state, and y is cut off
    u, delta, B, C = (F.pad(t, (0, 0, 0, pad)) for t in (u, delta, B, C))
    K = (T + pad) // chunk
    log_decay = (delta[..., None] * A).view(b, K, chunk, E, -1)  # Δ A          (B, K, L, E, N)
    drive = ((delta * u)[..., None] * B[:, :, None, :]).view(b, K, chunk, E, -1)  # Δ B u
    S = log_decay.cumsum(dim=2)
    within = decayed_cumsum(drive, S, dim=2)  # states from x = 0 at each chunk's start
    # The state after chunk k: X_k = exp(S_k,last) X_{k-1} + within_k,last, in float64.
    ends = decayed_cumsum(within[:, :, -1].double(), S[:, :, -1].double().cumsum(dim=1), dim=1)
    starts = F.pad(ends[:, :-1], (0, 0, 0, 0, 1, 0)).to(u.dtype)  # X_{k-1}, X_{-1} = 0
    x = within + torch.exp(S) * starts[:, :, None]
    y = torch.einsum("bklen,bkln->bkle", x, C.view(b, K, chunk, -1)).reshape(b, K * chunk, E)
    return (y + D * u)[:, :T], x.reshape(b, K * chunk, E, -1)[:, T - 1]


def scan_parallel(u, delta, A, B, C, D) -> tuple[Tensor, Tensor]:
    """`chunked_scan`, recomputed in the backward pass when gradients are taken."""
    if torch.is_grad_enabled() and any(t.requires_grad for t in (u, delta, A, B, C, D)):
        return checkpoint(chunked_scan, u, delta, A, B, C, D, use_reentrant=False)
    return chunked_scan(u, delta, A, B, C, D)


class KernelScan(torch.autograd.Function):
    """y (B, T, E) and the last state (B, E, N) from the compiled CPU kernel; gradients for
    u, delta, A, B, C and D (none through the last state)."""

    @staticmethod
    def forward(ctx, u, delta, A, B, C, D):
        y, chk = selective_scan_cpu.forward(u, delta, A, B, C, D)
        ctx.save_for_backward(u, delta, A, B, C, D, chk)
        last = chk[:, -1, :, : u.shape[2]].transpose(1, 2).contiguous()  # (B, E, N)
        ctx.mark_non_differentiable(last)
        return y, last

    @staticmethod
    def backward(ctx, gy, _):
        return selective_scan_cpu.backward(gy, *ctx.saved_tensors)


def scan_kernel(u, delta, A, B, C, D) -> tuple[Tensor, Tensor]:
    """The compiled CPU kernel (models/kernels/selective_scan_cpu.cpp)."""
    dtype = u.dtype
    return KernelScan.apply(*(t.to(dtype) for t in (u, delta, A, B, C, D)))


def scan_mamba_ssm(u, delta, A, B, C, D) -> tuple[Tensor, Tensor]:
    """mamba-ssm's CUDA kernel (selective_scan_fn), in its layout (B, E, T) and (B, N, T)."""
    from mamba_ssm.ops.selective_scan_interface import selective_scan_fn

    t = (u.transpose(1, 2), delta.transpose(1, 2), A, B.transpose(1, 2), C.transpose(1, 2), D)
    y, last = selective_scan_fn(*(x.contiguous() for x in t), return_last_state=True)
    return y.transpose(1, 2), last


BACKENDS = {
    "steps": scan_steps,
    "parallel": scan_parallel,
    "kernel": scan_kernel,
    "mamba_ssm": scan_mamba_ssm,
}


def has_mamba_ssm() -> bool:
    return importlib.util.find_spec("mamba_ssm") is not None


def plan(impl: str, device: torch.device) -> str:
    """The backend (a key of BACKENDS) that `model.impl=impl` runs on `device`: on the CPU the
    step loop for `reference`, else the compiled kernel; on CUDA with mamba-ssm installed its
    kernel for `fused` and `auto`; elsewhere (CUDA without it, PyTorch's meta device that
    counts ops, any other) the parallel form."""
    if device.type == "cpu":
        return "steps" if impl == "reference" else "kernel"
    if device.type == "cuda" and impl != "reference" and has_mamba_ssm():
        return "mamba_ssm"
    return "parallel"


def selective_scan(u: Tensor, delta: Tensor, A: Tensor, B: Tensor, C: Tensor, D: Tensor,
                   impl: str = "auto") -> tuple[Tensor, Tensor]:  # fmt: skip
    """y (B, T, E) and the last state (B, E, N) of eq. 2 from x_{-1} = 0: u, delta (B, T, E)
    (delta > 0, after the softplus), A (E, N) (< 0), B, C (B, T, N), D (E,)."""
    return BACKENDS[plan(impl, u.device)](u, delta, A, B, C, D)
