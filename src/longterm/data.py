"""LightningDataModules that generate every training batch afresh from its key, and a validation
set once per run (§2.2, §2.3); the batches themselves come from batches.py."""

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytorch_lightning as L
from torch.utils.data import DataLoader, Dataset, Sampler

from longterm.batches import (
    TRAIN,
    Batch,
    FixedLengthBatches,
    VariableLengthBatches,
    batch_rng,
    fixed_validation_set,
    validation_lengths,
    variable_validation_set,
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
        self.T0, self.lengths, self.val_size = T0, lengths, val_size
        self.train_recipe()  # a bad lengths mode fails here, not at the first batch

    def train_recipe(self) -> FixedLengthBatches:
        return FixedLengthBatches(
            self.task, self.T0, self.batch_size, self.lengths, self.task_params
        )

    def validation_set(self) -> list[Batch]:
        return fixed_validation_set(
            self.task,
            self.T0,
            self.batch_size,
            self.val_size,
            self.seed,
            self.lengths,
            self.task_params,
        )


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
        return validation_lengths(self.min_length, self.max_length, self.val_batches)

    def train_recipe(self) -> VariableLengthBatches:
        return VariableLengthBatches(
            self.task, self.min_length, self.max_length, self.batch_size, self.task_params
        )

    def validation_set(self) -> list[Batch]:
        return variable_validation_set(
            self.task,
            self.min_length,
            self.max_length,
            self.val_batches,
            self.val_batch_size,
            self.seed,
            self.task_params,
        )
