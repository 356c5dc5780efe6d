"""CPU kernels of the fused encoder + pooling (models/fused.py): one pass per sequence over time.

Each sequence's kept steps are packed K at a time into a block, and the block's states are held
transposed, H (D, K), while the kernel works on it: every inner loop runs over the K steps of one
state unit d, contiguous and of compile-time length, so the compiler turns it into whole SIMD
vectors with no horizontal sums inside the loop. No (B, T, D) tensor is ever written; the backward
pass recomputes the states instead of reading them. A block with fewer than K kept steps (the
sequence's last) is filled with steps of zero weight, which add nothing.

The score and its softmax weight, e_t = tanh(z_t) and p_t = exp(e_t), are computed for the whole
block in one vectorised loop (`tanh_exp`): the scalar libm calls it replaces cost more than the
rest of the forward pass. The score is bounded, e_t in [-1, 1], so exp(e_t) cannot overflow and
the softmax needs no running maximum (the paper's code has none either).

Written with numba because the step loop must run at compiled speed: any sequence of PyTorch ops
writes at least a (B, chunk, D) temporary per op and is bound by that memory traffic. The sizes F
and D are compile-time constants (`kernels(F, D)` returns a copy of this module with its sizes
set, written to a file so that numba caches the compiled code, cache=True: only the first process
to use a shape and dtype compiles).

Shapes: x (B, T, F), keep (B, T) bool (the steps that count), W (F * D,) (W^T flattened, row f
holds the weights of input feature f), b, w (D,), c (B, D). The score e_t = tanh(w . h_t + b_w)
[eq. 1]; `attention=False` gives the plain mean [eq. 2].
"""

import importlib.util
import os
import re
import sys
from functools import cache
from pathlib import Path
from types import ModuleType

import numba
import numpy as np

KERNEL = dict(nogil=True, parallel=True, fastmath=True, cache=True)
K = 64  # kept steps per block: the length of every inner loop
F, D = 2, 100  # input features, state units: set by kernels(F, D) in each copy
SIZES = "F, D = 2, 100"
KERNEL_DIR = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "longterm"
TANH_ONE = 20.0  # |z| beyond which tanh(z) rounds to +-1 in float64


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
def exp_(y):  # pragma: no cover - compiled
    """exp(y) for float64 y in [-2 TANH_ONE, 1], to about 1e-14 relative, in operations the
    compiler vectorises (libm's exp is a scalar call): a Taylor polynomial at y / 64, squared 6
    times."""
    s = y * (1.0 / 64)  # |s| <= 0.625: the Taylor series to s^13 / 13! is exact to 2e-14
    r = 1 / 6227020800.0  # 1 / 13!
    r = r * s + 1 / 479001600.0
    r = r * s + 1 / 39916800.0
    r = r * s + 1 / 3628800.0
    r = r * s + 1 / 362880.0
    r = r * s + 1 / 40320.0
    r = r * s + 1 / 5040.0
    r = r * s + 1 / 720.0
    r = r * s + 1 / 120.0
    r = r * s + 1 / 24.0
    r = r * s + 1 / 6.0
    r = r * s + 1 / 2.0
    r = r * s + 1.0
    r = r * s + 1.0
    r = r * r  # ^2
    r = r * r  # ^4
    r = r * r  # ^8
    r = r * r  # ^16
    r = r * r  # ^32
    return r * r  # ^64


@numba.njit(inline="always", fastmath=True)
def tanh_exp(Z, E, P, n):  # pragma: no cover - compiled
    """E[k] = tanh(Z[k]) and P[k] = exp(E[k]) for the n real steps of a block, P[k] = 0 for the
    rest; computed in float64 whatever the dtype (tanh z = (1 - exp(-2|z|)) / (1 + exp(-2|z|)))."""
    for k in range(K):
        z = np.float64(Z[k])
        a = min(abs(z), TANH_ONE)
        q = exp_(-2.0 * a)
        t = (1.0 - q) / (1.0 + q)
        t = t if z >= 0 else -t
        E[k] = t
        P[k] = exp_(t) if k < n else 0.0


@numba.njit(inline="always", fastmath=True)
def pack(x, keep, i, t, X, rows):  # pragma: no cover - compiled
    """The next (at most K) kept steps of sequence i from step t on: their inputs X (F, K) and
    steps rows (K,); the rest of X is zeros. Returns (number of steps packed, next t)."""
    n, T = 0, x.shape[1]
    while n < K and t < T:
        if keep[i, t]:
            for f in range(F):
                X[f, n] = x[i, t, f]
            rows[n] = t
            n += 1
        t += 1
    for k in range(n, K):
        for f in range(F):
            X[f, k] = 0
    return n, t


@numba.njit(inline="always", fastmath=True)
def state(X, W, b, slope, d, h, z, a, attention):  # pragma: no cover - compiled
    """h[k] = LReLU(W_d . x_k + b_d) (K,), unit d of the block's states, and for attention
    z[k] += a h[k] in the same loop (the score w . h_k, or g . h_k in the backward pass)."""
    for k in range(K):
        u = b[d]
        for f in range(F):
            u += W[f * D + d] * X[f, k]
        v = u if u > 0 else slope * u
        h[k] = v
        if attention:
            z[k] += a * v


