"""The runs of one or more sweeps as a table: a row per finished run's result.json.

A run directory (a Hydra job: it holds `.hydra/`) without a result.json, or with one that does
not parse, is skipped with a warning naming it, as is a run that has not finished (interrupted,
failed) and a debug run (status debug: Lightning's debugging keys, config/debug.py). Diverged
runs are kept: they are results. Beside `n_params` stands `state_size` (numbers per sequence the
model carries at inference, training/result.py), empty for a run recorded before it was, or of a
model with no step form. The training recipe's settings
(`optim`, `weight_decay`, `schedule`, `warmup`, `clip`) are those the run recorded, or, for a run
recorded before them, the paper's recipe it trained with (store/upgrade.py).
"""

import json
import logging
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from longterm.config.run_settings import recorded_params
from longterm.store.records import FINAL_STATUSES, RESULT_FILE
from longterm.store.upgrade import ADDED_SETTINGS, current_settings

log = logging.getLogger("longterm.analysis.collect")


def machine_name(m: dict[str, Any]) -> str:
    where = m.get("cuda") or f"{m['processor']}, {m['cpus']} cores"
    return f"{where}, torch {m['torch']}"


def epochs_trained(r: dict[str, Any]) -> float:
    """Epochs the last process trained. A resumed run (or one continued to a larger limit,
    longterm.store.continue_run) counts only those after `resumed_at_update`, as `wall_time_s`
    does."""
    resumed = r.get("resumed_at_update") or 0
    return r["epochs"] - resumed * r["epochs"] / r["updates"] if r["updates"] else r["epochs"]


def run_row(path: Path, sweep: Path) -> dict[str, Any]:
    r = json.loads(path.read_text())
    settings = current_settings(r)  # a run recorded before the recipe's keys: as it ran
    return {
        "sweep": str(sweep),
        "run_dir": str(path.parent),
        **{k: r[k] for k in ("task", "pool", "model", "data", "T0", "lr", "seed")},
        "mask_padding": r["mask_padding"],
        "lengths": r.get("lengths"),
        "min_length": r.get("min_length"),
        "max_length": r.get("max_length"),
        **{k: settings[k] for k in ADDED_SETTINGS},  # the training recipe
        **{k: r[k] for k in ("status", "epoch_solved", "epochs", "max_epochs", "updates")},
        **{k: r[k] for k in ("best_acc", "final_acc", "diverged_step", "n_params")},
        "state_size": r.get("state_size"),  # absent from runs recorded before it was
        "history": r["val_acc_history"],
        "wall_time_s": r["wall_time_s"],
        "resumed_at_update": r.get("resumed_at_update"),
        "earlier_wall_time_s": r.get("earlier_wall_time_s"),  # absent before it was recorded
        "epochs_trained": epochs_trained(r),
        "started_at": r.get("started_at"),
        "finished_at": r.get("finished_at"),
        "process": r.get("process"),
        "commit": r["git_commit"],
        "machine": machine_name(r["machine"]),
        "loss": r["loss"],
        "eval_lengths": r.get("eval_lengths"),  # {"<T0>": accuracy} of eval.lengths, or None
        "config": r["config"],
        "settings": recorded_params(r),  # every setting that identifies it (analysis/identity.py)
    }


def paper_recipe_columns(runs: pd.DataFrame) -> list[str]:
    """The recipe's columns in which every run has the paper's recipe (ADDED_SETTINGS): left
    out of runs.csv, which reads as it did before the recipe was a setting."""
    return [
        k
        for k, old in ADDED_SETTINGS.items()
        if k in runs and all(v == old or (old is None and pd.isna(v)) for v in runs[k])
    ]


def varied_settings(runs: pd.DataFrame) -> dict[str, list]:
    """The settings (config/run_settings.py, each run's `settings`) that are not columns of
    `runs` and differ between its runs, each as a column: runs.csv tells apart every two runs of
    other settings (the width `dim`, a task's `vocab`, a model's own keys), and a setting all its
    runs share is left out, as `paper_recipe_columns` are."""
    if runs.empty:
        return {}
    keys = sorted({k for s in runs.settings for k in s} - set(runs.columns))
    columns = {k: [s.get(k) for s in runs.settings] for k in keys}
    return {k: v for k, v in columns.items() if len({repr(x) for x in v}) > 1}


def config_values(runs: pd.DataFrame, *keys: str, default: Any = None) -> list:
    """The distinct values of one config entry (`keys`: its path) over the runs, sorted;
    `default` for a run without it (a key recorded after it ran), else such a run is left out
    (a one-layer recurrent model has no `model.layers`)."""
    found = set()
    for c in runs.config:
        for k in keys:
            c = c.get(k) if isinstance(c, dict) else None
        found.add(default if c is None else c)
    found.discard(None)
    return sorted(found, key=str)


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
            if row["status"] not in FINAL_STATUSES:
                log.warning(f"{path}: skipped, status {row['status']}")
                continue
            rows.append(row)
    return pd.DataFrame(rows)
