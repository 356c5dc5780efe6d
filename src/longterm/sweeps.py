"""The runs of one or more sweeps, as a table: every finished run's result.json, and what made
each sweep (its commands, commits, machine and time).

A run directory (a Hydra job: it holds `.hydra/`) without a result.json, or with one that does
not parse, is skipped with a warning naming it, as is a run that has not finished (interrupted,
failed). Diverged runs are kept: they are results.
"""

import json
import logging
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd
from omegaconf import OmegaConf

from longterm.lr_race import SWEEP_RECORD
from longterm.results import RESULT_FILE

log = logging.getLogger("longterm.collect")
FINISHED = ("solved", "max_epochs", "diverged")


def machine_name(m: dict[str, Any]) -> str:
    where = m.get("cuda") or f"{m['processor']}, {m['cpus']} cores"
    return f"{where}, torch {m['torch']}"


def epochs_trained(r: dict[str, Any]) -> float:
    """Epochs the last process trained. A resumed run (or one continued to a larger limit,
    longterm.continue_run) counts only those after `resumed_at_update`, as `wall_time_s` does."""
    resumed = r.get("resumed_at_update") or 0
    return r["epochs"] - resumed * r["epochs"] / r["updates"] if r["updates"] else r["epochs"]


def run_row(path: Path, sweep: Path) -> dict[str, Any]:
    r = json.loads(path.read_text())
    return {
        "sweep": str(sweep),
        "run_dir": str(path.parent),
        **{k: r[k] for k in ("task", "pool", "model", "data", "T0", "lr", "seed")},
        "mask_padding": r["mask_padding"],
        "lengths": r.get("lengths"),
        "min_length": r.get("min_length"),
        "max_length": r.get("max_length"),
        **{k: r[k] for k in ("status", "epoch_solved", "epochs", "max_epochs", "updates")},
        **{k: r[k] for k in ("best_acc", "final_acc", "diverged_step", "n_params")},
        "history": r["val_acc_history"],
        "wall_time_s": r["wall_time_s"],
        "resumed_at_update": r.get("resumed_at_update"),
        "epochs_trained": epochs_trained(r),
        "started_at": r.get("started_at"),
        "finished_at": r.get("finished_at"),
        "commit": r["git_commit"],
        "machine": machine_name(r["machine"]),
        "loss": r["loss"],
        "config": r["config"],
    }


def run_dirs(sweep: Path) -> Iterable[Path]:
    """Every Hydra job directory under `sweep` (where Hydra saved the job's config)."""
    return sorted(
        {p.parent for p in sweep.glob("**/.hydra")}
        | {p.parent for p in sweep.glob(f"**/{RESULT_FILE}")}
    )


def load_runs(sweeps: Iterable[str | Path]) -> pd.DataFrame:
    """One row per finished run under `sweeps`; warns about (and skips) every other run."""
    rows = []
    for sweep in map(Path, sweeps):
        if not sweep.is_dir():
            log.warning(f"{sweep}: no such sweep directory")
            continue
        for run_dir in run_dirs(sweep):
            path = run_dir / RESULT_FILE
            if not path.exists():
                log.warning(f"{run_dir}: skipped, no {RESULT_FILE} (not finished)")
                continue
            try:
                row = run_row(path, sweep)
            except (json.JSONDecodeError, KeyError, TypeError) as e:
                log.warning(f"{path}: skipped, corrupt ({type(e).__name__}: {e})")
                continue
            if row["status"] not in FINISHED:
                log.warning(f"{path}: skipped, status {row['status']}")
                continue
            rows.append(row)
    return pd.DataFrame(rows)


def same_value(a: str, b: str) -> bool:
    """Two override values that mean the same number or word ("1e-3" and "0.001")."""
    try:
        return float(a) == float(b)
    except ValueError:
        return a.lower() == b.lower()


def launched_by(job: list[str], command: list[str]) -> bool:
    """Whether the Hydra command `command` (its task overrides) could have made this job: each
    of the job's overrides is one of the command's choices for its key, or its key is not on the
    command (the experiment's own sweep)."""
    choices = dict(o.split("=", 1) for o in command if "=" in o)
    for key, value in (o.split("=", 1) for o in job if "=" in o):
        if key in choices and not any(same_value(value, c) for c in choices[key].split(",")):
            return False
    return True


def sweep_commands(sweep: Path, jobs: Iterable[Path] = ()) -> list[str]:
    """The commands that filled `sweep`. The lr race keeps its own record. Hydra's
    multirun.yaml keeps only the last command run in the directory, so a job that command did
    not make is given as a command of its own: its overrides (`.hydra/overrides.yaml`)."""
    if (sweep / SWEEP_RECORD).exists():
        return [entry["command"] for entry in json.loads((sweep / SWEEP_RECORD).read_text())]
    if not (sweep / "multirun.yaml").exists():
        return []
    overrides = OmegaConf.load(sweep / "multirun.yaml").hydra.overrides
    where = [o for o in overrides.hydra if o.startswith("hydra.sweep.dir=")]
    commands = ["python src/train.py -m " + " ".join([*overrides.task, *where])]
    for job in jobs:
        path = Path(job) / ".hydra" / "overrides.yaml"
        own = list(OmegaConf.load(path)) if path.exists() else []
        if own and not launched_by(own, list(overrides.task)):
            command = "python src/train.py -m " + " ".join([*own, *where])
            commands += [] if command in commands else [command]
    return commands


def resumed_line(runs: pd.DataFrame) -> list[str]:
    resumed = runs[runs.resumed_at_update.notna()]
    if resumed.empty:
        return []
    return [
        f"- resumed from a checkpoint: {len(resumed)} runs (after "
        + ", ".join(f"{e:g}" for e in (resumed.epochs - resumed.epochs_trained))
        + " epochs); a wall time counts only the process that finished the run"
    ]


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
            *[f"    {c}" for c in sweep_commands(Path(sweep), g.run_dir)],
            "",
            f"- runs: {len(g)} ({statuses})",
            f"- commits: {', '.join(sorted(g.commit.astype(str).unique()))}",
            f"- machine: {'; '.join(sorted(g.machine.unique()))}",
            f"- time in its runs (sum of their wall times): {g.wall_time_s.sum() / 60:.1f} min"
            + (f"; first start to last finish: {span:.1f} min" if span is not None else ""),
            *resumed_line(g),
            "",
        ]
    return "\n".join(lines)
