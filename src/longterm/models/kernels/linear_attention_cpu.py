"""The CPU kernels of the linear-attention recurrences, gated linear attention's (models/gla.py)
and DeltaNet's delta rule (models/deltanet.py), from linear_attention_cpu.cpp.

linear_attention_cpu.cpp holds the kernels and says how they work. They are built as the paper's
model's kernels are (models/kernels/fused_cpu.py: the machine's compiler, -march=native, cached
under KERNEL_DIR by a hash of the source, flags and CPU; OpenMP over whole sequence-heads, so the
results do not depend on the number of threads), once per kernel, d_k, d_v and dtype, and called
through ctypes. Both stream over time keeping one (d_k, d_v) state per sequence-head and store it
only at the start of every chunk of L steps (chk), from which the backward pass recomputes the
chunk.

Shapes: q (scaled by 1 / sqrt(d_k) here), k (B, T, H, d_k), v (B, T, H, d_v) and the gate, log
alpha (B, T, H, d_k) for GLA or beta (B, T, H) for the delta rule -> o (B, T, H, d_v); chk
(B, H, T / L + 1, d_k, d_v), the last of them the state after step T.
"""

import ctypes
from functools import cache

import torch
from torch import Tensor

from longterm.models.kernels.fused_cpu import REALS, compiler, load, ptr
from longterm.models.kernels.selective_scan_cpu import FLAGS as SCAN_FLAGS
from longterm.models.kernels.selective_scan_cpu import SOURCE as SCAN_SOURCE
from longterm.models.kernels.selective_scan_cpu import threads

SOURCE = SCAN_SOURCE.with_name("linear_attention_cpu.cpp")
KINDS = {"gla": [], "delta": ["-DDELTA_RULE"]}  # each kernel's build flags
# The selective scan's flags at -O2: GCC's -O3 made these loops several times slower (bench/
# kernels.py measures both).
FLAGS = ["-O2" if flag == "-O3" else flag for flag in SCAN_FLAGS]


def kernel_runs(impl: str, u: Tensor) -> bool:
    """Whether `model.impl=impl` runs the compiled kernel for inputs u: for float32 or float64 CPU
    tensors unless impl is `reference` (the chunked form, which runs everywhere else: CUDA,
    PyTorch's meta device that counts ops)."""
    return u.device.type == "cpu" and u.dtype in REALS and impl != "reference"


@cache
def library(name: str, d_k: int, d_v: int, dtype: torch.dtype) -> ctypes.CDLL:
    """The kernel `name` (gla or delta) for one head's d_k, d_v and dtype (float32 or float64),
    built once per machine and source and loaded."""
    if dtype not in REALS:
        raise TypeError(f"the {name} CPU kernel takes float32 or float64, not {dtype}")
    sizes = [f"-DDK={d_k}", f"-DDV={d_v}", f"-DREAL={REALS[dtype]}", *KINDS[name]]
    command = [compiler(), *FLAGS, *sizes]
    lib = load(command, f"{name}_{d_k}x{d_v}_{REALS[dtype]}", SOURCE, f"the {name} CPU kernel")
    P, I64, INT = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int
    lib.forward.argtypes = [I64, I64, I64, *[P] * 4, INT, P, P]
    lib.backward.argtypes = [I64, I64, I64, *[P] * 6, INT, *[P] * 4]
    lib.forward.restype = lib.backward.restype = None
    lib.chunk_length.argtypes, lib.chunk_length.restype = [], ctypes.c_int
    return lib


def forward(name: str, q: Tensor, k: Tensor, v: Tensor, gate: Tensor) -> tuple[Tensor, Tensor]:
    """o (B, T, H, d_v) and the chunk starts chk (B, H, K + 1, d_k, d_v)."""
    (b, T, H, d_k), d_v = q.shape, v.shape[-1]
    q, k, v, gate = (t.contiguous() for t in (q, k, v, gate))
    lib = library(name, d_k, d_v, q.dtype)
    o = v.new_empty(b, T, H, d_v)
    chk = v.new_empty(b, H, -(-T // lib.chunk_length()) + 1, d_k, d_v)
    lib.forward(b, T, H, *map(ptr, (q, k, v, gate)), threads(b * H), ptr(o), ptr(chk))
    return o, chk


def backward(name: str, go: Tensor, q: Tensor, k: Tensor, v: Tensor, gate: Tensor, chk: Tensor):
    """dq, dk, dv, dgate: the gradients of sum(go * o), each the shape of its input."""
    (b, T, H, d_k), d_v = q.shape, v.shape[-1]
    go, q, k, v, gate = (t.contiguous() for t in (go, q, k, v, gate))
    grads = [torch.empty_like(t) for t in (q, k, v, gate)]
    library(name, d_k, d_v, q.dtype).backward(
        b, T, H, *map(ptr, (go, q, k, v, gate, chk)), threads(b * H), *map(ptr, grads)
    )
    return tuple(grads)


class KernelRecurrence(torch.autograd.Function):
    """o (B, T, H, d_v) from the compiled kernel `name`; gradients for q, k, v and the gate."""

    @staticmethod
    def forward(ctx, name: str, q: Tensor, k: Tensor, v: Tensor, gate: Tensor) -> Tensor:
        o, chk = forward(name, q, k, v, gate)
        ctx.name = name
        ctx.save_for_backward(q, k, v, gate, chk)
        return o

    @staticmethod
    def backward(ctx, go: Tensor) -> tuple[Tensor | None, ...]:
        return None, *backward(ctx.name, go, *ctx.saved_tensors)


def recurrence(name: str, q: Tensor, k: Tensor, v: Tensor, gate: Tensor) -> Tensor:
    """o_t = (q_t / sqrt(d_k)) S_t for every step, by the compiled kernel `name` (gla or delta):
    CPU tensors, computed in q's dtype."""
    dtype = q.dtype
    scaled = q * q.shape[-1] ** -0.5
    return KernelRecurrence.apply(name, scaled, k.to(dtype), v.to(dtype), gate.to(dtype))


def gla_kernel(q: Tensor, k: Tensor, v: Tensor, log_alpha: Tensor) -> Tensor:
    """GLA: q, k, log_alpha (B, T, H, d_k), v (B, T, H, d_v) -> o (B, T, H, d_v)."""
    return recurrence("gla", q, k, v, log_alpha)


def delta_kernel(q: Tensor, k: Tensor, v: Tensor, beta: Tensor) -> Tensor:
    """The delta rule: q, k (B, T, H, d_k), v (B, T, H, d_v), beta (B, T, H) -> o (B, T, H,
    d_v)."""
    return recurrence("delta", q, k, v, beta)
