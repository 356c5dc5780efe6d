"""Reading what runs wrote: a result.json, each job's of a sweep, and what a run measured."""

import json
from pathlib import Path


def read_json(path: Path) -> dict:
    return json.loads(path.read_text())


def run_dirs(sweep_dir: Path) -> list[Path]:
    """The job directories of a sweep directory (each with Hydra's `.hydra/`), in name order."""
    return sorted(p.parent for p in sweep_dir.glob("*/.hydra"))


def sweep_results(sweep_dir: Path) -> list[dict]:
    """Each finished job's result.json in a sweep directory, in the order of the job folders."""
    return [read_json(p) for p in sorted(sweep_dir.glob("*/result.json"))]


# What a run measured; everything else in result.json says where, when and how long.
METRICS = (
    "status",
    "epochs",
    "updates",
    "epoch_solved",
    "diverged_step",
    "best_acc",
    "final_acc",
    "val_acc_history",
    "n_params",
)


def metrics(run_dir: Path) -> dict:
    result = read_json(run_dir / "result.json")
    return {k: result[k] for k in METRICS}
