"""What made each sweep: its commands, commits, machine and time (sweeps.md of the collector).

The learning-rate race keeps its own record of its commands (`sweep.json`); for a Hydra multirun,
the command is read from the sweep's `multirun.yaml` and each job's `.hydra/overrides.yaml`.
"""

import json
import math
import shlex
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

import pandas as pd
from omegaconf import OmegaConf

from longterm.store.records import COMMANDS_RECORD, SWEEP_RECORD


def same_value(a: str, b: str) -> bool:
    """Two override values that mean the same number or word ("1e-3" and "0.001")."""
    try:
        return float(a) == float(b)
    except ValueError:
        return a.lower() == b.lower()


def launched_by(job: list[str], command: list[str]) -> bool:
    """Whether the Hydra command `command` (its task overrides) could have made this job: each
    of the job's overrides is one of the command's choices for its key, or its key is not on the
    command (the experiment's own sweep); and every key the command sets (but Hydra's own) is
    among the job's overrides, as it is in each job the command makes."""
    choices = {
        key: value
        for key, value in (o.split("=", 1) for o in command if "=" in o)
        if not key.startswith("hydra.")
    }
    given = dict(o.split("=", 1) for o in job if "=" in o)
    return all(
        key in given and any(same_value(given[key], c) for c in values.split(","))
        for key, values in choices.items()
    )


def sweep_commands(sweep: Path, jobs: Iterable[Path] = ()) -> list[str]:
    """The commands that filled `sweep`. The lr race keeps its own record, and every multirun
    appends its command to another (longterm.sweeps.multirun). A sweep made before that has Hydra's
    multirun.yaml, which keeps only the last command run in the directory, so a job that command
    did not make is given as a command of its own: its overrides (`.hydra/overrides.yaml`)."""
    if (sweep / SWEEP_RECORD).exists():
        return [entry["command"] for entry in json.loads((sweep / SWEEP_RECORD).read_text())]
    if (sweep / COMMANDS_RECORD).exists():
        entries = json.loads((sweep / COMMANDS_RECORD).read_text())
        recorded = [command_line(e) for e in entries]
        made = [shlex.split(e["command"])[3:] for e in entries]  # python src/train.py -m ...
        # jobs made before the record began: by no recorded command, each its own command
        earlier = [
            "python src/train.py -m " + " ".join(own)
            for own in map(job_overrides, jobs)
            if own and not any(launched_by(own, c) for c in made)
        ]
        return list(dict.fromkeys(earlier)) + recorded
    if not (sweep / "multirun.yaml").exists():
        return []
    overrides = OmegaConf.load(sweep / "multirun.yaml").hydra.overrides
    where = [o for o in overrides.hydra if o.startswith("hydra.sweep.dir=")]
    commands = ["python src/train.py -m " + " ".join([*overrides.task, *where])]
    for own in map(job_overrides, jobs):
        if own and not launched_by(own, list(overrides.task)):
            command = "python src/train.py -m " + " ".join([*own, *where])
            commands += [] if command in commands else [command]
    return commands


def distinct(commands: list[str]) -> list[str]:
    """Each command once, in the order first run, with how many times it was run where more
    than once (a rerun of a race or sweep fills in what is missing, so reruns are common)."""
    counts = Counter(commands)
    return [c + (f"  # {counts[c]} invocations" if counts[c] > 1 else "") for c in counts]


def command_line(entry: dict) -> str:
    """A recorded command as a shell line, after the environment it was run with (`env`, e.g.
    `PYTHONPATH=/home/me/lab python src/train.py -m ...`); records made before `env` have none."""
    env = [f"{name}={shlex.quote(value)}" for name, value in entry.get("env", {}).items()]
    return " ".join([*env, entry["command"]])


def job_overrides(job: Path | str) -> list[str]:
    """A job's own overrides (`.hydra/overrides.yaml`); none when it has no such file."""
    path = Path(job) / ".hydra" / "overrides.yaml"
    return list(OmegaConf.load(path)) if path.exists() else []


def resumed_line(runs: pd.DataFrame) -> list[str]:
    resumed = runs[runs.resumed_at_update.notna()]
    if resumed.empty:
        return []
    earlier = resumed.earlier_wall_time_s.dropna() if "earlier_wall_time_s" in resumed else []
    return [
        f"- resumed from a checkpoint: {len(resumed)} runs (after "
        + ", ".join(f"{e:g}" for e in (resumed.epochs - resumed.epochs_trained))
        + " epochs); a wall time counts only the process that finished the run"
        + (
            f"; the processes before it: {sum(earlier) / 60:.1f} min more "
            f"({len(earlier)} of the {len(resumed)} runs record them)"
            if len(earlier)
            else ""
        )
    ]


def process_minutes(runs: pd.DataFrame) -> float:
    """Minutes the runs' processes spent on them: for each process (result.json's `process`), the
    union of its runs' spans (finished_at less wall_time_s, to finished_at), so a pack's members,
    which train at once, count once, and a multirun's jobs, one after another, add up. A run
    with no process recorded (made before it was) counts its own wall time."""
    if "process" not in runs:
        return runs.wall_time_s.sum() / 60
    known = runs[runs.process.notna() & runs.finished_at.notna()]
    total = runs.drop(known.index).wall_time_s.sum()
    for _, g in known.groupby("process"):
        end = pd.to_datetime(g.finished_at).map(lambda t: t.timestamp())
        spans = sorted(zip(end - g.wall_time_s, end, strict=True))
        reach = -math.inf
        for start, stop in spans:
            total += max(0.0, stop - max(start, reach))
            reach = max(reach, stop)
    return total / 60


def unrecorded(runs: pd.DataFrame) -> str:
    """Says how many runs record no process (made before runs recorded it), which count alone."""
    n = int(runs.process.isna().sum()) if "process" in runs else len(runs)
    return f" ({n} of the runs record no process and count alone)" if n else ""


def sweeps_markdown(runs: pd.DataFrame) -> str:
    lines = ["## Sweeps", ""]
    for sweep, g in runs.groupby("sweep"):
        started = pd.to_datetime(g.started_at.dropna())
        finished = pd.to_datetime(g.finished_at.dropna())
        span = (finished.max() - started.min()).total_seconds() / 60 if len(started) else None
        statuses = ", ".join(f"{n} {s}" for s, n in g.status.value_counts().items())
        lines += [
            f"### {Path(sweep).name}",
            "",
            *[f"    {c}" for c in distinct(sweep_commands(Path(sweep), g.run_dir))],
            "",
            f"- runs: {len(g)} ({statuses})",
            f"- commits: {', '.join(sorted(g.commit.astype(str).unique()))}",
            f"- machine: {'; '.join(sorted(g.machine.unique()))}",
            f"- time in its runs (sum of their wall times): {g.wall_time_s.sum() / 60:.1f} min; "
            f"in their processes (a pack's members, trained at once, counted once): "
            f"{process_minutes(g):.1f} min{unrecorded(g)}"
            + (f"; first start to last finish: {span:.1f} min" if span is not None else ""),
            *resumed_line(g),
            "",
        ]
    return "\n".join(lines)
