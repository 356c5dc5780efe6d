"""Checkpoints written so that a failed write never costs the last good one.

Lightning writes a checkpoint through fsspec, whose local "transaction" writes a temporary file in
the system's temporary directory and then moves it over the old checkpoint: across filesystems the
move copies, truncating the old file first, so a disk that fills during the copy leaves no whole
checkpoint at all. Here the new file is written beside the old one and renamed over it (one
filesystem, an atomic rename): a full disk or an interruption leaves the old checkpoint as it was
and no temporary file behind.
"""

import os
import tempfile
from pathlib import Path
from typing import Any

import torch
from lightning_fabric.plugins.io.torch_io import TorchCheckpointIO

from longterm.training.faults import oserror


class AtomicCheckpointIO(TorchCheckpointIO):
    def save_checkpoint(
        self, checkpoint: dict[str, Any], path: str | Path, storage_options: Any = None
    ) -> None:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:  # no fsync: a rename is atomic for a process that
                torch.save(checkpoint, f)  # dies, and a sync at every epoch costs time
            os.replace(tmp, path)
        except BaseException as e:
            Path(tmp).unlink(missing_ok=True)
            cause = oserror(e)  # torch.save wraps a failed write in a RuntimeError
            if cause is not None:
                raise OSError(cause.errno, cause.strerror, str(path)) from e
            raise
