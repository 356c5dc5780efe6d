"""A checkpoint file as a file, without Lightning: loaded safely, and moved with its run.

Every checkpoint is loaded as tensors and plain values only (`torch.load(weights_only=True)`),
which is all a checkpoint written here holds: a file that carries anything else, a pickled
callable that unpickling would run, is refused (UnsafeCheckpointError) and nothing in it runs.
The paths of its run directory, which its checkpoint callbacks keep, are moved when a run's
checkpoints are copied to another directory (`relocate`: store/continue_run.py,
store/archive.py).

Which checkpoint a run resumes from, how a run writes one and which is its best are the run's
matters, in training/checkpoints.py.
"""

import pickle
import re
from pathlib import Path
from typing import Any

import torch


class UnsafeCheckpointError(RuntimeError):
    """A checkpoint that holds objects whose loading would run code; the message is one line."""


def load_checkpoint(path: str | Path) -> dict[str, Any]:
    """The contents of the checkpoint at `path`, on the CPU; UnsafeCheckpointError when it holds
    more than tensors and plain values."""
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as e:
        if "Weights only load failed" not in str(e):
            raise
        found = re.search(r"Unsupported global: GLOBAL ([\w.]+)", str(e))
        what = f"a pickled {found.group(1)}" if found else "a pickled object"
        raise UnsafeCheckpointError(
            f"{path} is refused: it holds {what}, which loading would run, and no checkpoint "
            "written here holds such a thing; nothing in it was run: remove it, or put the "
            "run's own checkpoint in its place"
        ) from None


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
    state = load_checkpoint(checkpoint)
    callbacks = state["callbacks"]
    for old in {str(Path(v["dirpath"]).parent) for v in callbacks.values() if "dirpath" in v}:
        callbacks = moved(callbacks, old, str(run_dir.resolve()))
    state["callbacks"] = callbacks
    torch.save(state, target)
