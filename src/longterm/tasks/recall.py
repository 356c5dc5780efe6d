"""Associative recall: k key-value pairs, then a query key; the target is the key's value.

The fixed-state bottleneck as a task (Ba et al. 2016, "Using fast weights"; Zoology's multi-query
recall, Arora et al. 2023, in its single-query form): a model that must squeeze every pair into a
state of fixed size fails as k grows against that size; one that keeps every step (attention over
recurrent states) need not.

One-hot per step over 34 features: 16 keys (0..15), 16 values (16..31), a filler (32) and a query
flag (33). A sequence of length L holds:
- steps 0..2k-1: k pairs `key value`, the keys distinct (drawn without replacement), the values
  uniform on the 16 values (repeats allowed);
- steps 2k..L-2: the filler;
- step L-1: the query, one of the k keys uniformly, with the query flag also set.

The target is the queried key's value (16 classes). Lengths follow the paper's convention (uniform
on [T, width - 1], padded to width); T must be at least 2k + 1.

Chance: values are uniform, so a constant predictor scores 1/16. A model blind to order (pooling of
per-step features) sees which values occur but not which key each belongs to: at k = 1 it can
answer (the only value present); beyond, its best guess is the most frequent value present, right
in about 1/k of cases when the k values differ (more often when values repeat).
"""

import numpy as np

from longterm.tasks.lengths import default_width, draw_lengths, one_hot

N_KEYS = N_VALUES = 16
FILLER, QUERY = N_KEYS + N_VALUES, N_KEYS + N_VALUES + 1
N_SYMBOLS = N_KEYS + N_VALUES + 2


def associative_recall(
    rng: np.random.RandomState,
    min_length: int,
    n_sequences: int,
    max_length: int | None = None,
    k: int = 4,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Returns X (n, width, 34) float64 one-hot (zeros on padding; the query step has two ones),
    y (n,) int64 value in 0..15, mask (n, width) bool."""
    if not 1 <= k <= N_KEYS:
        raise ValueError(f"associative_recall: k={k} must be in 1..{N_KEYS}")
    if min_length < 2 * k + 1:
        raise ValueError(f"associative_recall: k={k} needs length >= {2 * k + 1}, got {min_length}")
    n, width = n_sequences, max_length or default_width(min_length)
    rows = np.arange(n)
    lengths, mask = draw_lengths(rng, min_length, width, n)
    keys = np.argsort(rng.rand(n, N_KEYS), axis=1)[:, :k]
    values = rng.randint(0, N_VALUES, (n, k))
    asked = rng.randint(0, k, n)
    tokens = np.full((n, width), FILLER)
    tokens[:, 0 : 2 * k : 2] = keys
    tokens[:, 1 : 2 * k : 2] = N_KEYS + values
    tokens[rows, lengths - 1] = keys[rows, asked]
    X = one_hot(tokens, N_SYMBOLS, mask)
    X[rows, lengths - 1, QUERY] = 1.0
    return X, values[rows, asked].astype(np.int64), mask
