"""Induction heads (Gu & Dao 2023, "Mamba", arXiv 2312.00752, §4.1.2 and appendix E.1; the task
of Olsson et al. 2022 as the H3 paper, Fu et al. 2023, generates it): after a special token, say
the token that followed it earlier. The Mamba paper trains at length 256 with a vocabulary of 16
and tests lengths up to 2^20 (length extrapolation: `eval.lengths`).

Tokens, ids in 0..vocab-1: vocab-1 is the special token, 0..vocab-2 the others. A sequence of
T = min_length steps is T - 1 tokens uniform on 0..vocab-2, with the special token written once
at a step p uniform on 0..T-3 (so the token after it, at p + 1 <= T - 2, is an ordinary one), and
the special token again at the last step T - 1. The target, one per sequence, is the token at
p + 1 (class = its id), read at the last step (pool=last).

Draws from `rng`: the tokens (n, T - 1), then p (n,). One fixed length T = min_length (T >= 3),
padded to the framework's width (`max_length` or int(ceil(1.1 T))). Chance: the target is
uniform on vocab - 1 ids, so a constant answer scores 1/(vocab - 1).
"""

import numpy as np

from longterm.tasks.lengths import default_width


def induction_heads(
    rng: np.random.RandomState,
    min_length: int,
    n_sequences: int,
    max_length: int | None = None,
    vocab: int = 16,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Returns X (n, width) int64 tokens (0 on padding), y (n,) int64 the token after the first
    special one, mask (n, width) bool, True on the first min_length steps."""
    T, n = min_length, n_sequences
    if vocab < 3:
        raise ValueError(f"induction_heads: vocab={vocab} must be >= 3")
    if T < 3:
        raise ValueError(f"induction_heads: length {T} must be >= 3")
    width, special, rows = max_length or default_width(T), vocab - 1, np.arange(n)
    X = np.zeros((n, width), dtype=np.int64)
    X[:, : T - 1] = rng.randint(0, special, size=(n, T - 1))
    first = rng.randint(0, T - 2, size=n)
    X[rows, first] = special
    X[:, T - 1] = special
    mask = np.broadcast_to(np.arange(width) < T, (n, width)).copy()
    return X, X[rows, first + 1].copy(), mask
