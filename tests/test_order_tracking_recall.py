"""The order, state and recall tasks: each generator's documented invariants."""

from itertools import product

import numpy as np
import pytest

from longterm.config.builtins import generator_of
from longterm.tasks import default_width, generate
from longterm.tasks.order import N_SYMBOLS, B, E, X, order_blind_ceiling, positions
from longterm.tasks.recall import FILLER, N_KEYS, QUERY
from longterm.tasks.tracking import SYMBOLS

NEW_TASKS = {
    "temporal_order": {},
    "temporal_order3": {},
    "variable_tracking": {},
    "associative_recall": {"k": 4},
}


@pytest.mark.parametrize("task, params", NEW_TASKS.items())
def test_lengths_padding_and_seeding(task, params):
    X_, y, mask = generate(generator_of(task), np.random.RandomState(5), 40, 3000, **params)
    width = default_width(40)
    lengths = mask.sum(1)
    assert X_.shape[:2] == (3000, width) and y.dtype == np.int64
    assert set(np.unique(lengths)) == set(range(40, width))  # uniform on [T0, width - 1]
    assert np.all(mask == (np.arange(width) < lengths[:, None]))
    assert np.all(X_[~mask] == 0) and np.all(X_[mask].sum(-1) >= 1)  # one-hot on real steps only
    again = generate(generator_of(task), np.random.RandomState(5), 40, 3000, **params)
    assert all(np.array_equal(a, b) for a, b in zip((X_, y, mask), again, strict=True))
    X1, _, mask1 = generate(generator_of(task), np.random.RandomState(5), 37, 10, 37, **params)
    assert X1.shape[:2] == (10, 37) and mask1.all()  # one length, no padding


def constant_predictor_accuracy(y: np.ndarray) -> float:
    """The best a predictor that ignores its input can score: the most frequent class's share."""
    return np.bincount(y).max() / len(y)


@pytest.mark.parametrize("task, n_relevant", [("temporal_order", 2), ("temporal_order3", 3)])
def test_temporal_order_symbols_positions_and_classes(task, n_relevant):
    n, T0 = 40_000, 100
    X_, y, mask = generate(generator_of(task), np.random.RandomState(0), T0, n)
    tokens = X_.argmax(-1)
    lengths, rows = mask.sum(1), np.arange(n)
    assert np.all(tokens[:, 0] == E) and np.all(tokens[rows, lengths - 1] == B)
    relevant = (tokens >= X) & mask
    assert np.all(relevant.sum(1) == n_relevant)
    steps = np.argwhere(relevant)[:, 1].reshape(n, n_relevant)
    windows = positions(T0, n_relevant)
    assert windows[:2] == [(10, 20), (50, 60)] if n_relevant == 2 else windows[1] == (33, 43)
    for j, (lo, hi) in enumerate(windows):
        assert set(np.unique(steps[:, j])) == set(range(lo, hi + 1))
    other = mask & ~relevant
    other[:, 0], other[rows, lengths - 1] = False, False
    assert set(np.unique(tokens[other])) == {2, 3, 4, 5}  # distractors a..d
    is_y = tokens[rows[:, None], steps] - X  # the relevant symbols in order, X=0, Y=1
    assert np.array_equal(y, is_y @ (2 ** np.arange(n_relevant)[::-1]))
    shares = np.bincount(y, minlength=2**n_relevant) / n
    assert np.abs(shares - 2.0**-n_relevant).max() < 0.01  # balanced classes
    assert constant_predictor_accuracy(y) < 2.0**-n_relevant + 0.01


@pytest.mark.parametrize("n_relevant", [2, 3])
def test_order_blind_ceiling_is_what_counting_x_and_y_allows(n_relevant):
    """The best predictor from the number of Y alone (what pooling can see) scores the ceiling."""
    task = "temporal_order" if n_relevant == 2 else "temporal_order3"
    X_, y, _ = generate(generator_of(task), np.random.RandomState(1), 50, 40_000)
    n_y = X_[:, :, X + 1].sum(1).astype(int)
    best = sum(np.bincount(y[n_y == c]).max() for c in np.unique(n_y)) / len(y)
    assert abs(best - order_blind_ceiling(n_relevant)) < 0.01
    assert order_blind_ceiling(2) == 0.75 and order_blind_ceiling(3) == 0.5


def test_temporal_order_positions_scale_with_length():
    assert positions(100, 2) == [(10, 20), (50, 60)]
    assert positions(1000, 3) == [(100, 200), (330, 430), (660, 760)]
    X_, _, mask = generate(generator_of("temporal_order"), np.random.RandomState(2), 11, 500)
    assert X_.shape[-1] == N_SYMBOLS and np.all((X_.argmax(-1) >= X).sum(1) == 2)


