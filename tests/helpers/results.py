"""Reading what runs wrote: a result.json, each job's of a sweep, and what a run measured."""

import json
from collections.abc import Callable
from pathlib import Path

import pytest


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


def refuses_mix(
    main: Callable[[list[str]], object], argv: list[str], point: str, named: str
) -> None:
    """A page's command (`main(argv)`) stops in one line: its point `point` (`task=addition,
    ...`) would join runs that differ in `named` (`lr: 0.001, 0.003`)."""
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    line = str(stopped.value.code)
    assert line.startswith(
        f"error: runs of other settings in one point ({point}) differ in {named}:"
    )
    assert "\n" not in line, line
