"""Continue a finished run under a larger epoch limit, without training its epochs again.

A run that ended at `trainer.max_epochs` is final in its own directory (a rerun does nothing), and
a command with a larger limit names another directory. This copies the old run's checkpoints and
TensorBoard event files into that directory, so that the new command resumes from the old run's last
epoch (docs/reliability.md, "Raising the epoch limit"):

    python -m longterm.store.continue_run <old run dir> <new run dir>
    python src/train.py <the old command with the larger trainer.max_epochs>

The data stream is keyed by epoch and batch index, so the continued run ends with the same
metrics as a run started with the larger limit. Lightning's checkpoint callback keeps absolute
paths, and restores its best score only when its directory is unchanged, so those paths are
rewritten to the new directory. The old run may be an archived one (`runs/`,
longterm.store.archive).
"""

import argparse
import shutil
from pathlib import Path

from longterm.store.checkpoints import relocate
from longterm.store.records import FINAL_STATUSES, RESULT_FILE, read_result
from longterm.store.run_dir import CHECKPOINTS, event_files


def continue_run(old: str | Path, new: str | Path) -> Path:
    """Copy `old`'s checkpoints and events into `new`; return `new`. `new` must hold no run."""
    old, new = Path(old).resolve(), Path(new).resolve()
    status = read_result(old).get("status")
    if status not in FINAL_STATUSES:
        raise ValueError(f"{old} has status {status!r}: rerun its own command to resume it")
    if (new / CHECKPOINTS).exists() or (new / RESULT_FILE).exists():
        raise FileExistsError(f"{new} already holds a run")
    new.mkdir(parents=True, exist_ok=True)
    for path in event_files(old):
        shutil.copy2(path, new / path.name)
    (new / CHECKPOINTS).mkdir()
    for path in sorted((old / CHECKPOINTS).glob("*.ckpt")):
        relocate(path, new / CHECKPOINTS / path.name, new)
    return new


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("old", help="a finished run's directory")
    p.add_argument("new", help="the directory of the command with the larger trainer.max_epochs")
    a = p.parse_args(argv)
    print(f"copied into {continue_run(a.old, a.new)}: run the command with the larger limit")


if __name__ == "__main__":
    main()
