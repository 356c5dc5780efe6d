"""LightningDataModules that generate every training batch afresh from its key, and a validation
set once per run (§2.2, §2.3); the batches themselves come from batches.py."""

import os
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytorch_lightning as L
from torch.utils.data import DataLoader, Dataset, Sampler

from longterm.choices import AUTO
from longterm.training.batches import (
    TRAIN,
    Batch,
    FixedLengthBatches,
    VariableLengthBatches,
    batch_seed,
    fixed_validation_set,
    validation_lengths,
    variable_validation_set,
)


class KeyedBatches(Dataset):
    """Item (epoch, index) is the batch that `recipe` draws from that key's own RandomState."""

    def __init__(self, recipe: Callable[[np.random.RandomState], Batch], seed: int, stream: int):
        self.recipe, self.seed, self.stream = recipe, seed, stream
        # One RandomState, seeded anew for each batch (batches.batch_rng's state): a new one is
        # first seeded from fresh entropy, which costs more than many a batch's generation
        # (bench/cuts.py: a batch's RandomState).
        self.rng = np.random.RandomState()

    def __getitem__(self, key: tuple[int, int]) -> Batch:
        self.rng.seed(batch_seed(self.seed, self.stream, *key))
        return self.recipe(self.rng)


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


# data.num_workers=auto on an accelerator: at most this many workers (at T0 = 10000 a batch takes
# about 9 ms to generate on one core, so 8 workers deliver one every ~1.2 ms).
MAX_FEED_WORKERS = 8


def feed_workers(num_workers: int | str, device_type: str) -> int:
    """DataLoader workers for `data.num_workers` on a device of `device_type` (cpu, cuda, ...).

    A count is used as given. `auto`: 0 on the CPU, where the update itself needs every core and
    a batch is generated between updates in the main process; on an accelerator, which leaves the
    CPUs idle while it computes, every CPU this job may run on (os.sched_getaffinity) but one,
    kept for the process that drives the device, up to MAX_FEED_WORKERS.
    """
    if num_workers != AUTO:
        return int(num_workers)
    if device_type == "cpu":
        return 0
    return max(0, min(len(os.sched_getaffinity(0)) - 1, MAX_FEED_WORKERS))


class TaskDataModule(L.LightningDataModule):
    """Training batches generated on the fly; a validation set generated once in `setup`.

    The device comes from the Trainer the module is attached to (the CPU without one): it sets
    `num_workers=auto` (feed_workers) and pins batches in page-locked memory for CUDA, so the copy
    to the device runs asynchronously.
    """

    def __init__(
        self,
        task: str,
        seed: int = 0,
        batch_size: int = 100,
        batches_per_epoch: int = 1000,
        num_workers: int | str = AUTO,
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

    def device_type(self) -> str:
        """The type of the device the Trainer trains on (cpu, cuda, ...); cpu without a Trainer."""
        return "cpu" if self.trainer is None else self.trainer.strategy.root_device.type

    def keyed_batches(self) -> KeyedBatches:
        """The training batches, by key (epoch, index)."""
        return KeyedBatches(self.train_recipe(), self.seed, TRAIN)

    def train_dataloader(self) -> DataLoader:
        if getattr(self.trainer, "overfit_batches", 0) > 0:  # none without a Trainer
            return first_epoch_loader(
                self.keyed_batches(), self.batches_per_epoch, self.num_workers, self.device_type()
            )
        return keyed_loader(
            self.keyed_batches(), self.batches_per_epoch, self.num_workers, self.device_type()
        )

    def val_dataloader(self) -> DataLoader:
        return DataLoader(self.validation, batch_size=None, pin_memory=self.device_type() == "cuda")


class EpochBatches:
    """An epoch's batches, key by key, as a DataLoader of no workers gives them on the CPU,
    without its per-batch work (the sampler's next key, the fetcher, a walk over the batch to
    convert what is already tensors; bench/cuts.py: an epoch's batches). Lightning sets the
    epoch of `sampler`, as of a DataLoader's."""

    num_workers, pin_memory = 0, False  # what a DataLoader says of itself

    def __init__(self, batches: Dataset, sampler: EpochKeys):
        self.batches, self.sampler = batches, sampler

    def __iter__(self) -> Iterator[Batch]:
        return map(self.batches.__getitem__, self.sampler)

    def __len__(self) -> int:
        return len(self.sampler)


def keyed_loader(
    batches: Dataset, batches_per_epoch: int, num_workers: int | str, device: str
) -> DataLoader | EpochBatches:
    """The loader of an epoch's batches, keys (epoch, 0..batches_per_epoch-1), on a device of
    type `device` (feed_workers): on the CPU without workers, the batches as they are made."""
    workers = feed_workers(num_workers, device)
    if workers == 0 and device == "cpu":
        return EpochBatches(batches, EpochKeys(batches_per_epoch))
    return DataLoader(
        batches,
        sampler=EpochKeys(batches_per_epoch),
        batch_size=None,  # each item is already a whole batch
        num_workers=workers,
        persistent_workers=workers > 0,
        pin_memory=device == "cuda",
    )


class FirstEpoch(Dataset):
    """The first epoch's batches, by index: item i is the batch of key (0, i), every epoch."""

    def __init__(self, batches: KeyedBatches, n: int):
        self.batches, self.n = batches, n

    def __getitem__(self, index: int) -> Batch:
        return self.batches[(0, index)]

    def __len__(self) -> int:
        return self.n


def first_epoch_loader(
    batches: KeyedBatches, batches_per_epoch: int, num_workers: int | str, device: str
) -> DataLoader:
    """The loader under Lightning's `trainer.overfit_batches` (a debug run, config/debug.py): the
    first epoch's batches in order every epoch, of which Lightning takes the first N, so the run
    fits the same batches again (a batch's key holds its epoch: the usual loader draws new ones)."""
    workers = feed_workers(num_workers, device)
    return DataLoader(
        FirstEpoch(batches, batches_per_epoch),  # in order: Lightning's overfitting asks for it
        batch_size=None,
        num_workers=workers,
        persistent_workers=workers > 0,
        pin_memory=device == "cuda",
    )


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
