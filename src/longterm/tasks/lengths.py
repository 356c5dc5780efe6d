"""Sequence lengths and padding shared by every task generator (the paper's convention), and the
target of a step that has none."""

from math import ceil

import numpy as np

# The target of an unlabelled step in a task that labels steps, y (n, width): the loss and the
# accuracy skip it (cross_entropy's and torchmetrics' ignore_index; -100 is cross_entropy's
# default).
NO_TARGET = -100


def default_width(min_length: int) -> int:
    """The generator's padded width `int(ceil(1.1 * T0))` (56 for T0=50, 111 for T0=100)."""
    return int(ceil(1.1 * min_length))


def draw_lengths(
    rng: np.random.RandomState, min_length: int, width: int, n: int
) -> tuple[np.ndarray, np.ndarray]:
    """Lengths uniform on [min_length, width - 1] (all `width` when `min_length == width`), as the
    paper's generator draws them, and the mask (n, width), True on the real steps of each row."""
    if min_length == width:
        lengths = np.full(n, width)
    else:
        lengths = rng.randint(min_length, width, n)
    return lengths, np.arange(width)[None, :] < lengths[:, None]


def one_hot(tokens: np.ndarray, n_symbols: int, mask: np.ndarray) -> np.ndarray:
    """tokens (n, width) int -> (n, width, n_symbols) float64, all zeros on padded steps."""
    return np.eye(n_symbols)[tokens] * mask[:, :, None]
