"""CPU kernels of the fused encoder + pooling (models/fused.py): one pass per sequence over time.

Each sequence's states live in a block buffer of K steps x D while the kernel walks its steps, so
no (B, T, D) tensor is ever written; the backward pass recomputes the states instead of reading
them. Written with numba because the step loop must run at compiled speed: any sequence of
PyTorch ops writes at least a (B, chunk, D) temporary per op and is bound by that memory traffic.
Steps go in blocks of K so that one step's scalar chain (score, tanh, exp) overlaps with the next
steps' work. Inner loops index 1-D rows and accumulate in the arrays' dtype, and the sizes F and D
are compile-time constants: all three are needed for the compiler to vectorise the loops (with D
and F known only at run time the same loops run several times slower). `kernels(F, D)` therefore
returns a copy of this module with its sizes set, written to a file so that numba caches the
compiled code (cache=True): only the first process to use a shape and dtype compiles.

Shapes: x (B, T, F), keep (B, T) bool (the steps that count), W (F * D,) (W^T flattened, so the
inner loops run over D contiguously), b, w (D,), c (B, D). The score e_t = tanh(w . h_t + b_w)
[eq. 1]; `attention=False` gives the plain mean [eq. 2].
"""

import importlib.util
import math
import os
import re
import sys
from functools import cache
from pathlib import Path
from types import ModuleType

import numba
import numpy as np

KERNEL = dict(nogil=True, parallel=True, fastmath=True, cache=True)
K = 32  # steps per block
F, D = 2, 100  # input features, state units: set by kernels(F, D) in each copy
SIZES = "F, D = 2, 100"
KERNEL_DIR = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "longterm"


