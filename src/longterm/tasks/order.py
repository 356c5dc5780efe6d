"""The temporal order problems of Hochreiter & Schmidhuber (1997), §5.6, experiments 6a and 6b.

Alphabet of 8 symbols, one-hot per step: E, B, a, b, c, d, X, Y (features 0..7). A sequence
starts with E, ends with B (on its last real step) and holds random distractors a..d (uniform)
elsewhere, except at the relevant positions, each an X or a Y with probability 1/2:

- `temporal_order` (6a): two relevant positions, t1 uniform on [0.1 T, 0.2 T] and t2 on
  [0.5 T, 0.6 T]; 4 classes XX=0, XY=1, YX=2, YY=3.
- `temporal_order3` (6b): three, on [0.1 T, 0.2 T], [0.33 T, 0.43 T], [0.66 T, 0.76 T];
  8 classes XXX=0, XXY=1, ..., YYY=7 (the symbols read as the bits of the class, first symbol
  the most significant).

T is `min_length` and each bound is rounded to the nearest step (step 0 holds E), so T=100 gives
the paper's t1 in [10, 20] and t2 in [50, 60]; lengths follow the paper's convention (uniform on
[T, width - 1], width int(ceil(1.1 T)): 100..110 for T=100, as in experiment 6a).

Chance: classes are uniform, so a constant predictor scores 1/4 (6a) and 1/8 (6b). A model that
is blind to order (pooling of per-step features) sees only how many X and Y there are; its best
accuracy is `order_blind_ceiling(n)` = (n + 1) / 2^n: 3/4 for 6a (XY and YX look alike), 1/2 for
6b.
"""

from functools import partial

import numpy as np

from longterm.tasks.lengths import default_width, draw_lengths, one_hot

SYMBOLS = ("E", "B", "a", "b", "c", "d", "X", "Y")
E, B, FIRST_DISTRACTOR, X = 0, 1, 2, 6
N_SYMBOLS = len(SYMBOLS)
# Windows of the relevant positions, as fractions of T (Hochreiter & Schmidhuber 1997, 6a and 6b).
WINDOWS: dict[int, tuple[tuple[float, float], ...]] = {
    2: ((0.1, 0.2), (0.5, 0.6)),
    3: ((0.1, 0.2), (0.33, 0.43), (0.66, 0.76)),
}


def positions(T: int, n_relevant: int) -> list[tuple[int, int]]:
    """Inclusive windows of the relevant steps for length T (T=100, 6a: (10, 20), (50, 60))."""
    return [(int(lo * T + 0.5), int(hi * T + 0.5)) for lo, hi in WINDOWS[n_relevant]]


def order_blind_ceiling(n_relevant: int) -> float:
    """Best accuracy of a predictor that sees only the number of Y among the relevant symbols:
    one class per count is right, (n + 1) of 2^n equally likely classes."""
    return (n_relevant + 1) / 2**n_relevant


def generate_order(
    rng: np.random.RandomState,
    min_length: int,
    n_sequences: int,
    max_length: int | None = None,
    n_relevant: int = 2,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Returns X (n, width, 8) float64 one-hot (zeros on padding), y (n,) int64 class in
    [0, 2^n_relevant), mask (n, width) bool."""
    n, width = n_sequences, max_length or default_width(min_length)
    rows = np.arange(n)
    lengths, mask = draw_lengths(rng, min_length, width, n)
    tokens = rng.randint(FIRST_DISTRACTOR, X, (n, width))
    tokens[:, 0] = E
    tokens[rows, lengths - 1] = B
    is_y = rng.randint(0, 2, (n, n_relevant))
    for j, (lo, hi) in enumerate(positions(min_length, n_relevant)):
        tokens[rows, rng.randint(lo, hi + 1, n)] = X + is_y[:, j]
    y = is_y @ (2 ** np.arange(n_relevant)[::-1])
    return one_hot(tokens, N_SYMBOLS, mask), y.astype(np.int64), mask


temporal_order = partial(generate_order, n_relevant=2)
temporal_order3 = partial(generate_order, n_relevant=3)
