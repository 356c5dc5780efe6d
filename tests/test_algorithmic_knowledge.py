"""The tasks that label steps: the algorithmic task's programs replayed by its interpreter, and the
fixed-knowledge task's table (docs/tasks.md)."""

import numpy as np
import pytest

from longterm.config.builtins import generator_of
from longterm.tasks import NO_TARGET, default_width, generate
from longterm.tasks.algorithmic import END, PRINT, SYMBOLS, VARIABLES, replay
from longterm.tasks.knowledge import CLASSES, LARGE_VOCAB, VOCAB, blind_ceiling, table


def tokens_of(text: str) -> list[int]:
    return [SYMBOLS.index(word) for word in text.split()]


def real_tokens(X: np.ndarray, mask: np.ndarray, i: int) -> list[int]:
    return X[i, mask[i]].argmax(-1).tolist()


def test_replay_follows_the_rules():
    program = "# a = 3 ; b = 9 ; if a < b : a ++ ; if a > 5 : b = 1 ; print a ; print b ; b -- ;"
    prints = replay(tokens_of(program + " print b ; # c = 2 ; print c"))
    assert [(p.value, p.statement, p.last_write) for p in prints] == [
        (4, 4, "if held"),
        (9, 5, "if not held"),
        (8, 7, "step"),
    ]  # the last `print c` is cut before its `;`: no label
    assert all(tokens_of(program + " print b ;")[p.step] == END for p in prints)


@pytest.mark.parametrize(
    "program, error",
    [
        ("# a ++ ;", "a is used before it has a value"),
        ("# a = 3 ; a = 4 ;", "assignment to a breaks the introduction rule"),
        ("# a = 3 ; if a > 1 : b = 2 ;", "assignment to b breaks the introduction rule"),
        ("# a = 10 ; a ++ ;", "a leaves 1..10: 11"),
        ("# a = 1 ; # print a ;", "a is used before it has a value"),  # `#` resets
    ],
)
def test_replay_refuses_a_program_that_breaks_a_rule(program, error):
    with pytest.raises(ValueError, match=error):
        replay(tokens_of(program))


@pytest.mark.parametrize("statements, variables", [(8, 3), (3, 5), (12, 1)])
def test_every_label_is_what_the_interpreter_prints(statements, variables):
    """Every generated sequence replays without breaking a rule; its labelled steps are exactly
    the `;` of its prints, each labelled with the printed value - 1, one step after `print v`."""
    params = {"statements": statements, "variables": variables}
    X, y, mask = generate(generator_of("algorithmic"), np.random.RandomState(3), 40, 400, **params)
    assert X.shape == (400, default_width(40), len(SYMBOLS)) and y.shape == mask.shape
    assert np.all(y[~mask] == NO_TARGET) and np.all(X[~mask] == 0)
    for i in range(len(X)):
        tokens = real_tokens(X, mask, i)
        assert tokens[0] == SYMBOLS.index("#")
        assert set(tokens) & set(range(len(VARIABLES))) <= set(range(variables))
        prints = replay(tokens)
        labelled = np.flatnonzero(y[i] != NO_TARGET)
        assert labelled.tolist() == [p.step for p in prints]
        assert y[i, labelled].tolist() == [p.value - 1 for p in prints]
        for p in prints:
            assert tokens[p.step - 2] == PRINT and tokens[p.step - 1] < len(VARIABLES)
        starts = [j for j, t in enumerate(tokens) if t == SYMBOLS.index("#")]
        for start, end in zip(starts, starts[1:], strict=False):  # each whole program
            assert tokens[start:end].count(END) == statements  # one `;` ends each statement


def test_statement_kinds_and_outcomes_all_occur():
    """Every kind of statement, both comparisons against a variable and a constant, conditions
    that hold and that do not, and values across 1..10 occur; the best constant predictor stays
    near 1/10."""
    X, y, mask = generate(generator_of("algorithmic"), np.random.RandomState(0), 50, 2000)
    text = " ".join(" ".join(SYMBOLS[t] for t in real_tokens(X, mask, i)) for i in range(len(X)))
    for piece in ("= ", "++", "--", "print", "if a <", "if b >", "< 5 :", "> c :"):
        assert piece in text, piece
    prints = [p for i in range(len(X)) for p in replay(real_tokens(X, mask, i))]
    kinds = {p.last_write for p in prints}
    assert kinds == {"assign", "step", "if held", "if not held"}
    labels = y[y != NO_TARGET]
    assert set(labels) == set(range(10))
    assert np.bincount(labels).max() / len(labels) < 0.15


