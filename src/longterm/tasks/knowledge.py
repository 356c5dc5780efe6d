"""Fixed knowledge: the target of a step is a fixed random function of the tokens, drawn once
from the task's own seed (not the run's), so a model must hold the function in its weights;
the context only says where to apply it. The knowledge that Sukhbaatar et al. (2019, "Augmenting
Self-attention with Persistent Memory") store in persistent slots, or a transformer in its
feed-forward sublayers, and that attention over the context alone cannot supply.

Tokens uniform on a vocabulary of `vocab` (task.params.vocab, 16 by default), one-hot. `arity`
(task.params.arity) picks the function:
- 2 (default): y_t = f(x_{t-1}, x_t) for t >= 1, a table of vocab x vocab pairs; step 0 has no
  target.
  A model must bring the previous token to step t and map the pair through the table: a lookup
  of one token alone, which an input embedding and the head can hold, is not enough (the head,
  two leaky-ReLU layers, is a nonlinear memory every model has, so it can hold part of the table);
- 1: y_t = f(x_t), the lookup of one token. Every model with a learned input projection can store
  it there, whatever its layers (docs/tasks.md).

The table is balanced: each of the 8 classes is the value of the same number of entries, within one
when 8 does not divide them (a random permutation of the entries, modulo 8), so with uniform
tokens every class has probability 1/8. A vocabulary large enough that the table cannot be held
in the embedding and the head (docs/tasks.md, "A table too large for the embedding and the
head") is derived in longterm.experiments.claims.runs (`knowledge_vocab`).
Targets y (n, width) int64, NO_TARGET on step 0 (arity 2) and on padding.

Chance: 1/8. A model that sees only x_t at arity 2 (the per-step feed-forward model) can do no
better than the most frequent class of f(., x_t): `blind_ceiling()`, 0.273 for the table of 16.
"""

from functools import cache

import numpy as np

from longterm.tasks.lengths import NO_TARGET, default_width, draw_lengths, one_hot

VOCAB, CLASSES = 16, 8
KNOWLEDGE_SEED = 2019  # the task's own: the same table in every run
# The vocabulary of the claims' table too large for the embedding and the head, as derived by
# longterm.experiments.claims.runs.knowledge_vocab (tests/test_claims.py derives it again).
LARGE_VOCAB = 95


@cache
def table(arity: int, vocab: int = VOCAB) -> np.ndarray:
    """f: (vocab,) * arity int64 array of classes 0..CLASSES-1, each class equally often (within
    one). The default vocabulary's table is drawn from KNOWLEDGE_SEED + arity alone, as before
    `vocab` existed; any other from that and `vocab`."""
    seed = KNOWLEDGE_SEED + arity if vocab == VOCAB else [KNOWLEDGE_SEED + arity, vocab]
    entries = np.random.RandomState(seed).permutation(vocab**arity)
    f = (entries % CLASSES).reshape((vocab,) * arity)
    f.setflags(write=False)
    return f


def blind_ceiling(vocab: int = VOCAB) -> float:
    """The best accuracy at arity 2 from x_t alone: for each x_t, the share of the most frequent
    class over the previous tokens, averaged over x_t (tokens are uniform)."""
    f = table(2, vocab)
    return float(np.mean([np.bincount(f[:, b]).max() / vocab for b in range(vocab)]))


def fixed_knowledge(
    rng: np.random.RandomState,
    min_length: int,
    n_sequences: int,
    max_length: int | None = None,
    arity: int = 2,
    vocab: int = VOCAB,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Returns X (n, width, vocab) float64 one-hot (zeros on padding), y (n, width) int64 classes
    0..7 (NO_TARGET where a step has none), mask (n, width) bool."""
    if arity not in (1, 2):
        raise ValueError(f"fixed_knowledge: arity={arity} must be 1 or 2")
    if vocab < 2:
        raise ValueError(f"fixed_knowledge: vocab={vocab} must be at least 2")
    n, width = n_sequences, max_length or default_width(min_length)
    lengths, mask = draw_lengths(rng, min_length, width, n)
    tokens = rng.randint(vocab, size=(n, width))
    f = table(arity, vocab)
    y = np.full((n, width), NO_TARGET, dtype=np.int64)
    if arity == 1:
        y[:] = f[tokens]
    else:
        y[:, 1:] = f[tokens[:, :-1], tokens[:, 1:]]
    y[~mask] = NO_TARGET
    return one_hot(tokens, vocab, mask), y, mask
