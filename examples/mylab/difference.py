"""The ordered difference problem: the paper's addition problem (Raffel & Ellis 2015, §2.2)
with a target that depends on which marked value comes first.

Each step holds a value uniform on [-1, 1] and a marker; one step in the first half of the
sequence and one in the second are marked 1. The target is y = 0.5 + (a - b) / 4 in [0, 1],
a the earlier marked value, b the later; scored as the paper scores addition (|y_hat - y| <
0.04). An order-blind readout (attention or mean pooling over per-step states) sees the two
marked values as a set, so it can only guess which is a; a recurrent encoder can tell.

The generator contract (longterm docs/plugins.md): (rng, min_length, n_sequences, max_length,
**params) -> X (n, width, 2), y (n,), mask (n, width), lengths uniform on [min_length,
width - 1], width = max_length or int(ceil(1.1 * min_length)); zeros on padding.
"""

import numpy as np

from longterm.tasks.lengths import default_width, draw_lengths


def ordered_difference(
    rng: np.random.RandomState,
    min_length: int,
    n_sequences: int,
    max_length: int | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """X (n, width, 2): value, marker; y (n,) float64; mask (n, width) bool."""
    n, width = n_sequences, max_length or default_width(min_length)
    lengths, mask = draw_lengths(rng, min_length, width, n)
    values = rng.uniform(-1.0, 1.0, size=(n, width)) * mask
    half = lengths // 2
    first = (rng.uniform(size=n) * half).astype(int)  # in [0, L/2)
    second = half + (rng.uniform(size=n) * (lengths - half)).astype(int)  # in [L/2, L)
    rows = np.arange(n)
    markers = np.zeros((n, width))
    markers[rows, first] = markers[rows, second] = 1.0
    y = 0.5 + (values[rows, first] - values[rows, second]) / 4.0
    return np.stack([values, markers], axis=-1), y, mask