def test_one_seed_one_stream():
    a = generate(generator_of("algorithmic"), np.random.RandomState(9), 30, 50, statements=5)
    b = generate(generator_of("algorithmic"), np.random.RandomState(9), 30, 50, statements=5)
    c = generate(generator_of("algorithmic"), np.random.RandomState(10), 30, 50, statements=5)
    assert all(np.array_equal(u, v) for u, v in zip(a, b, strict=True))
    assert not np.array_equal(a[0], c[0])


@pytest.mark.parametrize(
    "params, error", [({"variables": 6}, "variables=6"), ({"statements": 0}, "statements=0")]
)
def test_bad_parameters_are_refused(params, error):
    with pytest.raises(ValueError, match=error):
        generate(generator_of("algorithmic"), np.random.RandomState(0), 30, 1, **params)


@pytest.mark.parametrize("arity", [1, 2])
def test_fixed_knowledge_targets_are_the_fixed_table(arity):
    """One table for every run seed, balanced over the classes; step 0 unlabelled at arity 2."""
    f = table(arity)
    assert f.shape == (VOCAB,) * arity
    assert np.all(np.bincount(f.ravel()) == VOCAB**arity // CLASSES)
    for seed in (0, 1):
        X, y, mask = generate(
            generator_of("fixed_knowledge"), np.random.RandomState(seed), 20, 300, arity=arity
        )
        tokens = X.argmax(-1)
        expected = f[tokens] if arity == 1 else f[tokens[:, :-1], tokens[:, 1:]]
        if arity == 2:
            assert np.all(y[:, 0] == NO_TARGET)
        got = y if arity == 1 else y[:, 1:]
        real = mask if arity == 1 else mask[:, 1:]
        assert np.array_equal(got[real], expected[real]) and np.all(y[~mask] == NO_TARGET)
    assert table(arity) is f  # drawn once


def test_fixed_knowledge_reference_levels():
    """Chance 1/8; from x_t alone (arity 2) at most blind_ceiling(), which the table fixes."""
    X, y, mask = generate(generator_of("fixed_knowledge"), np.random.RandomState(4), 50, 2000)
    labels = y[y != NO_TARGET]
    assert abs(np.bincount(labels).max() / len(labels) - 1 / CLASSES) < 0.01
    current = X.argmax(-1)[y != NO_TARGET]
    best = sum(np.bincount(labels[current == b]).max() for b in range(VOCAB)) / len(labels)
    assert abs(best - blind_ceiling()) < 0.02 and blind_ceiling() == 0.2734375


def test_a_larger_vocabulary_has_its_own_balanced_table_and_leaves_the_default_as_it_was():
    """task.params.vocab: one-hot of that many tokens, targets from a table of vocab^2 pairs, each
    class within one of the same count; the default vocabulary's table is unchanged."""
    f = table(2, LARGE_VOCAB)
    counts = np.bincount(f.ravel(), minlength=CLASSES)
    assert f.shape == (LARGE_VOCAB, LARGE_VOCAB) and counts.max() - counts.min() <= 1
    assert np.array_equal(table(2, VOCAB), table(2)) and not np.array_equal(
        f[:VOCAB, :VOCAB], table(2)
    )
    X, y, mask = generate(
        generator_of("fixed_knowledge"), np.random.RandomState(0), 20, 50, vocab=LARGE_VOCAB
    )
    tokens = X.argmax(-1)
    assert X.shape[-1] == LARGE_VOCAB and tokens[mask].max() > VOCAB
    labelled = mask[:, 1:]
    assert np.array_equal(y[:, 1:][labelled], f[tokens[:, :-1], tokens[:, 1:]][labelled])
    assert 1 / CLASSES < blind_ceiling(LARGE_VOCAB) < blind_ceiling()
