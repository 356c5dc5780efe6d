"""The synthetic long-term memory problems of Raffel & Ellis (2015), section 2.2.

The generator reproduces the paper's data (the `lstm_problems` package, functions `add`,
`multiply`, `xor`) element for element: given a `numpy.random.RandomState` it draws the same
numbers in the same order of calls, so `addition(np.random.RandomState(s), ...)` equals
`np.random.seed(s); add(...)`. Pure numpy: no torch, no Lightning.

Each sequence has two features per step: a value and a marker. The marker is -1 on the first and
on the last real step, +1 on two steps (one of the first ten, one in the first half) and 0
elsewhere; the target combines the two marked values (Hochreiter & Schmidhuber 1997, §5.4-5.5;
Martens & Sutskever 2011 for XOR).
"""

from collections.abc import Callable
from functools import partial

import numpy as np

from longterm.tasks.lengths import default_width, draw_lengths

Sampler = Callable[[np.random.RandomState, tuple[int, ...]], np.ndarray]
Target = Callable[[np.ndarray, np.ndarray], np.ndarray]

# Values per step, drawn with shape (n, width, 1).
SAMPLERS: dict[str, Sampler] = {
    "addition": lambda rng, size: rng.uniform(-1.0, 1.0, size=size),
    "multiplication": lambda rng, size: rng.uniform(0.0, 1.0, size=size),
    "xor": lambda rng, size: rng.choice([0, 1], size=size),
}

# Targets from the two marked values a, b, each of shape (n,).
TARGETS: dict[str, Target] = {
    "addition": lambda a, b: 0.5 + (a + b) / 4.0,  # in [0, 1]: mean 0.5, sd 0.204
    "multiplication": lambda a, b: a * b,  # mean 0.25, sd 0.2205
    "xor": lambda a, b: np.logical_xor(a, b),
}

MARKED_TASKS = tuple(SAMPLERS)
FIRST_MARKER_HIGH = 10  # the first +1 marker lies on steps 1..9
# Shortest length whose final -1 marker comes after both +1 markers (the first may be step 9).
MIN_LENGTH = FIRST_MARKER_HIGH + 1


def generate_marked(
    task: str,
    rng: np.random.RandomState,
    min_length: int,
    n_sequences: int,
    max_length: int | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Draw `n_sequences` sequences of one task exactly as the paper's generator does.

    Lengths are uniform on [min_length, width - 1] (all equal to `width` when
    `min_length == width`), where `width = max_length or int(ceil(1.1 * min_length))`.

    Returns:
        X: (n, width, 2) float64, feature 0 the value (0 on padding), feature 1 the marker.
        y: (n,) float64 target (bool for xor).
        mask: (n, width) bool, True on real steps.
    """
    n, width = n_sequences, max_length or default_width(min_length)
    rows = np.arange(n)
    lengths, mask = draw_lengths(rng, min_length, width, n)

    # X is filled in place, feature by feature: separate value and marker arrays joined by
    # np.concatenate would write every element of a long batch three times, not once.
    X = np.empty((n, width, 2))
    np.multiply(SAMPLERS[task](rng, (n, width, 1))[:, :, 0], mask, out=X[:, :, 0])
    markers = X[:, :, 1]
    markers.fill(0.0)
    markers[:, 0] = -1
    markers[rows, lengths - 1] = -1
    first = rng.randint(1, FIRST_MARKER_HIGH, n)
    # The paper's generator bounds the second marker by the width, not by each sequence's length.
    second = rng.choice(range(1, int(width / 2 - 1)), n)
    second[second == first] += 1
    markers[rows, first] = 1
    markers[rows, second] = 1

    y = TARGETS[task](X[rows, first, 0], X[rows, second, 0])
    return X, y, mask


# The three problems as generators of their own, named by their conf files (conf/task/*.yaml,
# `generator:`); `xor_classification` reads the xor data as two classes.
addition = partial(generate_marked, "addition")
multiplication = partial(generate_marked, "multiplication")
xor = partial(generate_marked, "xor")
