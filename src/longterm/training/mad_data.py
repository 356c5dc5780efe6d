"""The MAD protocol's data, as mad-lab trains and tests (Poli et al. 2024, arXiv 2403.17844;
athms/mad-lab train.py and mad/data/dataset.py; conf/data/mad.yaml): `n_train` training and
`n_test` test sequences of one MAD setting, drawn once per run by
`longterm.tasks.mad.dataset(task, seed, n_train, n_test, **setting)` (equal to mad-lab's arrays
for the same seed: tests/test_mad_tasks.py), with mad-lab's targets: the training set's are
`is_training=True` (the recall tasks: the next token at every step), the test set's
`is_training=False` (the probed steps only). The test set is the validation set, in batches of
`batch_size` in order, as mad-lab's test DataLoader.

An epoch is one pass through the training set in a new order, in batches of `batch_size`, the
last one smaller (mad-lab's DataLoader with shuffle=True, drop_last=False). The order of epoch e
is a permutation drawn from the RandomState of the key (seed, TRAIN, e, 0) (batches.batch_seed),
so a resumed run goes on as one that was not interrupted; mad-lab's comes from torch's global
generator, which no other code can replay. Batches: x (B, T) int64, y (B, T) int64 with
NO_TARGET on unlabelled steps, mask (B, T) all True (every sequence of a setting has its length).
"""

from typing import Any

import numpy as np
import pytorch_lightning as L
import torch
from torch.utils.data import DataLoader, Dataset

from longterm.choices import AUTO
from longterm.tasks import mad
from longterm.training.batches import TRAIN, Batch, batch_seed
from longterm.training.data import keyed_loader

SETTING_ONLY = ("n_train", "n_test", "steps")  # named_setting's keys that are no generator's


def as_tensors(inputs: np.ndarray, targets: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.from_numpy(inputs).long(), torch.from_numpy(targets).long()


class ShuffledBatches(Dataset):
    """Item (epoch, index): the index-th batch of `batch_size` rows of (x, y) in the order of
    that epoch (the module docstring)."""

    def __init__(self, x: torch.Tensor, y: torch.Tensor, batch_size: int, seed: int):
        self.x, self.y, self.batch_size, self.seed = x, y, batch_size, seed
        self.epoch, self.order = -1, np.arange(len(x))

    def order_of(self, epoch: int) -> np.ndarray:
        if epoch != self.epoch:
            rng = np.random.RandomState(batch_seed(self.seed, TRAIN, epoch, 0))
            self.epoch, self.order = epoch, rng.permutation(len(self.x))
        return self.order

    def __getitem__(self, key: tuple[int, int]) -> Batch:
        epoch, index = key
        rows = torch.from_numpy(self.order_of(epoch)[index * self.batch_size :][: self.batch_size])
        x = self.x[rows]
        return x, self.y[rows], torch.ones(x.shape, dtype=torch.bool)

    def __len__(self) -> int:
        return -(-len(self.x) // self.batch_size)


def in_order(x: torch.Tensor, y: torch.Tensor, batch_size: int) -> list[Batch]:
    """(x, y) in batches of batch_size in their order, each with its mask (all True)."""
    return [
        (xb, yb, torch.ones(xb.shape, dtype=torch.bool))
        for xb, yb in zip(x.split(batch_size), y.split(batch_size), strict=True)
    ]


class MadData(L.LightningDataModule):
    """mad-lab's training and test sets of the MAD setting `setting` of the task whose generator
    `task` names (tasks/mad.py: task_of, named_setting), drawn from `seed` in `setup`."""

    def __init__(
        self,
        task: str,
        setting: str,
        n_train: int,
        n_test: int,
        steps: int,
        seed: int = 0,
        batch_size: int = 128,
        batches_per_epoch: int = 100,
        num_workers: int | str = AUTO,
        task_params: dict[str, Any] | None = None,
    ):
        super().__init__()
        self.task, self.setting, self.seed = mad.task_of(task), setting, seed
        self.n_train, self.n_test, self.steps = n_train, n_test, steps
        self.batch_size, self.num_workers = batch_size, num_workers
        if batches_per_epoch != -(-n_train // batch_size):
            raise ValueError(
                f"data.batches_per_epoch={batches_per_epoch} is invalid: an epoch is one pass "
                f"through n_train={n_train} sequences, {-(-n_train // batch_size)} batches"
            )
        self.batches_per_epoch = batches_per_epoch
        self.train: ShuffledBatches | None = None
        self.validation: list[Batch] = []

    def keys(self) -> dict[str, Any]:
        """The generator's keys of the setting (mad-lab's names)."""
        named = mad.named_setting(self.task, self.setting)
        return {k: v for k, v in named.items() if k not in SETTING_ONLY}

    def setup(self, stage: str | None = None) -> None:
        if self.train is not None:
            return
        data = mad.dataset(self.task, self.seed, self.n_train, self.n_test, **self.keys())
        self.train = ShuffledBatches(*as_tensors(*data["train"]), self.batch_size, self.seed)
        self.validation = in_order(*as_tensors(*data["test"]), self.batch_size)

    def device_type(self) -> str:
        return "cpu" if self.trainer is None else self.trainer.strategy.root_device.type

    def train_dataloader(self) -> DataLoader:
        self.setup()
        return keyed_loader(self.train, len(self.train), self.num_workers, self.device_type())

    def val_dataloader(self) -> DataLoader:
        self.setup()
        return DataLoader(self.validation, batch_size=None, pin_memory=self.device_type() == "cuda")