def run_program(tokens: list[str]) -> tuple[int, list[str]]:
    """An interpreter of the documented grammar: the last printed value and the statement kinds."""
    values, kinds, i = {}, [], 0
    while i < len(tokens):
        t = tokens[i]
        if t == "print":
            last, i = values[tokens[i + 1]], i + 2
            kinds.append("print")
        elif t == "if":
            u, op, n, v, eq, m = tokens[i + 1 : i + 7]
            assert eq == "=" and op in "<>"
            if (values[u] > int(n)) if op == ">" else (values[u] < int(n)):
                values[v] = int(m)
            i += 7
            kinds.append("if")
        elif tokens[i + 1] == "=":
            values[t], i = int(tokens[i + 2]), i + 3
            kinds.append("assign")
        else:
            values[t] += 1 if tokens[i + 1] == "++" else -1
            i += 2
            kinds.append("step")
        assert all(1 <= v <= 10 for v in values.values())
    return last, kinds


def test_variable_tracking_target_is_the_last_printed_value():
    X_, y, mask = generate(generator_of("variable_tracking"), np.random.RandomState(3), 60, 2000)
    seen_kinds = set()
    for x, target, m in zip(X_, y, mask, strict=True):
        tokens = [SYMBOLS[i] for i in x[m].argmax(-1)]
        assert tokens[:9:3] == ["a", "b", "c"] and tokens[-2] == "print"
        value, kinds = run_program(tokens)
        assert target == value - 1 and kinds[:3] == ["assign"] * 3 and kinds[-1] == "print"
        seen_kinds |= set(kinds)
    assert seen_kinds == {"assign", "step", "if", "print"}
    assert set(np.unique(y)) == set(range(10))
    assert constant_predictor_accuracy(y) < 0.15


def test_variable_tracking_shortest_program():
    X_, y, mask = generate(generator_of("variable_tracking"), np.random.RandomState(0), 11, 5, 11)
    assert mask.all() and X_.shape == (5, 11, len(SYMBOLS))
    with pytest.raises(ValueError, match="needs length >= 11"):
        generate(generator_of("variable_tracking"), np.random.RandomState(0), 10, 5, 10)


@pytest.mark.parametrize("k", [1, 2, 8])
def test_associative_recall_pairs_query_and_target(k):
    n = 20_000
    X_, y, mask = generate(generator_of("associative_recall"), np.random.RandomState(4), 50, n, k=k)
    tokens, rows, lengths = X_.argmax(-1), np.arange(n), mask.sum(1)
    keys, values = tokens[:, 0 : 2 * k : 2], tokens[:, 1 : 2 * k : 2] - N_KEYS
    assert keys.max() < N_KEYS and values.min() >= 0 and values.max() < N_KEYS
    assert all(len(set(row)) == k for row in keys)  # distinct keys
    query = X_[rows, lengths - 1]
    assert np.all(query[:, QUERY] == 1) and np.all(query.sum(-1) == 2)
    asked = query[:, :N_KEYS].argmax(-1)
    match = keys == asked[:, None]
    assert np.all(match.sum(1) == 1)  # the query is one of the pairs' keys
    assert np.array_equal(y, values[match])
    filler = mask.copy()
    filler[:, : 2 * k], filler[rows, lengths - 1] = False, False
    assert np.all(tokens[filler] == FILLER)
    assert constant_predictor_accuracy(y) < 1 / 16 + 0.01  # chance 1/16


def test_associative_recall_refuses_too_many_pairs():
    with pytest.raises(ValueError, match="k=8 needs length >= 17"):
        generate(generator_of("associative_recall"), np.random.RandomState(0), 16, 2, 16, k=8)
    with pytest.raises(ValueError, match="must be in 1..16"):
        generate(generator_of("associative_recall"), np.random.RandomState(0), 50, 2, k=17)


def test_xor_as_classes_is_balanced():
    _, y, _ = generate(generator_of("xor"), np.random.RandomState(0), 50, 20_000)
    assert abs(y.mean() - 0.5) < 0.01


def test_class_products_cover_every_label():
    for task, n_relevant in (("temporal_order", 2), ("temporal_order3", 3)):
        _, y, _ = generate(generator_of(task), np.random.RandomState(9), 30, 4000)
        assert set(np.unique(y)) == set(range(len(list(product("XY", repeat=n_relevant)))))