@numba.njit(inline="always", fastmath=True)
def dot(a, v):  # pragma: no cover - compiled
    """a . v over K steps, accumulated in the arrays' dtype (a[0] * 0 would be float64)."""
    z = a.dtype.type(0)
    for k in range(K):
        z += a[k] * v[k]
    return z


@numba.njit(**KERNEL)
def forward(x, keep, W, b, slope, w, bw, attention):  # pragma: no cover - compiled
    """c (B, D), the pooling weights alpha (B, T), zero on the steps not kept, and what the
    backward pass needs of the scores, q = alpha (1 - e^2) (B, T) (alpha for the mean)."""
    B, T, _ = x.shape
    c, alpha, q = np.zeros((B, D), x.dtype), np.zeros((B, T), x.dtype), np.zeros((B, T), x.dtype)
    slope = x.dtype.type(slope)
    for i in numba.prange(B):
        H, X = np.empty((D, K), x.dtype), np.zeros((F, K), x.dtype)
        Z, E, P = np.empty(K, x.dtype), np.zeros(K, x.dtype), np.zeros(K, x.dtype)
        rows = np.zeros(K, np.int64)
        acc, s, t = c[i], 0.0, 0
        while t < T:
            n, t = pack(x, keep, i, t, X, rows)
            Z[:] = bw
            for d in range(D):
                state(X, W, b, slope, d, H[d], Z, w[d], attention)
            if attention:
                tanh_exp(Z, E, P, n)
            else:  # the mean: every p_t = exp(0)
                for k in range(K):
                    P[k] = 1 if k < n else 0
            for d in range(D):
                acc[d] += dot(P, H[d])
            for k in range(n):
                alpha[i, rows[k]], q[i, rows[k]] = P[k], 1 - E[k] * E[k]
                s += P[k]
        inv = x.dtype.type(1.0 / s)
        for d in range(D):
            acc[d] *= inv
        for t in range(T):
            alpha[i, t] *= inv
            q[i, t] *= alpha[i, t]
    return c, alpha, q


@numba.njit(**KERNEL)
def backward(g, x, keep, W, b, slope, w, c, alpha, q, attention, need_dx):  # pragma: no cover
    """dx (B, T, F) (empty unless `need_dx`), dW (F * D,), db (D,), dw (D,), db_w: the
    gradients of sum(g * c), given the pooling weights alpha (B, T) and, for attention,
    q = alpha (1 - e^2) (B, T) (not read for the mean).

    dL/de_t = alpha_t (g . h_t - g . c);  with z_t = w . h_t + b_w, dL/dz_t = q_t (g . h_t -
    g . c) and dL/dh_t = alpha_t g + dL/dz_t w. Parameter gradients are summed per sequence,
    then over the batch (no races, and the same sums whatever the number of threads).
    """
    B, T, _ = x.shape
    dx = np.zeros((B, T, F) if need_dx else (0, 0, 0), x.dtype)
    dW, db = np.zeros((B, F * D), x.dtype), np.zeros((B, D), x.dtype)
    dw, dbw = np.zeros((B, D), x.dtype), np.zeros(B, x.dtype)
    slope = x.dtype.type(slope)
    for i in numba.prange(B):
        H, X = np.empty((D, K), x.dtype), np.zeros((F, K), x.dtype)
        A, dZ, gH = np.zeros(K, x.dtype), np.zeros(K, x.dtype), np.zeros(K, x.dtype)
        dX = np.zeros((F, K), x.dtype)
        rows = np.zeros(K, np.int64)
        gi, dWi, dbi, dwi = g[i], dW[i], db[i], dw[i]
        gc = x.dtype.type(0)
        for d in range(D):
            gc += gi[d] * c[i, d]
        t = 0
        while t < T:
            n, t = pack(x, keep, i, t, X, rows)
            for k in range(K):
                A[k], dZ[k], gH[k] = 0, 0, 0
            for k in range(n):
                A[k], dZ[k] = alpha[i, rows[k]], q[i, rows[k]] if attention else 0
            for d in range(D):  # the states, and g . h_t for attention
                state(X, W, b, slope, d, H[d], gH, gi[d], attention)
            if attention:
                for k in range(K):
                    dZ[k] *= gH[k] - gc
                    dbw[i] += dZ[k]
            for d in range(D):  # H[d] becomes dL/du for unit d (du = dh where u > 0)
                h, gd, wd = H[d], gi[d], w[d]
                sdw = sdb = x.dtype.type(0)
                for k in range(K):
                    dh = A[k] * gd + dZ[k] * wd
                    sdw += dZ[k] * h[k]
                    du = dh if h[k] > 0 else slope * dh
                    sdb += du
                    h[k] = du
                dwi[d] += sdw
                dbi[d] += sdb
                for f in range(F):
                    dWi[f * D + d] += dot(h, X[f])
                if need_dx:
                    for f in range(F):
                        wfd = W[f * D + d]
                        for k in range(K):
                            dX[f, k] += wfd * h[k]
            if need_dx:
                for k in range(n):
                    for f in range(F):
                        dx[i, rows[k], f] = dX[f, k]
                        dX[f, k] = 0
    return dx, dW.sum(axis=0), db.sum(axis=0), dw.sum(axis=0), dbw.sum()
