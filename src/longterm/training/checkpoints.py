"""A run's checkpoints: which one it resumes from, how each is written, which is the best.

The files are the checkpoint callbacks' (conf/callbacks/default.yaml): `last_checkpoint` writes
`checkpoints/last.ckpt` at the end of every epoch, where a rerun resumes; `checkpoint` writes
`checkpoints/best.ckpt`, the weights of the best val/acc so far.

- Resuming (`resume_from`): last.ckpt when it loads, else best.ckpt (`resumable`), checked to
  hold the command's model (`same_model`), at the update it stands at (`checkpoint_step`).
- Writing (`AtomicCheckpointIO`, the Trainer's plugin: training/parts.py, run_trainer): never
  costs the last good checkpoint.
- The best (`best_checkpoint`): the file result.json names as holding the weights of `best_acc`.

Reading a checkpoint file safely (tensors and plain values only) and moving one to another run
directory are matters of the file alone, without Lightning, in store/checkpoint_files.py, which
continuing a run (store/continue_run.py) and the archive (store/archive.py) use too.
"""

import logging
from pathlib import Path
from typing import Any, NoReturn

import pytorch_lightning as L
import torch
from lightning_fabric.plugins.io.torch_io import TorchCheckpointIO
from pytorch_lightning.callbacks import ModelCheckpoint

from longterm.store.atomic import atomic_write
from longterm.store.checkpoint_files import UnsafeCheckpointError, load_checkpoint
from longterm.store.run_dir import CHECKPOINTS
from longterm.training.faults import RunError, oserror
from longterm.training.module import MemoryTaskModule

log = logging.getLogger(__name__)

# conf/callbacks/default.yaml: last_checkpoint.filename, the checkpoint a rerun resumes from,
# and checkpoint.filename, the best epoch's.
LAST, BEST = "last", "best"


def resume_from(
    module: MemoryTaskModule, callbacks: list[L.Callback]
) -> tuple[Path | None, int | None]:
    """The checkpoint the run of `module` and `callbacks` resumes from (`resumable`), checked to
    hold that model, and the update it stands at; (None, None) for a run that starts."""
    ckpt = resumable(last_checkpoint(callbacks))
    if ckpt is None:
        return None, None
    same_model(module, ckpt)
    return ckpt, checkpoint_step(ckpt)


def last_checkpoint(callbacks: list[L.Callback]) -> Path | None:
    """Where the `last_checkpoint` callback writes `last.ckpt` (None without that callback)."""
    for callback in callbacks:
        if isinstance(callback, ModelCheckpoint) and callback.filename == LAST and callback.dirpath:
            return Path(callback.dirpath) / (LAST + callback.FILE_EXTENSION)
    return None


def saved_checkpoint(run_dir: Path) -> Path | None:
    """The last checkpoint a rerun would resume from, if the run directory has one."""
    path = run_dir / CHECKPOINTS / f"{LAST}.ckpt"
    return path if path.exists() else None


def checkpoint_step(path: str | Path) -> int:
    """The number of optimiser updates stored in a Lightning checkpoint."""
    return int(load_checkpoint(path)["global_step"])


def readable(path: Path) -> str | None:
    """Why the checkpoint at `path` cannot be loaded, in one line; None when it can. One that
    would run code when loaded is refused (UnsafeCheckpointError), never passed over for another."""
    try:
        load_checkpoint(path)
    except UnsafeCheckpointError:
        raise
    except Exception as e:
        return str(e).split(". ")[0].splitlines()[0] if str(e) else type(e).__name__
    return None


def resumable(last: Path | None) -> Path | None:
    """The checkpoint to resume from, given where `last.ckpt` is written: last.ckpt when it loads;
    else best.ckpt beside it when that loads, with an unreadable last.ckpt kept beside it as
    last.ckpt.unreadable. best.ckpt without last.ckpt is left by an attempt stopped between the
    two writes (a full disk, a kill): resuming from it keeps best.ckpt the best of the run. The
    data are keyed by epoch and batch, so training on from the best epoch gives the same run.
    Neither there: None (the run starts). Neither loads: RunError says how to start again; no
    checkpoint is ever deleted."""
    if last is None:
        return None
    best = last.with_name(f"{BEST}.ckpt")
    if not last.exists():
        if not best.exists():
            return None
        if (reason := readable(best)) is None:
            log.warning(f"{last} is missing: resuming from {best}")
            return best
        unloadable(best, reason)
    if (reason := readable(last)) is None:
        return last
    if best.exists() and readable(best) is None:
        kept = unused(last.with_name(last.name + ".unreadable"))
        last.rename(kept)
        log.warning(f"{last} cannot be read ({reason}): kept as {kept}; resuming from {best}")
        return best
    unloadable(last, reason)


def same_model(module: MemoryTaskModule, ckpt: Path) -> None:
    """RunError when `ckpt` holds other parameters than `module` has: the run it belongs to was
    made with other model settings (a `model.dim` that result.json's settings do not name)."""
    theirs, ours = load_checkpoint(ckpt)["state_dict"], module.state_dict()
    for key in sorted(theirs.keys() | ours.keys()):
        there, here = (shape(d.get(key)) for d in (theirs, ours))
        if there != here:
            raise RunError(
                f"{ckpt} holds a model of other parameters than this command's ({key}: {there} "
                f"there, {here} here): rerun the run with its own settings, or give this run "
                "another directory"
            )


def shape(tensor: torch.Tensor | None) -> str:
    return "none" if tensor is None else "x".join(map(str, tensor.shape)) or "a scalar"


def unloadable(ckpt: Path, reason: str) -> NoReturn:
    """RunError: `ckpt` cannot be read for `reason`, and no other checkpoint of its run can."""
    folder = ckpt.parent
    aside = unused(folder.with_name(folder.name + ".unreadable"))
    raise RunError(
        f"{ckpt} cannot be read ({reason}), and no other checkpoint of the run can: to start "
        f"the run again, move them away (mv {folder} {aside}) and rerun the same command"
    )


def unused(path: Path) -> Path:
    """`path`, or with .1, .2, ... added, the first name that nothing has."""
    found, n = path, 0
    while found.exists():
        n += 1
        found = path.with_name(f"{path.name}.{n}")
    return found


class AtomicCheckpointIO(TorchCheckpointIO):
    """Checkpoints written so that a failed write never costs the last good one.

    Lightning writes a checkpoint through fsspec, whose local "transaction" writes a temporary
    file in the system's temporary directory and then moves it over the old checkpoint: across
    filesystems the move copies, truncating the old file first, so a disk that fills during the
    copy leaves no whole checkpoint at all. Here the new file is written beside the old one and
    renamed over it (store/atomic.py): a full disk or an interruption leaves the old checkpoint
    as it was and no temporary file behind.
    """

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


def best_checkpoint(callbacks: list[L.Callback]) -> str | None:
    """The checkpoint that holds the weights of `best_acc`, relative to the run directory
    (`checkpoints/best.ckpt`); None when none was written (no validation ran, or the run
    diverged before it)."""
    for callback in callbacks:
        if isinstance(callback, ModelCheckpoint) and callback.monitor and callback.dirpath:
            path = Path(callback.best_model_path)
            if callback.best_model_path and path.exists():
                return str(path.relative_to(Path(callback.dirpath).parent))
    return None
