"""Continue a finished run under a larger epoch limit, without training its epochs again.

A run that ended at `trainer.max_epochs` is final in its own directory (a rerun does nothing), and
a command with a larger limit names another directory. This copies the old run's checkpoints and
TensorBoard event files into that directory, so that the new command resumes from the old run's last
epoch (docs/reliability.md, "Raising the epoch limit"):

    python -m longterm.store.continue_run <old run dir> <new run dir>
    python src/train.py <the old command with the larger trainer.max_epochs>

The data stream is keyed by epoch and batch index, so the continued run ends with the same
metrics as a run started with the larger limit; not so for a run whose learning-rate schedule
follows its epoch limit (optim.schedule), which is refused. Lightning's checkpoint callback keeps
absolute paths, and restores its best score only when its directory is unchanged, so those paths
are rewritten to the new directory. The old run may be an archived one (`runs/`,
longterm.store.archive).
"""

import argparse
import shutil
import sys
from pathlib import Path

from longterm.store.checkpoint_files import UnsafeCheckpointError, relocate
from longterm.store.records import FINAL_STATUSES, RESULT_FILE
from longterm.store.run_dir import (
    CHECKPOINTS,
    RunDirError,
    claim,
    debug_run,
    event_files,
    holder,
    run_record,
)
from longterm.store.upgrade import current_settings


class ContinueError(RuntimeError):
    """A run that cannot be continued, or a directory it cannot be continued into; one line."""


def finished_status(old: Path) -> str:
    """The status of the finished run in `old`; ContinueError for a run in use, not finished, or
    not there."""
    if not old.is_dir():
        raise ContinueError(f"{old} is not a run directory")
    who = holder(old)
    if who is not None:
        raise ContinueError(f"{old} is in use by {who}: wait for it to end, then continue it")
    try:
        result = run_record(old)
    except RunDirError as e:
        raise ContinueError(str(e)) from None
    if result is None:
        raise ContinueError(
            f"{old} holds no finished run (no {RESULT_FILE}: stopped before it ended): rerun its "
            "own command to finish it"
        )
    status = result.get("status")
    if debug_run(result):
        raise ContinueError(f"{old} holds a debug run ({status}): it is never continued")
    if status not in FINAL_STATUSES:
        raise ContinueError(f"{old} has status {status!r}: rerun its own command to resume it")
    schedule = current_settings(result)["schedule"]
    if schedule != "none":
        raise ContinueError(
            f"{old} trained with optim.schedule={schedule}, whose learning rate follows its own "
            "trainer.max_epochs: a larger limit is another run; start it in its own directory"
        )
    if not any((old / CHECKPOINTS).glob("*.ckpt")):
        raise ContinueError(
            f"{old} keeps no checkpoint (an archive that kept only its records): a larger limit "
            "trains from the start; run the command with it in a directory of its own"
        )
    return status


def continue_run(old: str | Path, new: str | Path) -> Path:
    """Copy `old`'s checkpoints and events into `new`; return `new`. `old` must hold a finished
    run that no process holds, `new` no run (it is held while the copy is made)."""
    old, new = Path(old).resolve(), Path(new).resolve()
    finished_status(old)
    if (new / CHECKPOINTS).exists() or (new / RESULT_FILE).exists():
        raise ContinueError(f"{new} already holds a run")
    try:
        with claim(new):
            for path in event_files(old):
                shutil.copy2(path, new / path.name)
            (new / CHECKPOINTS).mkdir()
            for path in sorted((old / CHECKPOINTS).glob("*.ckpt")):
                relocate(path, new / CHECKPOINTS / path.name, new)
    except (RunDirError, UnsafeCheckpointError) as e:
        raise ContinueError(str(e)) from None
    return new


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("old", help="a finished run's directory")
    p.add_argument("new", help="the directory of the command with the larger trainer.max_epochs")
    a = p.parse_args(argv)
    try:
        new = continue_run(a.old, a.new)
    except (ContinueError, OSError) as e:
        sys.exit(f"error: {e}")
    print(f"copied into {new}: run the command with the larger limit")


if __name__ == "__main__":
    main()
