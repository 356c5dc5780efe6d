import itertools
import os
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from longterm.config.builtins import generator_of
from longterm.tasks import default_width
from longterm.training.batches import TRAIN, batch_rng
from longterm.training.data import (
    MAX_FEED_WORKERS,
    FixedLengthData,
    KeyedBatches,
    VariableLengthData,
    feed_workers,
)


def epoch_batches(dm, epoch, n=None):
    loader = dm.train_dataloader()
    loader.sampler.set_epoch(epoch)
    return list(itertools.islice(loader, n))


def on_device(dm, device_type):
    """`dm` as a Trainer on `device_type` sees it: the one part of the Trainer it reads."""
    dm.trainer = SimpleNamespace(strategy=SimpleNamespace(root_device=torch.device(device_type)))
    return dm


@pytest.mark.parametrize("workers, device", [(2, "cpu"), ("auto", "cpu"), ("auto", "meta")])
def test_batches_do_not_depend_on_worker_count(workers, device):
    """num_workers=auto on an accelerator (meta stands for one) runs workers wherever the job has
    two CPUs or more; the batches are those of the main process."""
    serial = FixedLengthData(
        generator_of("addition"), T0=50, seed=3, batches_per_epoch=6, num_workers=0
    )
    parallel = on_device(
        FixedLengthData(
            generator_of("addition"), T0=50, seed=3, batches_per_epoch=6, num_workers=workers
        ),
        device,
    )
    cpus = len(os.sched_getaffinity(0))
    expected = 2 if workers == 2 else 0 if device == "cpu" else min(cpus - 1, MAX_FEED_WORKERS)
    assert parallel.train_dataloader().num_workers == expected
    for a, b in zip(epoch_batches(serial, 2), epoch_batches(parallel, 2), strict=True):
        for ta, tb in zip(a, b, strict=True):
            assert torch.equal(ta, tb)


def test_auto_workers_follow_the_device_and_the_cpus_of_the_job(monkeypatch):
    for cpus, workers in [(1, 0), (2, 1), (5, 4), (64, MAX_FEED_WORKERS)]:
        monkeypatch.setattr(os, "sched_getaffinity", lambda _, n=cpus: set(range(n)))
        assert feed_workers("auto", "cuda") == workers
        assert feed_workers("auto", "cpu") == 0
        assert feed_workers(3, "cpu") == feed_workers(3, "cuda") == 3
    loaders = {
        device: on_device(
            FixedLengthData(generator_of("addition"), T0=50), device
        ).train_dataloader()
        for device in ("cpu", "cuda")
    }
    assert not loaders["cpu"].pin_memory and loaders["cuda"].pin_memory


def test_each_array_is_converted_once():
    """x float64 -> float32; a class stays int64 (not float32 and back); a value is float32."""
    x, y, _ = epoch_batches(
        FixedLengthData(generator_of("temporal_order"), T0=50, batches_per_epoch=1), 0
    )[0]
    assert x.dtype == torch.float32 and y.dtype == torch.int64
    _, y, _ = epoch_batches(FixedLengthData(generator_of("xor"), T0=50, batches_per_epoch=1), 0)[0]
    assert y.dtype == torch.float32


def test_epochs_seeds_and_batches_differ():
    dm = FixedLengthData(generator_of("addition"), T0=50, seed=0, batches_per_epoch=2)
    e0, e1 = epoch_batches(dm, 0), epoch_batches(dm, 1)
    other = epoch_batches(
        FixedLengthData(generator_of("addition"), T0=50, seed=1, batches_per_epoch=2), 0
    )
    x = [b[0] for b in (e0[0], e0[1], e1[0], other[0])]
    assert all(
        not torch.equal(x[i], x[j])
        for i in range(4)
        for j in range(i + 1, 4)
        if x[i].shape == x[j].shape
    )
    assert torch.equal(epoch_batches(dm, 1)[0][0], e1[0][0])  # the same key, the same batch


def test_per_batch_lengths_have_no_padding():
    dm = FixedLengthData(
        generator_of("multiplication"),
        T0=100,
        lengths="per_batch",
        batches_per_epoch=200,
        batch_size=4,
    )
    lengths = set()
    for x, y, mask in epoch_batches(dm, 0):
        assert mask.all() and x.dtype == torch.float32 and y.shape == (4,)
        lengths.add(x.shape[1])
    assert min(lengths) >= 100 and max(lengths) <= default_width(100) - 1 and len(lengths) > 5


def test_per_sequence_lengths_are_padded_with_a_mask():
    dm = FixedLengthData(
        generator_of("addition"), T0=50, batches_per_epoch=1
    )  # per_sequence by default
    x, _, mask = epoch_batches(dm, 0)[0]
    assert x.shape == (100, 56, 2) and not mask.all()
    assert (x[~mask] == 0).all()


def test_fixed_validation_set():
    dm = FixedLengthData(generator_of("addition"), T0=50, seed=0, val_size=1000)
    dm.setup("fit")
    assert sum(len(y) for _, y, _ in dm.validation) == 1000
    first = dm.validation[0][0].clone()
    dm.setup("validate")
    assert torch.equal(dm.validation[0][0], first)  # generated once


def test_variable_lengths():
    dm = VariableLengthData(
        generator_of("addition"), min_length=50, max_length=60, batches_per_epoch=300, batch_size=2
    )
    lengths = {x.shape[1] for x, _, _ in epoch_batches(dm, 0)}
    assert lengths == set(range(50, 61))  # inclusive bounds
    dm = VariableLengthData(generator_of("addition"))
    dm.setup("fit")
    assert [x.shape[1] for x, _, _ in dm.validation] == [
        int(t) for t in np.linspace(50, 10000, 100)
    ]
    assert all(len(y) == 10 for _, y, _ in dm.validation)


def odd_normals(rng: np.random.RandomState) -> tuple[np.ndarray, ...]:
    """A recipe that leaves a cached Gaussian behind (legacy normals come in pairs)."""
    return rng.standard_normal(3), rng.randint(0, 1000, 5), rng.uniform(size=2)


@pytest.mark.parametrize("recipe", [odd_normals, "addition"])
def test_each_batch_is_drawn_from_its_keys_own_random_state(recipe):
    """KeyedBatches seeds one RandomState anew for each key: the batch is the one a new
    RandomState of that key draws, in any order of keys, a key asked for twice the same."""
    if recipe == "addition":
        recipe = FixedLengthData(generator_of("addition"), T0=50, seed=4).train_recipe()
    stream = KeyedBatches(recipe, 4, TRAIN)
    for key in [(0, 0), (0, 1), (3, 2), (0, 1), (1, 0), (0, 0)]:
        for got, expected in zip(stream[key], recipe(batch_rng(4, TRAIN, *key)), strict=True):
            assert (got == expected).all()