@cache
def kernels(features: int, units: int) -> ModuleType:
    """This module with F = features and D = units, compiled from a file under KERNEL_DIR."""
    sizes = f"F, D = {features}, {units}"
    pattern = re.compile(f"^{re.escape(SIZES)}", re.MULTILINE)  # the line, not SIZES's own value
    source, found = pattern.subn(sizes, Path(__file__).read_text())
    if found != 1:
        raise RuntimeError(
            f"{__file__} has {found} lines that start with {SIZES!r}, not one: kernels() sets "
            "the sizes F and D by rewriting that line"
        )
    path = KERNEL_DIR / f"fused_cpu_{features}x{units}.py"
    if not path.exists() or path.read_text() != source:  # rewritten only when this file changes
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(source)
        tmp.replace(path)
    spec = importlib.util.spec_from_file_location(f"{__name__}_{features}x{units}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # numba's cache finds the module of its code by name
    spec.loader.exec_module(module)
    return module


@numba.njit(inline="always", fastmath=True)
def states(x, keep, i, t0, W, b, slope, U, H, rows):  # pragma: no cover - compiled
    """U[n] = W x_t + b and H[n] = LReLU(U[n]) for the kept steps t of [t0, t0 + K), packed
    in rows n; rows[n] = t. Returns the number of rows."""
    n = 0
    for t in range(t0, min(t0 + K, x.shape[1])):
        if not keep[i, t]:
            continue
        xt, u, h = x[i, t], U[n], H[n]
        for d in range(D):
            v = b[d]
            for f in range(F):
                v += W[f * D + d] * xt[f]
            u[d] = v
            h[d] = v if v > 0 else slope * v
        rows[n] = t
        n += 1
    return n


@numba.njit(inline="always", fastmath=True)
def dot(a, v):  # pragma: no cover - compiled
    """a . v over D, accumulated in the arrays' dtype."""
    z = a[0] * 0
    for d in range(D):
        z += a[d] * v[d]
    return z


@numba.njit(**KERNEL)
def forward(x, keep, W, b, slope, w, bw, attention):  # pragma: no cover - compiled
    """c (B, D), the scores e (B, T), their running max m (B,) and the softmax denominator
    s (B,): alpha_t = exp(e_t - m) / s."""
    B, T, _ = x.shape
    c, e = np.zeros((B, D), x.dtype), np.zeros((B, T), x.dtype)
    m = np.full(B, -np.inf, x.dtype)
    s = np.zeros(B, x.dtype)
    slope = x.dtype.type(slope)
    for i in numba.prange(B):
        U, H = np.empty((K, D), x.dtype), np.empty((K, D), x.dtype)
        E, P, rows = np.zeros(K, x.dtype), np.ones(K, x.dtype), np.zeros(K, np.int64)
        acc = c[i]
        mi, si = (-np.inf if attention else 0.0), 0.0  # the mean: every p_t = exp(0 - 0)
        for t0 in range(0, T, K):
            n = states(x, keep, i, t0, W, b, slope, U, H, rows)
            if attention and n > 0:
                for k in range(n):
                    E[k] = math.tanh(dot(w, H[k]) + bw)
                    e[i, rows[k]] = E[k]
                mb = E[:n].max()
                if mb > mi:  # online softmax: rescale what was summed under the old max
                    r = x.dtype.type(math.exp(mi - mb))
                    for d in range(D):
                        acc[d] *= r
                    si *= r
                    mi = mb
                for k in range(n):
                    P[k] = math.exp(E[k] - mi)
            for k in range(n):
                p, h = P[k], H[k]
                for d in range(D):
                    acc[d] += p * h[d]
                si += P[k]
        m[i], s[i] = mi, si
        inv = x.dtype.type(1.0 / si)
        for d in range(D):
            acc[d] *= inv
    return c, e, m, s


@numba.njit(**KERNEL)
def backward(g, x, keep, W, b, slope, w, c, alpha, q, attention, need_dx):  # pragma: no cover
    """dx (B, T, F) (zeros unless `need_dx`), dW (F * D,), db (D,), dw (D,), db_w: the
    gradients of sum(g * c), given the pooling weights alpha (B, T) and, for attention,
    q = alpha (1 - e^2) (B, T).

    dL/de_t = alpha_t (g . h_t - g . c);  with z_t = w . h_t + b_w, dL/dz_t = q_t (g . h_t -
    g . c) and dL/dh_t = alpha_t g + dL/dz_t w. Parameter gradients are summed per sequence,
    then over the batch (no races, and the same sums whatever the number of threads).
    """
    B, T, _ = x.shape
    dx = np.zeros_like(x)
    dW, db = np.zeros((B, F * D), x.dtype), np.zeros((B, D), x.dtype)
    dw, dbw = np.zeros((B, D), x.dtype), np.zeros(B, x.dtype)
    slope = x.dtype.type(slope)
    for i in numba.prange(B):
        U, H = np.empty((K, D), x.dtype), np.empty((K, D), x.dtype)
        rows = np.zeros(K, np.int64)
        du = np.empty(D, x.dtype)
        gi, dWi, dbi, dwi = g[i], dW[i], db[i], dw[i]
        gc = dot(gi, c[i])
        for t0 in range(0, T, K):
            n = states(x, keep, i, t0, W, b, slope, U, H, rows)
            for k in range(n):
                t, u, h = rows[k], U[k], H[k]
                a, dz = alpha[i, t], q[i, t]
                if attention:
                    dz *= dot(gi, h) - gc
                    dbw[i] += dz
                    for d in range(D):
                        dwi[d] += dz * h[d]
                for d in range(D):
                    dh = a * gi[d] + dz * w[d]
                    du[d] = dh if u[d] > 0 else slope * dh
                    dbi[d] += du[d]
                xt = x[i, t]
                for f in range(F):
                    xf = xt[f]
                    for d in range(D):
                        dWi[f * D + d] += du[d] * xf
                if need_dx:
                    dxt = dx[i, t]
                    for f in range(F):
                        dxt[f] = dot(W[f * D : (f + 1) * D], du)
    return dx, dW.sum(axis=0), db.sum(axis=0), dw.sum(axis=0), dbw.sum()
