"""The runs of the recall pages' sweeps that have not ended (recall/page.py, "Runs in progress"):
interrupted or failed (no final status, store/records.py), or started with no result.json yet.
The page's tables and checks read finished runs only (analysis/runs.py); these are listed with
where they stand and the command that resumes each from its last checkpoint, not left out.

A run's command is its job's own overrides (`.hydra/overrides.yaml`) under `python src/train.py
-m`, with `hydra.sweep.dir=` where its sweep directory is not its experiment's own. A run found in
the archive (`runs/`) resumes where its sweep is copied back to (`outputs/<sweep>`), after
`python -m longterm.store.archive get runs/<sweep>` (longterm.store.archive).
"""

import shlex
from pathlib import Path
from typing import Any

import pandas as pd
from omegaconf import OmegaConf

from longterm.analysis.formats import pct
from longterm.analysis.provenance import job_overrides
from longterm.analysis.runs import run_dirs
from longterm.config.builtins import CONF
from longterm.store.archive import ARCHIVE, OUTPUTS
from longterm.store.records import DEBUG_STATUS, FINAL_STATUSES
from longterm.store.run_dir import RunDirError, run_record

NO_RECORD = "started, no result.json yet"


def task_of(run_dir: Path, record: dict[str, Any] | None) -> str | None:
    """The run's task: its record's, else its job config's (`.hydra/config.yaml`)."""
    if record is not None:
        return record.get("task")
    config = run_dir / ".hydra" / "config.yaml"
    return OmegaConf.select(OmegaConf.load(config), "task.name") if config.exists() else None


def sweep_default(overrides: list[str]) -> str | None:
    """The sweep directory of the experiment the overrides name (its conf file's), if any."""
    named = [o.split("=", 1)[1] for o in overrides if o.startswith("experiment=")]
    path = CONF / "experiment" / f"{named[-1]}.yaml" if named else None
    if path is None or not path.exists():
        return None
    found = OmegaConf.select(OmegaConf.load(path), "hydra.sweep.dir")
    return None if found is None else str(found)


def resume_command(run_dir: Path) -> tuple[str | None, str]:
    """The command that resumes the run in `run_dir`, after the command that copies its sweep
    back from the archive (None for a run outside it): the module docstring."""
    sweep, get = run_dir.parent, None
    try:
        inside = sweep.resolve().relative_to(ARCHIVE.resolve())
    except ValueError:
        inside = None
    if inside is not None and inside.parts:
        archived = str(ARCHIVE / inside.parts[0])
        get = shlex.join(["python", "-m", "longterm.store.archive", "get", archived])
        sweep = OUTPUTS / inside
    overrides = job_overrides(run_dir)
    where = [] if sweep_default(overrides) == str(sweep) else [f"hydra.sweep.dir={sweep}"]
    return get, shlex.join(["python", "src/train.py", "-m", *overrides, *where])


def unfinished(dirs: list[Path], task: str = "mqar") -> pd.DataFrame:
    """One row per run of `task` under `dirs` that has not ended: run, status, epochs, best
    validation accuracy, resume (its command). A debug run is no run to resume (records.py)."""
    rows = []
    for sweep in dirs:
        for run_dir in run_dirs(sweep) if sweep.is_dir() else []:
            try:
                record = run_record(run_dir)
                status = NO_RECORD if record is None else record["status"]
            except (RunDirError, KeyError):
                record, status = None, "its result.json cannot be read (move it away)"
            if status in (*FINAL_STATUSES, DEBUG_STATUS) or task_of(run_dir, record) != task:
                continue
            epochs = "–" if record is None else f"{record['epochs']} of {record['max_epochs']}"
            best = None if record is None else record.get("best_acc")
            get, resume = resume_command(run_dir)
            rows.append(
                {
                    "run": f"{sweep.name}/{run_dir.relative_to(sweep)}",
                    "status": status,
                    "epochs": epochs,
                    "best val acc (%)": pct(best) or "–",
                    "resume": f"`{resume}`",
                    "get": get,
                }
            )
    return pd.DataFrame(rows)


def in_progress(dirs: list[Path]) -> str:
    """The section of the runs under `dirs` that have not ended; empty where there are none."""
    found = unfinished(dirs)
    if found.empty:
        return ""
    gets = [f"`{g}`" for g in dict.fromkeys(found["get"].dropna())]
    archived = (
        f" An archived run resumes once its sweep is copied back to outputs/: {', '.join(gets)}."
        if gets
        else ""
    )
    table = found.drop(columns="get").to_markdown(index=False, disable_numparse=True)
    return (
        "## Runs in progress\n\nRuns that have not ended (no final status: interrupted or failed, "
        "or started with no record yet), read by no table or check above; each command resumes "
        f"its run from its last checkpoint.{archived}\n\n{table}"
    )
