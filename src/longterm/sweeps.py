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


def sweep_commands(sweep: Path) -> list[str]:
    """The commands that filled `sweep`: the lr race's record, else Hydra's multirun.yaml."""
    if (sweep / SWEEP_RECORD).exists():
        return [entry["command"] for entry in json.loads((sweep / SWEEP_RECORD).read_text())]
    if (sweep / "multirun.yaml").exists():
        overrides = OmegaConf.load(sweep / "multirun.yaml").hydra.overrides.task
        return ["python src/train.py -m " + " ".join(overrides)]
    return []


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
            *[f"    {c}" for c in sweep_commands(Path(sweep))],
            "",
            f"- runs: {len(g)} ({statuses})",
            f"- commits: {', '.join(sorted(g.commit.astype(str).unique()))}",
            f"- machine: {'; '.join(sorted(g.machine.unique()))}",
            f"- time in its runs (sum of their wall times): {g.wall_time_s.sum() / 60:.1f} min"
            + (f"; first start to last finish: {span:.1f} min" if span is not None else ""),
            "",
        ]
    return "\n".join(lines)
