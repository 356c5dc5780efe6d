"""The CPU kernels of the fused encoder + pooling (models/fused.py), from fused_cpu.cpp.

fused_cpu.cpp holds the kernels and says how they work. This module builds them with the
machine's C++ compiler for one shape and dtype (the sizes F and D are compile-time constants,
so every loop has a known length) and calls them through ctypes.

The kernels split a batch into whole sequences between `torch.get_num_threads()` OpenMP threads.
Built with -fopenmp, they link libgomp.so.1, which PyTorch has already loaded, so they run on
PyTorch's own thread pool: a second pool would compete for the cores with PyTorch's threads,
which spin for a while after each parallel op. Each sequence's outputs, and its share of the
parameter gradients, are computed the same way whatever the split, and the shares are summed in
sequence order, so the results do not depend on the number of threads. A compiler without
OpenMP (Apple's clang) builds them for one thread, with a warning.

A build is cached under KERNEL_DIR, named by a hash of the source, the compiler, its flags and
the machine's CPU features (-march=native code must not run on another CPU, as on a cluster
whose nodes differ): only the first process to use a shape compiles it.

Shapes: x (B, T, F), keep (B, T) bool, W_t (F * D,) (W^T flattened), b, w (D,), c (B, D),
alpha, q (B, T); see fused_cpu.cpp.
"""

import ctypes
import hashlib
import os
import platform
import shutil
import subprocess
import warnings
from functools import cache
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

SOURCE = Path(__file__).with_suffix(".cpp")
KERNEL_DIR = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "longterm"
FLAGS = ["-std=c++17", "-O3", "-march=native", "-ffp-contract=fast", "-fno-math-errno"]
OPENMP = "-fopenmp"
REALS = {torch.float32: "float", torch.float64: "double"}


def compiler() -> str:
    """The C++ compiler: $CXX, else c++, g++ or clang++, whichever the PATH has first."""
    names = [os.environ["CXX"]] if os.environ.get("CXX") else ["c++", "g++", "clang++"]
    found = next(filter(None, map(shutil.which, names)), None)
    if found is None:
        raise RuntimeError(
            f"the fused CPU kernels need a C++ compiler and found none of {', '.join(names)}: "
            "install g++ or clang++, or set CXX"
        )
    return found


def cpu_features() -> str:
    """What -march=native compiles for: the CPU's feature flags where Linux lists them."""
    cpuinfo = Path("/proc/cpuinfo")
    lines = cpuinfo.read_text().splitlines() if cpuinfo.exists() else []
    flags = next((line for line in lines if line.startswith(("flags", "Features"))), "")
    return f"{platform.machine()} {flags}"


def build(command: list[str], name: str, source: Path = SOURCE) -> tuple[Path, str]:
    """The shared library that `command` (the compiler and its flags) makes of `source`
    (fused_cpu.cpp, or another kernel's), compiled unless KERNEL_DIR has it, and the compiler's
    errors ("" when it is there)."""
    key = "\n".join([source.read_text(), " ".join(command), cpu_features()])
    path = KERNEL_DIR / f"{name}_{hashlib.sha256(key.encode()).hexdigest()[:16]}.so"
    if path.exists():
        return path, ""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    done = subprocess.run(
        [*command, "-fPIC", "-shared", str(source), "-o", str(tmp)], capture_output=True, text=True
    )
    if done.returncode != 0:
        tmp.unlink(missing_ok=True)
        return path, done.stderr or f"exit status {done.returncode}"
    tmp.replace(path)  # atomic: processes that build at once each write their own file
    return path, ""


def load(command: list[str], name: str, source: Path, what: str) -> ctypes.CDLL:
    """The library that `command` builds of `source` with OpenMP, or, where the compiler has none,
    for one thread with a warning that names `what` (e.g. "the fused CPU kernels"), loaded."""
    path, errors = build([*command, OPENMP], name, source)
    if errors:
        path, single = build(command, name, source)
        if single:
            raise RuntimeError(f"building {source} failed: {' '.join(command)} {OPENMP}\n{errors}")
        warnings.warn(
            f"{command[0]} builds {what} without OpenMP: one thread runs them", stacklevel=3
        )
    return ctypes.CDLL(str(path))


@cache
def library(features: int, units: int, dtype: torch.dtype) -> ctypes.CDLL:
    """The kernels for F = features, D = units and dtype (float32 or float64), built once per
    machine and source (KERNEL_DIR) and loaded."""
    if dtype not in REALS:
        raise TypeError(f"the fused CPU kernels take float32 or float64, not {dtype}")
    command = [compiler(), *FLAGS, f"-DF={features}", f"-DD={units}", f"-DREAL={REALS[dtype]}"]
    name = f"fused_cpu_{features}x{units}_{REALS[dtype]}"
    lib = load(command, name, SOURCE, "the fused CPU kernels")
    real = ctypes.c_float if dtype == torch.float32 else ctypes.c_double
    P, L, N = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int  # pointer, int64_t, int
    lib.forward.argtypes = [L, L, P, P, P, P, real, P, real, N, N, P, P, P]
    lib.backward.argtypes = [L, L, *[P] * 5, real, P, P, P, P, N, N, N, *[P] * 5]
    lib.forward_members.argtypes = [L, L, *[P] * 5, real, P, P, N, N, P, P, P]
    lib.backward_members.argtypes = [L, L, *[P] * 6, real, *[P] * 4, N, N, *[P] * 4]
    for kernel in (lib.forward, lib.backward, lib.forward_members, lib.backward_members):
        kernel.restype = None
    return lib


