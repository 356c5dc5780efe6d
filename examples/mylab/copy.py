"""Delayed copy: a task of one's own with token inputs and a target at each step.

Each real step holds a token uniform on 1..vocab-1 (0 is padding); from step `lag` on, the target
of step t is the token of step t - lag, so a causal model must hold the last `lag` tokens. The
first `lag` steps and the padding have no target (NO_TARGET). Chance: 1/(vocab - 1).

The generator contract (longterm docs/plugins.md): (rng, min_length, n_sequences, max_length,
**params) -> X (n, width) int64 ids, y (n, width) int64 with NO_TARGET on unlabelled steps,
mask (n, width) bool; lengths uniform on [min_length, width - 1], width = max_length or
int(ceil(1.1 * min_length)).
"""

import numpy as np

from longterm.tasks import NO_TARGET
from longterm.tasks.lengths import default_width, draw_lengths


def delayed_copy(
    rng: np.random.RandomState,
    min_length: int,
    n_sequences: int,
    max_length: int | None = None,
    vocab: int = 16,
    lag: int = 3,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """X (n, width) int64, 0 on padding; y (n, width) int64; mask (n, width) bool."""
    if not 1 <= lag < min_length:
        raise ValueError(f"delayed_copy: lag={lag} must be in 1..{min_length - 1}")
    n, width = n_sequences, max_length or default_width(min_length)
    lengths, mask = draw_lengths(rng, min_length, width, n)
    X = rng.randint(1, vocab, size=(n, width)) * mask
    y = np.full((n, width), NO_TARGET, dtype=np.int64)
    y[:, lag:] = np.where(mask[:, lag:], X[:, :-lag], NO_TARGET)
    return X.astype(np.int64), y, mask
