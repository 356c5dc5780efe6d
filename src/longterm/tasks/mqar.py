"""Multi-query associative recall (MQAR), as zoology generates it (Arora et al. 2023, "Zoology:
Measuring and improving recall in efficient language models", §3; HazyResearch/zoology,
zoology/data/multiquery_ar.py, `multiquery_ar`).

Tokens, ids in 0..vocab-1: 0 is the filler; keys are drawn from 1..vocab/2-1, values from
vocab/2..vocab-1. A sequence of T = min_length steps holds
- steps 0..2k-1: k pairs `key value`, k distinct keys and k distinct values per sequence;
- steps 2k..T-1: every key once as a query, at step 2k + 2g for a gap g drawn without replacement
  from 0..(T - 2k) // 2 - 1 with zoology's power law p(g) ∝ a (g + 1)^(a - 1) (`power_a` = a;
  a = 1 is uniform, a small a puts most queries early); the other steps are the filler, or with
  `random_non_queries` a token uniform on 0..vocab-1.
The label of a query step is the queried key's value (class = the token id); every other step has
none (NO_TARGET, zoology's -100).

Draws, from `rng` in zoology's order (its `np.random.seed(seed)` and the global generator): the
keys of each sequence (`choice` without replacement), then the values, then the gaps (`choice`
without replacement with p). So for RandomState(seed) the tokens and labels equal zoology's with
`random_non_queries=False`. Zoology fills the non-query steps from torch's global generator,
which its seed does not set; here they come last from `rng` (`randint(vocab)` over the whole
sequence, kept where the step is a filler), so a run stays a function of its seed. Their
distribution is zoology's.

Lengths: one fixed length T = min_length (zoology's `input_seq_len`), padded to the framework's
width (`max_length` or int(ceil(1.1 T))), the padding masked; zoology's own checks: 4k <= T and
k < vocab/2. Chance: values are uniform on the vocab/2 values, so a constant answer scores
2/vocab; the contract check measures it.
"""

import numpy as np

from longterm.tasks.lengths import NO_TARGET, default_width


def query_gap_law(space: int, power_a: float) -> np.ndarray:
    """zoology's power law over the gaps 0..space-1: p(g) ∝ a (g + 1)^(a - 1), normalised."""
    p = power_a * np.arange(1, space + 1) ** (power_a - 1)
    return p / p.sum()


def mqar(
    rng: np.random.RandomState,
    min_length: int,
    n_sequences: int,
    max_length: int | None = None,
    vocab: int = 8192,
    kv_pairs: int = 8,
    power_a: float = 0.01,
    random_non_queries: bool = True,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Returns X (n, width) int64 tokens (0 on padding), y (n, width) int64 values on the query
    steps and NO_TARGET elsewhere, mask (n, width) bool, True on the first min_length steps."""
    T, k, n = min_length, kv_pairs, n_sequences
    if k < 1:
        raise ValueError(f"mqar: kv_pairs={k} must be >= 1")
    if 4 * k > T:
        raise ValueError(f"mqar: kv_pairs={k} needs length >= {4 * k} (4 steps a pair), got {T}")
    if not k < vocab // 2:
        raise ValueError(f"mqar: vocab={vocab} has fewer than kv_pairs={k} keys (1..vocab/2-1)")
    if not power_a > 0:
        raise ValueError(f"mqar: power_a={power_a} must be > 0")
    width = max_length or default_width(T)
    half = vocab // 2
    keys = np.stack([rng.choice(np.arange(1, half), k, replace=False) for _ in range(n)])
    values = np.stack([rng.choice(np.arange(half, vocab), k, replace=False) for _ in range(n)])
    space = (T - 2 * k) // 2
    law = query_gap_law(space, power_a)
    gaps = np.stack([rng.choice(space, k, replace=False, p=law) for _ in range(n)])
    tokens = np.zeros((n, width), dtype=np.int64)
    tokens[:, 0 : 2 * k : 2], tokens[:, 1 : 2 * k : 2] = keys, values
    queries = 2 * k + 2 * gaps
    np.put_along_axis(tokens, queries, keys, axis=1)
    y = np.full((n, width), NO_TARGET, dtype=np.int64)
    np.put_along_axis(y, queries, values, axis=1)
    mask = np.broadcast_to(np.arange(width) < T, (n, width)).copy()
    if random_non_queries:
        noise = rng.randint(vocab, size=(n, T))
        filler = tokens[:, :T] == 0
        tokens[:, :T][filler] = noise[filler]
    return tokens, y, mask
