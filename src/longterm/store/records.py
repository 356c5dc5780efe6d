"""Run records: one `result.json` per run (what was run, how it ended, on what code and
machine), and the `sweep.json` record a launcher keeps of its commands.

The collector reads these files, never the logs. result.json is written whole or not at all
(store/atomic.py).
"""

import fcntl
import json
import os
import platform
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from longterm.store.atomic import atomic_write

RESULT_FILE = "result.json"
# A run that ended with one of these is complete: rerunning its command does not train it again.
# The others, "interrupted" and "failed", resume from the last checkpoint.
FINAL_STATUSES = ("solved", "max_epochs", "diverged")
# How a finished run ended (`end_of`): its status, but at its epoch limit what the limit was
# (conf/train.yaml: limit): `budget` (the experiment's fixed budget) or `capped` (a race's rival);
# `max_epochs` stays for a run that was to train until solved. The first three ended as designed.
ENDS = ("solved", "budget", "capped", "max_epochs", "diverged", "failed")
ENDED_AS_DESIGNED = ENDS[:3]
# A run made with Lightning's debugging keys (config/debug.py: trainer.fast_dev_run, ...), which it
# records as `debug`: never final, never resumed nor resumed from (the next run in its directory
# trains from the start: store/run_dir.py, clear_debug_run), never collected.
DEBUG_STATUS = "debug"
# A launcher's record of its invocations in a sweep directory (longterm.experiments.lr_race).
SWEEP_RECORD = "sweep.json"
# Every `src/train.py -m` command run in a sweep directory, oldest first (longterm.sweeps.multirun).
COMMANDS_RECORD = "commands.json"


def end_of(result: dict[str, Any]) -> str:
    """How a run ended (ENDS) from its record: `status`, read at the epoch limit by the run's
    `limit` (absent in records made before it: `stop`)."""
    status = result["status"]
    if status == "max_epochs":
        return {"budget": "budget", "capped": "capped"}.get(result.get("limit", "stop"), status)
    return status


def capped(result: dict[str, Any], race: list[dict[str, Any]]) -> bool:
    """Whether a run is a learning-rate race's rival stopped at its cap (experiments/lr_race: the
    epochs its leader solved in): its record's `limit` says so; a record made before `limit`
    existed, when another learning rate of its race (`race`: the records of its cell and seed)
    solved at exactly its epoch limit."""
    if result.get("limit") is not None:
        return result["limit"] == "capped"
    return any(
        other.get("status") == "solved"
        and other.get("lr") != result.get("lr")
        and other.get("epoch_solved") == result.get("max_epochs")
        for other in race
    )


def append_record(path: Path, entry: dict[str, Any]) -> None:
    """Append `entry` to the JSON list at `path` (made if missing). Commands that run in one
    sweep directory at once take turns (an exclusive lock on the file), so none is lost."""
    with open(path, "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)  # released when the file closes
        f.seek(0)
        text = f.read()
        entries = json.loads(text) if text.strip() else []
        f.seek(0)
        f.truncate()
        f.write(json.dumps([*entries, entry], indent=2) + "\n")


def write_result(run_dir: str | Path, result: dict[str, Any]) -> Path:
    """Atomically write `result` as `<run_dir>/result.json`."""
    path = Path(run_dir) / RESULT_FILE
    with atomic_write(path, sync=True) as f:  # a full disk, say: the old record stays
        json.dump(result, f, indent=2, sort_keys=True, default=str)
    return path


def read_result(run_dir: str | Path) -> dict[str, Any]:
    return json.loads((Path(run_dir) / RESULT_FILE).read_text())


def total_seconds(result: dict[str, Any]) -> float | None:
    """A run's wall time over all its processes: its record's own and the earlier ones'; None
    where none was recorded."""
    known = [result.get(k) for k in ("earlier_wall_time_s", "wall_time_s") if result.get(k)]
    return sum(known) if known else None


def git_commit(cwd: str | Path | None = None) -> str | None:
    """The commit the code was run from, with "-dirty" when tracked files were modified."""
    cwd = cwd or Path(__file__).resolve().parent
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=cwd,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return head + ("-dirty" if dirty else "")


def machine() -> dict[str, Any]:
    """Where the run happened: host, processor, cores, Python and torch versions, accelerator."""
    import torch

    return {
        "host": platform.node(),
        "processor": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cuda": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
    }


def process() -> str:
    """The process that trains a run, as "host:pid:start" (start: its start time in clock ticks
    since boot, from /proc, so a reused pid names another process): the runs of one process
    (a multirun's jobs in turn, a pack's members at once) share it (analysis/provenance.py)."""
    try:
        stat = Path("/proc/self/stat").read_text()
        start = stat.rsplit(")", 1)[1].split()[19]  # field 22, after the command in parentheses
    except (OSError, IndexError):
        start = ""
    return f"{platform.node()}:{os.getpid()}:{start}"


def now() -> str:
    """The time in UTC, ISO 8601 to the second (a sweep's span is read from these)."""
    return datetime.now(UTC).isoformat(timespec="seconds")
