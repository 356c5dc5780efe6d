"""Task generators: pure numpy, `(rng, min_length, n_sequences, max_length=None, **params) ->
(X, y, mask)`; no torch, no Lightning.

Each task's conf file names its generator by import path (`conf/task/*.yaml`, `generator:`), the
built-ins' as a user's (longterm.plugins.resolve); `generate(generator, rng, ...)` draws a batch
from a generator given by path or as the function. Every task pads to the paper's width
`int(ceil(1.1 * min_length))` (or `max_length`), so the datamodules treat them all alike: the
paper's tasks and those after them with lengths uniform on [min_length, width - 1], the recall
tasks of token inputs (mqar, selective_copying, induction_heads) at one length, min_length. X is
(n, width, n_features) float64 with zeros on padding, or for a task of token inputs (`inputs:
tokens`) (n, width) int64 token ids, 0 on padding; mask (n, width) bool with True on real steps;
y is a float target (regression) or an int64 class (classification), one per sequence (n,), or
for the tasks that label steps (`task.labels=step`) one per step (n, width) with NO_TARGET on
the steps that have none.
docs/tasks.md lists each task's source, sampling rules and chance level.
tasks/inputs.py gives the features per step an encoder reads for a section's input format.
"""

from collections.abc import Callable

import numpy as np

from longterm.plugins.resolve import generator
from longterm.tasks.algorithmic import algorithmic
from longterm.tasks.induction_heads import induction_heads
from longterm.tasks.knowledge import fixed_knowledge
from longterm.tasks.lengths import NO_TARGET, default_width
from longterm.tasks.marked import MIN_LENGTH, addition, multiplication, xor
from longterm.tasks.mqar import mqar
from longterm.tasks.order import temporal_order, temporal_order3
from longterm.tasks.recall import associative_recall
from longterm.tasks.selective_copying import selective_copying
from longterm.tasks.tracking import variable_tracking

Generator = Callable[..., tuple[np.ndarray, np.ndarray, np.ndarray]]

__all__ = [
    "MIN_LENGTH",
    "NO_TARGET",
    "Generator",
    "addition",
    "algorithmic",
    "associative_recall",
    "default_width",
    "fixed_knowledge",
    "generate",
    "induction_heads",
    "mqar",
    "multiplication",
    "selective_copying",
    "temporal_order",
    "temporal_order3",
    "variable_tracking",
    "xor",
]


def generate(
    task: "str | Generator",
    rng: np.random.RandomState,
    min_length: int,
    n_sequences: int,
    max_length: int | None = None,
    **params,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Draw `n_sequences` sequences from the generator `task` (an import path or the function);
    `params` are its own (associative_recall: k; algorithmic: statements, variables;
    fixed_knowledge: arity; mqar: vocab, kv_pairs, power_a, random_non_queries)."""
    return generator(task)(rng, min_length, n_sequences, max_length, **params)