def ptr(t: Tensor) -> int:
    """The address of a contiguous tensor's data."""
    assert t.is_contiguous()
    return t.data_ptr()


def same_dtype(x: Tensor, *tensors: Tensor) -> None:
    """The kernels read every real array as x's dtype: refuse a mix (REAL is one type)."""
    other = next((t.dtype for t in tensors if t.dtype != x.dtype), None)
    if other is not None:
        raise TypeError(f"the fused CPU kernels take one dtype: x is {x.dtype}, not {other}")


def forward(x, keep, W_t, b, slope, w, bw, attention) -> tuple[Tensor, Tensor, Tensor]:
    """c (B, D), the pooling weights alpha (B, T), zero on the steps not kept, and q = alpha
    (1 - e^2) (B, T) (alpha for the mean)."""
    (B, T, F), D = x.shape, b.shape[0]
    same_dtype(x, W_t, b, w)
    c, alpha, q = x.new_empty(B, D), x.new_empty(B, T), x.new_empty(B, T)
    library(F, D, x.dtype).forward(
        B,
        T,
        *map(ptr, (x, keep, W_t, b)),
        slope,
        ptr(w),
        bw,
        attention,
        torch.get_num_threads(),
        *map(ptr, (c, alpha, q)),
    )
    return c, alpha, q


def backward(g, x, keep, W_t, b, slope, w, c, alpha, q, attention, need_dx) -> tuple:
    """dx (B, T, F) (None unless `need_dx`), dW^T (F * D,), db, dw (D,), db_w (1,): the
    gradients of sum(g * c), summed over the sequences' shares in sequence order (numpy sums a
    (B, n) array over B the same way whatever the number of threads)."""
    (B, T, F), D = x.shape, b.shape[0]
    same_dtype(x, g, W_t, b, w, c, alpha, q)
    dx = x.new_zeros(B, T, F) if need_dx else x.new_empty(0)
    shares = x.new_empty(B, F * D), x.new_empty(B, D), x.new_empty(B, D), x.new_empty(B)
    library(F, D, x.dtype).backward(
        B,
        T,
        *map(ptr, (g, x, keep, W_t, b)),
        slope,
        *map(ptr, (w, c, alpha, q)),
        attention,
        need_dx,
        torch.get_num_threads(),
        dx.data_ptr(),
        *map(ptr, shares),
    )
    dW_t, db, dw, dbw = (torch.from_numpy(np.asarray(s.numpy().sum(axis=0))) for s in shares)
    return dx if need_dx else None, dW_t, db, dw, dbw.reshape(1)


def addresses(tensors: list[Tensor]) -> Tensor:
    """The data addresses of contiguous tensors, as the int64 array of pointers a kernel of the
    members reads."""
    return torch.tensor([ptr(t) for t in tensors], dtype=torch.int64)


def forward_members(xs, keeps, W_ts, bs, slope, ws, bws, attention) -> list[tuple]:
    """`forward` of M models of one shape in one call (lists of each argument, one per member;
    `bws` floats): each member's (c, alpha, q), those of its own call of `forward`."""
    (B, _, F), D, M = xs[0].shape, bs[0].shape[0], len(xs)
    for x, W_t, b, w in zip(xs, W_ts, bs, ws, strict=True):
        same_dtype(xs[0], x, W_t, b, w)
    outs = [(x.new_empty(B, D), x.new_empty(B, x.shape[1]), x.new_empty(B, x.shape[1])) for x in xs]
    steps = torch.tensor([x.shape[1] for x in xs], dtype=torch.int64)
    real = torch.tensor(bws, dtype=xs[0].dtype)
    # the pointer arrays, held until the kernel returns
    ins = [addresses(ts) for ts in (xs, keeps, W_ts, bs, ws)]
    results = [addresses([o[k] for o in outs]) for k in range(3)]
    library(F, D, xs[0].dtype).forward_members(
        M,
        B,
        ptr(steps),
        *map(ptr, ins[:4]),
        slope,
        ptr(ins[4]),
        ptr(real),
        attention,
        torch.get_num_threads(),
        *map(ptr, results),
    )
    return outs


def backward_members(gs, xs, keeps, W_ts, bs, slope, ws, cs, alphas, qs, attention) -> list:
    """`backward` (without dx) of M models of one shape in one call: each member's dW^T, db, dw,
    db_w, summed over its sequences' shares as `backward` sums them."""
    (B, _, F), D, M = xs[0].shape, bs[0].shape[0], len(xs)
    for x, *rest in zip(xs, gs, W_ts, bs, ws, cs, alphas, qs, strict=True):
        same_dtype(xs[0], x, *rest)
    shares = [
        (x.new_empty(B, F * D), x.new_empty(B, D), x.new_empty(B, D), x.new_empty(B)) for x in xs
    ]
    steps = torch.tensor([x.shape[1] for x in xs], dtype=torch.int64)
    ins = [addresses(ts) for ts in (gs, xs, keeps, W_ts, bs, ws, cs, alphas, qs)]
    results = [addresses([s[k] for s in shares]) for k in range(4)]
    library(F, D, xs[0].dtype).backward_members(
        M,
        B,
        ptr(steps),
        *map(ptr, ins[:5]),
        slope,
        *map(ptr, ins[5:]),
        attention,
        torch.get_num_threads(),
        *map(ptr, results),
    )
    return [
        tuple(torch.from_numpy(np.asarray(s.numpy().sum(axis=0))) for s in own) for own in shares
    ]
