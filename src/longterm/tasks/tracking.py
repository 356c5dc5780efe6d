"""Variable tracking: short programs over three variables; the target is the value printed last.

In the spirit of the algorithmic task of the Feedback Transformer (Fan et al. 2020, §4.1.2), which
runs programs of assignments, increments, conditionals and prints over a few variables. One token
per step, one-hot over 20 symbols: the variables a, b, c; `=`, `++`, `--`, `if`, `>`, `<`, `print`;
the constants 1..10.

A program of exactly `length` tokens is drawn as:
1. `a = n1  b = n2  c = n3`, each n uniform on 1..10 (9 tokens: every variable has a value);
2. statements until `length - 2` tokens are used, each of a kind chosen uniformly among those that
   still fit (a kind fits when it uses all the remaining tokens or leaves at least 2), its
   variable v and u uniform on a, b, c and its constants uniform on 1..10:
   - `v = n` (3 tokens) assigns;
   - `v ++` or `v --` (2 tokens) steps v by one inside 1..10: `++` at 1, `--` at 10, either with
     probability 1/2 otherwise;
   - `if u > n v = m` or `if u < n v = m` (7 tokens, the comparison with probability 1/2)
     assigns m to v when the comparison holds;
   - `print v` (2 tokens) prints v;
3. `print v` (2 tokens) with v uniform: the target is v's value, class value - 1 (10 classes).

Lengths follow the paper's convention (uniform on [T, width - 1], padded to width); the shortest
program is 11 tokens. Chance: 1/10 for a uniform guess; the final values are close to uniform on
1..10, so the best constant predictor scores about 0.1 (the tests check it stays below 0.15).
"""

import numpy as np

from longterm.tasks.lengths import default_width, draw_lengths, one_hot

VARIABLES = ("a", "b", "c")
SYMBOLS = (*VARIABLES, "=", "++", "--", "if", ">", "<", "print", *map(str, range(1, 11)))
ASSIGN, INC, DEC, IF, GT, LT, PRINT, ONE = (
    SYMBOLS.index(s) for s in ("=", "++", "--", "if", ">", "<", "print", "1")
)
N_SYMBOLS = len(SYMBOLS)
SIZES = {"assign": 3, "step": 2, "if": 7, "print": 2}  # tokens per statement kind
MIN_PROGRAM = 3 * SIZES["assign"] + SIZES["print"]


def const(value: int) -> int:
    return ONE + value - 1


def program(rng: np.random.RandomState, length: int) -> tuple[list[int], int]:
    """One program of exactly `length` tokens and the value of its last print."""
    values, tokens = [0, 0, 0], []
    for v in range(len(VARIABLES)):
        values[v] = rng.randint(1, 11)
        tokens += [v, ASSIGN, const(values[v])]
    left = length - len(tokens) - SIZES["print"]
    while left > 0:
        kinds = [k for k, size in SIZES.items() if left - size == 0 or left - size >= 2]
        kind = kinds[rng.randint(len(kinds))]
        v = rng.randint(3)
        if kind == "assign":
            values[v] = rng.randint(1, 11)
            tokens += [v, ASSIGN, const(values[v])]
        elif kind == "step":
            up = values[v] == 1 or (values[v] < 10 and rng.randint(2) == 1)
            values[v] += 1 if up else -1
            tokens += [v, INC if up else DEC]
        elif kind == "if":
            u, greater, n, m = (
                rng.randint(3),
                rng.randint(2) == 1,
                rng.randint(1, 11),
                rng.randint(1, 11),
            )
            if (values[u] > n) if greater else (values[u] < n):
                values[v] = m
            tokens += [IF, u, GT if greater else LT, const(n), v, ASSIGN, const(m)]
        else:
            tokens += [PRINT, v]
        left -= SIZES[kind]
    v = rng.randint(3)
    return tokens + [PRINT, v], values[v]


def variable_tracking(
    rng: np.random.RandomState, min_length: int, n_sequences: int, max_length: int | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Returns X (n, width, 20) float64 one-hot (zeros on padding), y (n,) int64 in 0..9 (the
    printed value - 1), mask (n, width) bool."""
    if min_length < MIN_PROGRAM:
        raise ValueError(f"variable_tracking needs length >= {MIN_PROGRAM}, got {min_length}")
    n, width = n_sequences, max_length or default_width(min_length)
    lengths, mask = draw_lengths(rng, min_length, width, n)
    tokens = np.zeros((n, width), dtype=np.int64)
    y = np.zeros(n, dtype=np.int64)
    for i, length in enumerate(lengths):
        program_tokens, value = program(rng, int(length))
        tokens[i, :length], y[i] = program_tokens, value - 1
    return one_hot(tokens, N_SYMBOLS, mask), y, mask
