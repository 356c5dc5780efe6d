"""Where each run of one or more sweeps stands, while they run: the view of hours-long sweeps
that are continued in steps (scripts/long_sweeps.sh, `longterm.store.continue_run`).

    python -m longterm.analysis.progress outputs/table1_long outputs/variable_length_100

One line per run: its state, the epochs it has validated out of its limit, the last and best
validation accuracy, the seconds per epoch of its latest process and, for a running run, the
time to its limit at that pace (a run of the learning-rate race may stop sooner: it stops when
solved). Everything is read from what a run writes while it trains, so it works on runs that
are still going: the validation curve from its TensorBoard events (result.json is written only
when a process ends), the limit from `.hydra/config.yaml`, and whether a process holds the run
from the lock `store/run_dir.py: claim` takes (`held`).
"""

import argparse
import os
import socket
from pathlib import Path
from statistics import median
from typing import Any

import pandas as pd
from omegaconf import OmegaConf

from longterm.analysis.arguments import summary
from longterm.analysis.events import accumulator
from longterm.analysis.runs import epochs_trained, run_dirs
from longterm.store.records import FINAL_STATUSES, RESULT_FILE, read_result
from longterm.store.run_dir import LOCK_FILE, event_files

VAL_ACC = "val/acc"  # module.py: logged once per epoch


def held(run_dir: Path) -> bool:
    """Whether a process holds `run_dir`'s lock now: the lock file's inode among the flock
    locks in /proc/locks (Linux). Read only: taking the lock to test it could refuse a run that
    starts at that moment. Elsewhere, whether the pid `store/run_dir.py: claim` wrote there is
    alive. A multirun's or a pack's one process outlives its finished runs: run_progress calls a
    held run running only while its result is not final at its epoch limit."""
    path = run_dir / LOCK_FILE
    if not path.exists():
        return False
    locks = Path("/proc/locks")
    if locks.exists():
        stat = path.stat()
        device = f"{os.major(stat.st_dev):02x}:{os.minor(stat.st_dev):02x}:{stat.st_ino}"
        # a line: "<n>: FLOCK ADVISORY WRITE <pid> <major>:<minor>:<inode> <start> <end>"
        fields = (line.split() for line in locks.read_text().splitlines())
        return any(f[1:2] == ["FLOCK"] and f[5:6] == [device] for f in fields)
    words = path.read_text().split()  # "pid <pid> on <host>"
    if len(words) != 4 or words[0] != "pid" or words[3] != socket.gethostname():
        return False
    try:
        os.kill(int(words[1]), 0)  # signal 0: tests that the process exists, sends nothing
    except (ProcessLookupError, ValueError):
        return False
    except PermissionError:  # alive, owned by another user
        return True
    return True


def validation_curve(run_dir: Path) -> list[tuple[float, int, float]]:
    """(wall time, step, accuracy) per validated epoch; a step logged twice (an epoch retrained
    after a resume from an earlier checkpoint) keeps its latest value."""
    events = accumulator(run_dir)
    if VAL_ACC not in events.Tags()["scalars"]:
        return []
    latest = {p.step: (p.wall_time, p.step, p.value) for p in events.Scalars(VAL_ACC)}
    return [latest[s] for s in sorted(latest)]


def seconds_per_epoch(run_dir: Path, curve: list[tuple[float, int, float]]) -> float | None:
    """The median time between consecutive validations of the run's latest process (the one
    that wrote its newest event file, named by its start time); None before its second."""
    files = event_files(run_dir)
    start = float(files[-1].name.split(".")[3]) if files else 0.0
    times = [wall for wall, _, _ in curve if wall >= start]
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    return median(gaps) if gaps else None


def run_progress(run_dir: Path) -> dict[str, Any]:
    """One run's state, epochs, accuracies and pace (module docstring)."""
    config = OmegaConf.load(run_dir / ".hydra" / "config.yaml")
    limit = int(config.trainer.max_epochs)
    result = read_result(run_dir) if (run_dir / RESULT_FILE).exists() else {}
    curve = validation_curve(run_dir)
    # Finished at its limit: a multirun's or a pack's process may still hold it, training others.
    done = result.get("status") in FINAL_STATUSES and result.get("max_epochs") == limit
    running = held(run_dir) and not done
    state = "running" if running else result.get("status", "not finished")
    accs = [acc for _, _, acc in curve]
    pace = seconds_per_epoch(run_dir, curve)
    if pace is None and result.get("status") in FINAL_STATUSES and result.get("updates"):
        pace = result["wall_time_s"] / epochs_trained(result)  # the process that finished it
    left = limit - len(curve)
    return {
        "run": run_dir.name,
        "state": state,
        "epochs": f"{len(curve)}/{limit}",
        "last acc": f"{accs[-1]:.1%}" if accs else "",
        "best acc": f"{max(accs):.1%}" if accs else "",
        "s/epoch": f"{pace:.2f}" if pace else "",
        "to limit": f"{left * pace / 3600:.1f} h" if running and pace and left > 0 else "",
    }


def progress(sweeps: list[str | Path]) -> pd.DataFrame:
    """One row per run under `sweeps` (every Hydra job directory, finished or not)."""
    rows = [
        {"sweep": Path(sweep).name, **run_progress(run_dir)}
        for sweep in sweeps
        for run_dir in run_dirs(Path(sweep))
        if (run_dir / ".hydra" / "config.yaml").exists()
    ]
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=summary(__doc__))
    parser.add_argument("sweeps", nargs="+", help="sweep directories (outputs/<sweep>)")
    args = parser.parse_args(argv)
    missing = [s for s in args.sweeps if not Path(s).is_dir()]
    if missing:
        parser.error(f"no such sweep directory: {', '.join(missing)}")
    table = progress(args.sweeps)
    print(table.to_string(index=False) if len(table) else "no runs")


if __name__ == "__main__":
    main()
