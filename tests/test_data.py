import itertools

import numpy as np
import torch

from longterm.data import FixedLengthData, VariableLengthData
from longterm.tasks import default_width


def epoch_batches(dm, epoch, n=None):
    loader = dm.train_dataloader()
    loader.sampler.set_epoch(epoch)
    return list(itertools.islice(loader, n))


def test_batches_do_not_depend_on_worker_count():
    serial = FixedLengthData("addition", T0=50, seed=3, batches_per_epoch=6)
    parallel = FixedLengthData("addition", T0=50, seed=3, batches_per_epoch=6, num_workers=2)
    for a, b in zip(epoch_batches(serial, 2), epoch_batches(parallel, 2), strict=True):
        for ta, tb in zip(a, b, strict=True):
            assert torch.equal(ta, tb)


def test_epochs_seeds_and_batches_differ():
    dm = FixedLengthData("addition", T0=50, seed=0, batches_per_epoch=2)
    e0, e1 = epoch_batches(dm, 0), epoch_batches(dm, 1)
    other = epoch_batches(FixedLengthData("addition", T0=50, seed=1, batches_per_epoch=2), 0)
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
        "multiplication", T0=100, lengths="per_batch", batches_per_epoch=200, batch_size=4
    )
    lengths = set()
    for x, y, mask in epoch_batches(dm, 0):
        assert mask.all() and x.dtype == torch.float32 and y.shape == (4,)
        lengths.add(x.shape[1])
    assert min(lengths) >= 100 and max(lengths) <= default_width(100) - 1 and len(lengths) > 5


def test_per_sequence_lengths_are_padded_with_a_mask():
    dm = FixedLengthData("addition", T0=50, batches_per_epoch=1)  # per_sequence by default
    x, _, mask = epoch_batches(dm, 0)[0]
    assert x.shape == (100, 56, 2) and not mask.all()
    assert (x[~mask] == 0).all()


def test_fixed_validation_set():
    dm = FixedLengthData("addition", T0=50, seed=0, val_size=1000)
    dm.setup("fit")
    assert sum(len(y) for _, y, _ in dm.validation) == 1000
    first = dm.validation[0][0].clone()
    dm.setup("validate")
    assert torch.equal(dm.validation[0][0], first)  # generated once


def test_variable_lengths():
    dm = VariableLengthData(
        "addition", min_length=50, max_length=60, batches_per_epoch=300, batch_size=2
    )
    lengths = {x.shape[1] for x, _, _ in epoch_batches(dm, 0)}
    assert lengths == set(range(50, 61))  # inclusive bounds
    dm = VariableLengthData("addition")
    dm.setup("fit")
    assert [x.shape[1] for x, _, _ in dm.validation] == [
        int(t) for t in np.linspace(50, 10000, 100)
    ]
    assert all(len(y) == 10 for _, y, _ in dm.validation)
