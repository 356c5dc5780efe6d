"""What a Lightning checkpoint records of its run: the updates it stands at, and the paths of its
run directory, which its checkpoint callbacks keep and which are moved when a run's checkpoints
are copied to another directory (store/continue_run.py, store/archive.py)."""

from pathlib import Path

import torch


def checkpoint_step(path: str | Path) -> int:
    """The number of optimiser updates stored in a Lightning checkpoint."""
    return int(torch.load(path, map_location="cpu", weights_only=True)["global_step"])


def moved(value: object, old: str, new: str) -> object:
    """`value` with every path under `old` moved under `new` (strings and dict keys)."""
    if isinstance(value, str):
        return new + value[len(old) :] if value.startswith(old) else value
    if isinstance(value, dict):
        return {moved(k, old, new): moved(v, old, new) for k, v in value.items()}
    return value


def relocate(checkpoint: Path, target: Path, run_dir: Path) -> None:
    """Write `checkpoint` to `target` with the paths its callbacks recorded moved from the run
    directory they were written in (recorded in the checkpoint: the parent of each callback's
    `dirpath`) to `run_dir`; the source may be an archived copy (store/archive.py)."""
    state = torch.load(checkpoint, map_location="cpu", weights_only=False)
    callbacks = state["callbacks"]
    for old in {str(Path(v["dirpath"]).parent) for v in callbacks.values() if "dirpath" in v}:
        callbacks = moved(callbacks, old, str(run_dir.resolve()))
    state["callbacks"] = callbacks
    torch.save(state, target)
