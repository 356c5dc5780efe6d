"""The CPU kernel of Mamba's selective scan (models/kernels/selective_scan.py), from
selective_scan_cpu.cpp.

selective_scan_cpu.cpp holds the kernel and says how it works. It is built as the fused kernels of
the paper's model are (models/kernels/fused_cpu.py: the machine's compiler, -march=native, cached
under KERNEL_DIR by a hash of the source, flags and CPU; OpenMP on PyTorch's own thread pool, over
whole sequences, so the results do not depend on the number of threads), for one d_state N, number
of channels E and dtype, and called through ctypes. E is padded here to whole vectors (a multiple of
PAD channels) with channels of zero input and zero decay rate, which stay zero.

Shapes: u, delta (B, T, E), A (E, N), B, C (B, T, N), D (E,) -> y (B, T, E) and the states at
the chunk starts chk (B, T / L + 1, N, E_padded), the last of them the state after step T.
"""

import ctypes
from functools import cache

import numpy as np
import torch
from torch import Tensor
from torch.nn import functional as F

from longterm.models.kernels.fused_cpu import FLAGS as FUSED_FLAGS
from longterm.models.kernels.fused_cpu import REALS, compiler, load, ptr
from longterm.models.kernels.fused_cpu import SOURCE as FUSED_SOURCE

SOURCE = FUSED_SOURCE.with_name("selective_scan_cpu.cpp")
PAD = 16  # channels per vector of the widest build (AVX-512, float32)
# Not -ffp-contract=fast: a fused multiply-add in one place and not in the other would make the
# backward pass's recomputed states differ from the forward pass's in the last bit.
FLAGS = [f for f in FUSED_FLAGS if not f.startswith("-ffp-contract")]


@cache
def library(channels: int, d_state: int, dtype: torch.dtype) -> ctypes.CDLL:
    """The kernel for E = channels (a multiple of PAD), N = d_state and dtype (float32 or
    float64), built once per machine and source and loaded."""
    if dtype not in REALS:
        raise TypeError(f"the selective scan's CPU kernel takes float32 or float64, not {dtype}")
    double = int(dtype == torch.float64)
    sizes = [f"-DE={channels}", f"-DN={d_state}", f"-DREAL={REALS[dtype]}"]
    command = [compiler(), *FLAGS, *sizes, f"-DREAL_IS_DOUBLE={double}"]
    name = f"selective_scan_{channels}x{d_state}_{REALS[dtype]}"
    lib = load(command, name, SOURCE, "the selective scan's CPU kernel")
    P, I64, INT = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int
    lib.forward.argtypes = [I64, I64, *[P] * 6, INT, P, P]
    lib.backward.argtypes = [I64, I64, *[P] * 8, INT, *[P] * 6]
    lib.forward.restype = lib.backward.restype = None
    lib.chunk_length.argtypes, lib.chunk_length.restype = [], ctypes.c_int
    return lib


def threads(batch: int) -> int:
    """PyTorch's threads, no more than there are sequences (an idle thread only waits)."""
    return max(1, min(torch.get_num_threads(), batch))


def padded(t: Tensor, channels: int, dim: int = -1) -> Tensor:
    """t with zeros after its channels (dimension `dim`) up to `channels`, contiguous."""
    extra = channels - t.shape[dim]
    if extra == 0:
        return t.contiguous()
    pad = [0, 0] * (t.dim() - 1 - dim % t.dim()) + [0, extra]
    return F.pad(t, pad).contiguous()


def forward(u: Tensor, delta: Tensor, A: Tensor, B: Tensor, C: Tensor, D: Tensor):
    """y (B, T, E) and the chunk starts chk (B, K + 1, N, E_padded)."""
    (b, T, E), N = u.shape, A.shape[1]
    Ep = -(-E // PAD) * PAD
    u, delta, D = padded(u, Ep), padded(delta, Ep), padded(D, Ep)
    A_t = padded(A.t(), Ep)  # (N, Ep): row n holds A[:, n]
    B, C = B.contiguous(), C.contiguous()
    y = u.new_empty(b, T, Ep)
    lib = library(Ep, N, u.dtype)
    chk = u.new_empty(b, -(-T // lib.chunk_length()) + 1, N, Ep)
    lib.forward(b, T, *map(ptr, (u, delta, A_t, B, C, D)), threads(b), ptr(y), ptr(chk))
    return y[..., :E], chk


def backward(gy: Tensor, u: Tensor, delta: Tensor, A: Tensor, B: Tensor, C: Tensor, D: Tensor,
             chk: Tensor) -> tuple[Tensor, ...]:  # fmt: skip
    """du, ddelta (B, T, E), dA (E, N), dB, dC (B, T, N), dD (E,): the gradients of sum(gy * y).
    The parameters' are summed over the sequences' shares in sequence order (numpy sums a
    (B, n) array over B the same way whatever the number of threads)."""
    (b, T, E), N = u.shape, A.shape[1]
    Ep = chk.shape[-1]
    gy, u, delta, D = (padded(t, Ep) for t in (gy, u, delta, D))
    A_t = padded(A.t(), Ep)
    B, C = B.contiguous(), C.contiguous()
    du, ddelta = u.new_empty(b, T, Ep), u.new_empty(b, T, Ep)
    dB, dC = u.new_empty(b, T, N), u.new_empty(b, T, N)
    dA_shares, dD_shares = u.new_empty(b, N, Ep), u.new_empty(b, Ep)
    library(Ep, N, u.dtype).backward(
        b,
        T,
        *map(ptr, (gy, u, delta, A_t, B, C, D, chk)),
        threads(b),
        *map(ptr, (du, ddelta, dA_shares, dB, dC, dD_shares)),
    )
    dA, dD = (torch.from_numpy(np.asarray(s.numpy().sum(axis=0))) for s in (dA_shares, dD_shares))
    return du[..., :E], ddelta[..., :E], dA[:, :E].t(), dB, dC, dD[:E]
