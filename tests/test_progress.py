"""Where the runs of a sweep stand (longterm.analysis.progress), read from two real runs and a
run directory held by a live process."""

from pathlib import Path

import pytest
from conftest import QUICK, multirun

from longterm.analysis.progress import held, main, progress
from longterm.rundir import claim

# One run solved at its first epoch (a threshold every run passes), one at its limit unsolved.
THRESHOLDS = "callbacks.stop_when_solved.threshold=0.05,1.0"


@pytest.fixture(scope="module")
def sweep(tmp_path_factory) -> tuple[Path, list[dict]]:
    sweep = tmp_path_factory.mktemp("outputs") / "two"
    return sweep, multirun(sweep, *QUICK, THRESHOLDS)


def test_finished_runs_show_their_state_epochs_and_accuracy(sweep):
    sweep_dir, results = sweep
    table = progress([sweep_dir]).set_index("state")
    assert sorted(table.index) == ["max_epochs", "solved"]
    for r in results:
        row = table.loc[r["status"]]
        assert row["epochs"] == f"{r['epochs']}/{r['max_epochs']}"
        assert row["last acc"] == f"{r['val_acc_history'][-1]:.1%}"
        assert row["best acc"] == f"{max(r['val_acc_history']):.1%}"
        assert float(row["s/epoch"]) > 0 and row["to limit"] == ""


def test_a_run_held_by_a_live_process_is_running_and_released_is_not(sweep):
    run_dir = next(p for p in sorted(sweep[0].iterdir()) if p.is_dir())
    assert not held(run_dir)
    with claim(run_dir):
        assert held(run_dir)
        assert progress([sweep[0]])["state"].tolist().count("running") == 1
    assert not held(run_dir)


def test_a_missing_sweep_is_one_line(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main([str(tmp_path / "nope")])
    assert capsys.readouterr().err.strip().endswith(f"no such sweep directory: {tmp_path}/nope")
