"""Batches of the task generators as tensors, each drawn from its own key (§2.2, §2.3).

A batch is drawn from its own `RandomState`, seeded from (run seed, stream, epoch, batch index),
so a run is exact and does not depend on the number of DataLoader workers. Batches are tuples
x (B, T, F) float32 (token ids x (B, T) int64 for a task of token inputs), y (B,) float32 (a
value) or int64 (a class), mask (B, T) bool with True on real steps. No Lightning:
the DataModules (data.py), the benchmark and the analysis's references all draw from here.
"""

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import Tensor

from longterm.choices import LENGTHS
from longterm.tasks import default_width, generate

Batch = tuple[Tensor, Tensor, Tensor]
TRAIN, VALIDATION = 0, 1  # random streams


def batch_seed(seed: int, stream: int, epoch: int, index: int) -> np.ndarray:
    """The MT19937 seed of one batch: SeedSequence mixes the four integers into four words."""
    return np.random.SeedSequence([seed, stream, epoch, index]).generate_state(4)


def batch_rng(seed: int, stream: int, epoch: int, index: int) -> np.random.RandomState:
    """The RandomState of one batch (`RandomState.seed(batch_seed(...))` of any RandomState
    gives it the same state)."""
    return np.random.RandomState(batch_seed(seed, stream, epoch, index))


def as_batch(X: np.ndarray, y: np.ndarray, mask: np.ndarray) -> Batch:
    """Tensors from a generator's arrays, each converted at most once: X float64 -> float32 (the
    generators draw in float64 to equal the paper's), token ids X (n, T) (`inputs: tokens`) ->
    int64, a float or bool y -> float32, an int64 class kept as it is (the loss takes it as it
    comes), the mask shared with numpy."""
    y = torch.from_numpy(np.asarray(y))
    tokens = np.issubdtype(X.dtype, np.integer)
    return (
        torch.from_numpy(X).long() if tokens else torch.from_numpy(X).float(),
        y if y.dtype == torch.int64 else y.float(),
        torch.from_numpy(mask),
    )


@dataclass(frozen=True)
class FixedLengthBatches:
    """Batches at T0 (§2.2). `per_sequence`: the paper's code, each sequence its own length on
    [T0, width - 1], padded to the width, with the mask. `per_batch`: one length per batch from
    the same range, no padding."""

    task: str
    T0: int
    batch_size: int
    lengths: str = "per_sequence"
    task_params: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.lengths not in LENGTHS:
            raise ValueError(
                f"unknown lengths mode {self.lengths!r}; choose one of {', '.join(LENGTHS)}"
            )

    def __call__(self, rng: np.random.RandomState) -> Batch:
        if self.lengths == "per_sequence":
            return as_batch(*generate(self.task, rng, self.T0, self.batch_size, **self.task_params))
        length = int(rng.randint(self.T0, default_width(self.T0)))
        return as_batch(
            *generate(self.task, rng, length, self.batch_size, length, **self.task_params)
        )


@dataclass(frozen=True)
class VariableLengthBatches:
    """One length per batch, uniform on [min_length, max_length] inclusive (§2.3)."""

    task: str
    min_length: int
    max_length: int
    batch_size: int
    task_params: dict[str, Any] = field(default_factory=dict)

    def __call__(self, rng: np.random.RandomState) -> Batch:
        length = int(rng.randint(self.min_length, self.max_length + 1))
        return as_batch(
            *generate(self.task, rng, length, self.batch_size, length, **self.task_params)
        )


def fixed_validation_set(
    task: str,
    T0: int,
    batch_size: int,
    val_size: int,
    seed: int,
    lengths: str = "per_sequence",
    task_params: dict[str, Any] | None = None,
) -> list[Batch]:
    """`val_size` sequences drawn as training batches are, in batches of `batch_size`, from the
    validation stream (§2.2)."""
    starts = range(0, val_size, batch_size)
    sizes = [min(batch_size, val_size - start) for start in starts]
    params = dict(task_params or {})
    return [
        FixedLengthBatches(task, T0, size, lengths, params)(batch_rng(seed, VALIDATION, 0, i))
        for i, size in enumerate(sizes)
    ]


def validation_lengths(min_length: int, max_length: int, n: int) -> list[int]:
    """The paper's test lengths: int(linspace(min_length, max_length, n)) (§2.3)."""
    return [int(t) for t in np.linspace(min_length, max_length, n)]


def variable_validation_set(
    task: str,
    min_length: int,
    max_length: int,
    val_batches: int,
    val_batch_size: int,
    seed: int,
    task_params: dict[str, Any] | None = None,
) -> list[Batch]:
    """One batch of `val_batch_size` sequences at each test length, from the validation stream."""
    params = dict(task_params or {})
    lengths = validation_lengths(min_length, max_length, val_batches)
    return [
        as_batch(*generate(task, batch_rng(seed, VALIDATION, 0, i), t, val_batch_size, t, **params))
        for i, t in enumerate(lengths)
    ]
