"""The collector on any sweep, however small or unsuccessful: only unsolved runs, only diverged
runs, a single run, runs of mixed tasks and models. Each collects, with "not solved" cells and
the plots it can draw, and by default writes beside the sweep, never into docs/."""

import logging
from pathlib import Path

import pandas as pd
import pytest
from helpers.results import read_json
from helpers.runs import train_py

from longterm.analysis.collect import COLLECTED, main

# The unsolved sweep a user reported (3 updates, 1 validation batch per run): nothing is solved,
# and no run logs a training loss (trainer.log_every_n_steps is 50). Made with
# trainer.limit_train_batches=3 and limit_val_batches=1, it would be debug runs, never collected.
UNSOLVED = [
    "-m",
    "task=addition,multiplication",
    "pool=attention,mean",
    "T0=50",
    "seed=1,2",
    "trainer.max_epochs=1",
    "data.batches_per_epoch=3",
    "data.val_size=100",
    "trainer.enable_progress_bar=false",
]


def sweep(path: Path, *args: str) -> Path:
    out = train_py(*args, f"hydra.sweep.dir={path}")
    assert out.returncode == 0, out.stderr
    return path


@pytest.fixture(scope="module")
def unsolved(tmp_path_factory) -> Path:
    return sweep(tmp_path_factory.mktemp("sweeps") / "unsolved", *UNSOLVED)


def collected(sweep_dir: Path, monkeypatch, tmp_path) -> Path:
    """Run the collector's command line with its default output, from an empty directory."""
    monkeypatch.chdir(tmp_path)
    main([str(sweep_dir)])
    assert not (tmp_path / "docs").exists()  # the default never writes into a docs/ folder
    return sweep_dir / COLLECTED


def test_a_sweep_of_unsolved_runs_collects_beside_the_sweep(
    unsolved, monkeypatch, tmp_path, caplog
):
    with caplog.at_level(logging.WARNING, logger="longterm.analysis.collect"):
        out = collected(unsolved, monkeypatch, tmp_path)
    assert len(pd.read_csv(out / "runs.csv")) == 8
    table = (out / "table1.md").read_text()
    for task in ("addition", "multiplication"):
        for pool in ("attention", "mean"):
            row = next(line for line in table.splitlines() if f"| {task} | {pool} | *" in line)
            assert row.split(" | ")[2].startswith("*") and "%" in row  # accuracy, not epochs
    assert (out / "epochs_vs_T0.png").stat().st_size > 0  # the paper's curves, ours unsolved
    assert not (out / "learning_curves.png").exists()
    assert "learning_curves.png not drawn: no run that the learning-rate rule chose" in caplog.text


def test_a_single_run_collects(unsolved, monkeypatch, tmp_path):
    run = next(p.parent for p in sorted(unsolved.glob("*/result.json")))
    out = collected(run, monkeypatch, tmp_path)
    assert len(pd.read_csv(out / "runs.csv")) == 1
    assert "| addition | attention | *" in (out / "table1.md").read_text()


def test_a_second_collection_replaces_the_first(unsolved, tmp_path):
    """Files an earlier collection wrote that these runs do not support are removed."""
    out = tmp_path / "out"
    main([str(unsolved), "--out", str(out)])
    (out / "masking.md").write_text("from an earlier collection")
    (out / "notes.txt").write_text("the user's own file")
    main([str(unsolved), "--out", str(out)])
    assert not (out / "masking.md").exists() and (out / "notes.txt").exists()


def test_a_sweep_of_diverged_runs_collects(tmp_path, monkeypatch):
    diverged = sweep(
        tmp_path / "diverged",
        "-m",
        "lr=1e30",
        "pool=attention,mean",
        "trainer.max_epochs=2",
        "data.batches_per_epoch=5",
        "trainer.enable_progress_bar=false",
    )
    assert {read_json(p)["status"] for p in diverged.glob("*/result.json")} == {"diverged"}
    out = collected(diverged, monkeypatch, tmp_path)
    table = (out / "table1.md").read_text()
    # a small sweep's epochs are not the paper's: no paper value beside them, and why
    note = "(no paper value: 5 updates an epoch, "
    assert "| addition | attention | *diverged* " + note in table
    assert "| addition | mean | *diverged* " + note in table
    assert "1 × 1 lr, 1 diverged" in table


def test_runs_of_mixed_tasks_and_models_collect(tmp_path, monkeypatch):
    """Variable lengths on a task the paper did not run, and a recurrent model beside the
    paper's: the variable-length table has no paper value there, and every plot is drawn."""
    mixed = sweep(
        tmp_path / "mixed",
        "-m",
        "arch=lstm,attention",
        "task=temporal_order,addition",
        "data=variable",
        "data.min_length=20",
        "data.max_length=40",
        "data.val_batches=2",
        "data.batches_per_epoch=3",
        "trainer.max_epochs=1",
        "model.impl=reference",
        "trainer.enable_progress_bar=false",
    )
    out = collected(mixed, monkeypatch, tmp_path)
    runs = pd.read_csv(out / "runs.csv")
    assert set(zip(runs.model, runs.task, strict=True)) == {
        (model, task)
        for model in ("lstm", "feedforward")
        for task in ("temporal_order", "addition")
    }
    rows = (out / "variable_length.md").read_text().splitlines()
    assert any(r.startswith("| temporal_order | attention |") for r in rows)
    assert any(r.startswith("| addition | attention |") and "no paper value" in r for r in rows)
    for plot in ("variable_length_curves.png", "accuracy_by_length.png"):
        assert (out / plot).stat().st_size > 0
    assert not (out / "table1.md").exists()  # no fixed-length run of the paper's model


def test_a_sweep_without_finished_runs_says_so_in_one_line(tmp_path):
    with pytest.raises(SystemExit, match=r"^error: no finished runs under "):
        main([str(tmp_path), "--out", str(tmp_path / "out")])
    assert not (tmp_path / "out").exists()
