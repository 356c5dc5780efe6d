"""A run directory's state between processes: who holds it, whether its run has finished, and
where a killed or requeued run resumes from.

One process at a time owns a run directory: `claim` takes an exclusive `flock` on
`<run_dir>/.lock`. The kernel drops the lock when the process dies (even by SIGKILL), so a rerun
of the same command after a crash or a requeue gets the directory back, while a second live
process is refused at once. An `O_EXCL` lock file would instead outlive a killed process and need
stale-lock guessing, which is why the lock is `flock` and not a file that must be removed.
"""

import fcntl
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from longterm.store.records import DEBUG_STATUS, FINAL_STATUSES, RESULT_FILE, read_result

LOCK_FILE = ".lock"
CHECKPOINTS = "checkpoints"  # conf/callbacks/default.yaml: last.ckpt and best.ckpt
# conf/logger/tensorboard.yaml: TensorBoard's event files, in the run directory itself, so that
# TensorBoard names the run by its directory.
EVENTS = "events.out.tfevents.*"


class RunDirError(RuntimeError):
    """A run directory held by another live process, by a run of other settings, or with a
    record that cannot be read; the message is one line."""


@contextmanager
def claim(run_dir: str | Path) -> Iterator[Path]:
    """Hold `run_dir` for this process; raise RunDirError if another live process holds it."""
    path = Path(run_dir) / LOCK_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise RunDirError(in_use(run_dir, lock_holder(fd))) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()} on {socket.gethostname()}\n".encode(), 0)
        yield path
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def lock_holder(fd: int) -> str:
    """Who holds the lock open at `fd`, as its holder wrote it ("pid N on host")."""
    return os.pread(fd, 200, 0).decode(errors="replace").strip() or "another process"


def in_use(run_dir: str | Path, holder: str) -> str:
    return (
        f"{run_dir} is in use by {holder}: wait for it to end, or give this run another "
        "directory (hydra.run.dir=... or hydra.sweep.dir=...)"
    )


def holder(run_dir: str | Path) -> str | None:
    """Who holds `run_dir` now ("pid N on host"), or None when no live process does; takes
    nothing and writes nothing (the directory may be an archived, read-only one)."""
    try:
        fd = os.open(Path(run_dir) / LOCK_FILE, os.O_RDONLY)
    except OSError:  # no lock file: never run here, or an archived copy
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return lock_holder(fd)
    finally:
        os.close(fd)
    return None


def run_record(run_dir: str | Path) -> dict[str, Any] | None:
    """The result.json of the run in `run_dir` (None without one); RunDirError, one line, for
    one that cannot be read (cut short by a full disk on a system without atomic renames, or
    edited by hand)."""
    path = Path(run_dir) / RESULT_FILE
    if not path.is_file():
        return None
    try:
        result = read_result(run_dir)
    except (OSError, ValueError) as e:
        raise RunDirError(
            f"{path} cannot be read ({e}): move it away, and the same command resumes the run "
            "from its last checkpoint"
        ) from None
    if not isinstance(result, dict):
        raise RunDirError(f"{path} is not a run's record: move it away")
    return result


def finished(run_dir: str | Path) -> dict[str, Any] | None:
    """The result of a completed run in `run_dir` (status in FINAL_STATUSES), else None."""
    result = run_record(run_dir)
    return result if result is not None and result.get("status") in FINAL_STATUSES else None


def debug_run(result: dict[str, Any] | None) -> bool:
    """Whether `result` is a debug run's record (records.DEBUG_STATUS): its `debug` entry, the
    debugging keys it was made with, is there from its start, whatever its status."""
    return result is not None and (
        bool(result.get("debug")) or result.get("status") == DEBUG_STATUS
    )


def clear_debug_run(run_dir: str | Path) -> bool:
    """When `run_dir` holds a debug run, remove its checkpoints, which no run resumes from, and
    return True: the run about to start there trains from the start. False otherwise."""
    if not debug_run(run_record(run_dir)):
        return False
    for path in (Path(run_dir) / CHECKPOINTS).glob("*.ckpt"):
        path.unlink()
    return True


def event_files(run_dir: str | Path) -> list[Path]:
    """A run's TensorBoard event files, in the order TensorBoard reads them (by name)."""
    return sorted(Path(run_dir).glob(EVENTS))
