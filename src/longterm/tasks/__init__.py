"""Task generators: pure numpy, `(rng, lengths) -> (X, y, mask)`; no torch, no Lightning.

`generate(task, rng, min_length, n_sequences, max_length=None, **params)` draws a batch of any
task. Every task pads to the paper's width `int(ceil(1.1 * min_length))` (or `max_length`) with
lengths uniform on [min_length, width - 1], so the datamodules treat them all alike. X is
(n, width, n_features) float64 with zeros on padding, mask (n, width) bool with True on real steps;
y is a float target (regression) or an int64 class (classification), one per sequence (n,), or
for the tasks that label steps (choices.STEP_TASKS) one per step (n, width) with NO_TARGET on the
steps that have none. docs/tasks.md lists each task's source, sampling rules and chance level.
"""

from collections.abc import Callable
from functools import partial

import numpy as np

from longterm.choices import TASKS
from longterm.tasks.algorithmic import algorithmic
from longterm.tasks.knowledge import fixed_knowledge
from longterm.tasks.lengths import NO_TARGET, default_width
from longterm.tasks.marked import MARKED_TASKS, MIN_LENGTH, generate_marked
from longterm.tasks.order import temporal_order, temporal_order3
from longterm.tasks.recall import associative_recall
from longterm.tasks.tracking import variable_tracking

Generator = Callable[..., tuple[np.ndarray, np.ndarray, np.ndarray]]

GENERATORS: dict[str, Generator] = {
    **{task: partial(generate_marked, task) for task in MARKED_TASKS},
    "xor_classification": partial(generate_marked, "xor"),  # the same data, two classes
    "temporal_order": temporal_order,
    "temporal_order3": temporal_order3,
    "variable_tracking": variable_tracking,
    "associative_recall": associative_recall,
    "algorithmic": algorithmic,
    "fixed_knowledge": fixed_knowledge,
}

__all__ = ["GENERATORS", "MIN_LENGTH", "NO_TARGET", "TASKS", "default_width", "generate"]


def generate(
    task: str,
    rng: np.random.RandomState,
    min_length: int,
    n_sequences: int,
    max_length: int | None = None,
    **params,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Draw `n_sequences` sequences of `task`; `params` are its own (associative_recall: k;
    algorithmic: statements, variables; fixed_knowledge: arity)."""
    if task not in GENERATORS:
        raise ValueError(f"unknown task {task!r}; choose one of {', '.join(TASKS)}")
    return GENERATORS[task](rng, min_length, n_sequences, max_length, **params)
