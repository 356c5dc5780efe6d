"""Selective copying (Gu & Dao 2023, "Mamba", arXiv 2312.00752, §4.1.1 and appendix E.1): data
tokens scattered among noise, to be reproduced in order at the end. The copying task of the S4
code base (state-spaces/s4, src/dataloaders/datasets/copying.py, `torch_copying_data` with
`variable=True`), which the Mamba paper uses with a vocabulary of 16 and 16 tokens to copy.

Tokens, ids in 0..vocab-1: 0 is the noise (the blank), 1..vocab-2 the data tokens, vocab-1 the
marker that asks for the next data token. A sequence of T = min_length steps holds
- steps 0..T-M-1: M = `data_tokens` data tokens, each uniform on 1..vocab-2 (repeats allowed), at M
  positions drawn uniformly without replacement and kept in order; noise everywhere else;
- steps T-M..T-1: the marker, M times. The label of the i-th marker step is the i-th data token
  (class = its id); every other step has none (NO_TARGET).
A model must remember which tokens came in which order, and skip the noise: where they sit varies
from sequence to sequence, so a fixed shift (a convolution) cannot solve it.

Draws from `rng`: the data tokens (n, M), then the positions (a random permutation of 0..T-M-1
per sequence, its first M, sorted). One fixed length T = min_length (the paper's 4096; T >= 2M),
padded to the framework's width (`max_length` or int(ceil(1.1 T))). Chance: the data tokens are
uniform on vocab - 2 ids, so a constant answer scores 1/(vocab - 2).
"""

import numpy as np

from longterm.tasks.lengths import NO_TARGET, default_width


def selective_copying(
    rng: np.random.RandomState,
    min_length: int,
    n_sequences: int,
    max_length: int | None = None,
    vocab: int = 16,
    data_tokens: int = 16,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Returns X (n, width) int64 tokens (0 on padding), y (n, width) int64 data tokens on the
    marker steps and NO_TARGET elsewhere, mask (n, width) bool, True on the first min_length."""
    T, M, n = min_length, data_tokens, n_sequences
    if vocab < 3:
        raise ValueError(f"selective_copying: vocab={vocab} must be >= 3 (noise, data, marker)")
    if M < 1:
        raise ValueError(f"selective_copying: data_tokens={M} must be >= 1")
    if 2 * M > T:
        raise ValueError(
            f"selective_copying: data_tokens={M} needs length >= {2 * M} (2 steps a token), got {T}"
        )
    width = max_length or default_width(T)
    data = rng.randint(1, vocab - 1, size=(n, M))
    places = np.sort(np.argsort(rng.rand(n, T - M), axis=1)[:, :M], axis=1)
    X = np.zeros((n, width), dtype=np.int64)
    np.put_along_axis(X, places, data, axis=1)
    X[:, T - M : T] = vocab - 1
    y = np.full((n, width), NO_TARGET, dtype=np.int64)
    y[:, T - M : T] = data
    mask = np.broadcast_to(np.arange(width) < T, (n, width)).copy()
    return X, y, mask
