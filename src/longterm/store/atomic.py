"""A file written whole or not at all: written beside its destination (one filesystem) and renamed
over it, so a reader never sees half a file and a full disk or an interruption leaves the old
file as it was, with no temporary file behind. result.json, the HPARAMS event files and the
checkpoints are written so."""

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO


@contextmanager
def atomic_write(
    path: str | Path, mode: str = "w", sync: bool = False, prefix: str | None = None
) -> Iterator[IO]:
    """Open a temporary file beside `path` (mode `w` or `wb`); on leaving the block without an
    error, rename it over `path`. `sync`: flush it to disk first (a record that must survive a
    crash of the machine; a rename alone is atomic for a process that dies). The file is
    readable by all (a collector may run as another user). `prefix`: the temporary file's name
    starts so (by default `.<name>.`)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    prefix = f".{path.name}." if prefix is None else prefix
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=prefix, suffix=".tmp")
    try:
        os.fchmod(fd, 0o644)  # mkstemp makes the file private
        with os.fdopen(fd, mode) as f:
            yield f
            if sync:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
