"""LightningDataModules that generate every batch afresh from the task generators (§2.2, §2.3).

A training batch is drawn from its own `RandomState`, seeded from (run seed, stream, epoch, batch
index), so a run is exact and does not depend on the number of DataLoader workers. Batches are
tuples x (B, T, F) float32, y (B,) float32, mask (B, T) bool with True on real steps.
"""

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import lightning as L
import numpy as np
import torch
from torch import Tensor
from torch.utils.data import DataLoader, Dataset, Sampler

from longterm.config import LENGTHS
from longterm.tasks import default_width, generate

Batch = tuple[Tensor, Tensor, Tensor]
TRAIN, VALIDATION = 0, 1  # random streams


def batch_rng(seed: int, stream: int, epoch: int, index: int) -> np.random.RandomState:
    """The RandomState of one batch; SeedSequence mixes the four integers into the MT19937 state."""
    return np.random.RandomState(
        np.random.SeedSequence([seed, stream, epoch, index]).generate_state(4)
    )


def as_batch(X: np.ndarray, y: np.ndarray, mask: np.ndarray) -> Batch:
    return (
        torch.from_numpy(X).float(),
        torch.from_numpy(np.asarray(y, dtype=np.float32)),
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


class KeyedBatches(Dataset):
    """Item (epoch, index) is the batch that `recipe` draws from that key's own RandomState."""

    def __init__(self, recipe: Callable[[np.random.RandomState], Batch], seed: int, stream: int):
        self.recipe, self.seed, self.stream = recipe, seed, stream

    def __getitem__(self, key: tuple[int, int]) -> Batch:
        return self.recipe(batch_rng(self.seed, self.stream, *key))


class EpochKeys(Sampler):
    """Yields the keys (epoch, 0..n-1); Lightning calls `set_epoch` at the start of every epoch."""

    def __init__(self, n: int):
        self.n, self.epoch = n, 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __iter__(self) -> Iterator[tuple[int, int]]:
        return ((self.epoch, i) for i in range(self.n))

    def __len__(self) -> int:
        return self.n


class TaskDataModule(L.LightningDataModule):
    """Training batches generated on the fly; a validation set generated once in `setup`."""

    def __init__(
        self,
        task: str,
        seed: int = 0,
        batch_size: int = 100,
        batches_per_epoch: int = 1000,
        num_workers: int = 0,
        task_params: dict[str, Any] | None = None,
    ):
        super().__init__()
        self.task, self.seed = task, seed
        self.task_params = dict(task_params or {})  # the task's own keys (associative_recall: k)
        self.batch_size = batch_size
        self.batches_per_epoch = batches_per_epoch
        self.num_workers = num_workers
        self.validation: list[Batch] = []

    def train_recipe(self) -> Callable[[np.random.RandomState], Batch]:
        raise NotImplementedError

    def validation_set(self) -> list[Batch]:
        raise NotImplementedError

    def setup(self, stage: str | None = None) -> None:
        if not self.validation:
            self.validation = self.validation_set()

    def train_dataloader(self) -> DataLoader:
        return DataLoader(
            KeyedBatches(self.train_recipe(), self.seed, TRAIN),
            sampler=EpochKeys(self.batches_per_epoch),
            batch_size=None,  # each item is already a whole batch
            num_workers=self.num_workers,
            persistent_workers=self.num_workers > 0,
        )

    def val_dataloader(self) -> DataLoader:
        return DataLoader(self.validation, batch_size=None)


class FixedLengthData(TaskDataModule):
    """Table 1's setting: sequences of length about T0; validation is `val_size` sequences drawn
    the same way as training batches, from a separate stream."""

    def __init__(
        self, task: str, T0: int, lengths: str = "per_sequence", val_size: int = 1000, **kw
    ):
        super().__init__(task, **kw)
        if lengths not in LENGTHS:
            raise ValueError(
                f"unknown lengths mode {lengths!r}; choose one of {', '.join(LENGTHS)}"
            )
        self.T0, self.lengths, self.val_size = T0, lengths, val_size

    def train_recipe(self) -> FixedLengthBatches:
        return FixedLengthBatches(
            self.task, self.T0, self.batch_size, self.lengths, self.task_params
        )

    def validation_set(self) -> list[Batch]:
        starts = range(0, self.val_size, self.batch_size)
        sizes = [min(self.batch_size, self.val_size - start) for start in starts]
        return [
            FixedLengthBatches(self.task, self.T0, size, self.lengths, self.task_params)(
                batch_rng(self.seed, VALIDATION, 0, i)
            )
            for i, size in enumerate(sizes)
        ]


class VariableLengthData(TaskDataModule):
    """§2.3: one length per minibatch on [min_length, max_length]; validation as the paper's code:
    `val_batches` batches of `val_batch_size` at lengths int(linspace(min_length, max_length))."""

    def __init__(
        self,
        task: str,
        min_length: int = 50,
        max_length: int = 10000,
        val_batches: int = 100,
        val_batch_size: int = 10,
        **kw,
    ):
        super().__init__(task, **kw)
        self.min_length, self.max_length = min_length, max_length
        self.val_batches, self.val_batch_size = val_batches, val_batch_size

    @property
    def val_lengths(self) -> list[int]:
        return [int(t) for t in np.linspace(self.min_length, self.max_length, self.val_batches)]

    def train_recipe(self) -> VariableLengthBatches:
        return VariableLengthBatches(
            self.task, self.min_length, self.max_length, self.batch_size, self.task_params
        )

    def validation_set(self) -> list[Batch]:
        return [
            as_batch(
                *generate(
                    self.task,
                    batch_rng(self.seed, VALIDATION, 0, i),
                    t,
                    self.val_batch_size,
                    t,
                    **self.task_params,
                )
            )
            for i, t in enumerate(self.val_lengths)
        ]
