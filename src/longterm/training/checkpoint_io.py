"""Checkpoints written so that a failed write never costs the last good one.

Lightning writes a checkpoint through fsspec, whose local "transaction" writes a temporary file in
the system's temporary directory and then moves it over the old checkpoint: across filesystems the
move copies, truncating the old file first, so a disk that fills during the copy leaves no whole
checkpoint at all. Here the new file is written beside the old one and renamed over it
(store/atomic.py): a full disk or an interruption leaves the old checkpoint as it was and no
temporary file behind.
"""

from pathlib import Path
from typing import Any

import torch
from lightning_fabric.plugins.io.torch_io import TorchCheckpointIO

from longterm.store.atomic import atomic_write
from longterm.training.faults import oserror


class AtomicCheckpointIO(TorchCheckpointIO):
    def save_checkpoint(
        self, checkpoint: dict[str, Any], path: str | Path, storage_options: Any = None
    ) -> None:
        try:  # no sync: a rename is atomic for a process that dies, and a sync costs time
            with atomic_write(path, "wb") as f:
                torch.save(checkpoint, f)
        except BaseException as e:
            cause = oserror(e)  # torch.save wraps a failed write in a RuntimeError
            if cause is not None:
                raise OSError(cause.errno, cause.strerror, str(path)) from e
            raise
