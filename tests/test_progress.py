"""Where the runs of a sweep stand (longterm.analysis.progress), read from two real runs and a
run directory held by a live process."""

import pytest
from helpers.results import sweep_results

from longterm.analysis.progress import held, main, progress
from longterm.store.records import read_result, write_result
from longterm.store.run_dir import claim


def test_finished_runs_show_their_state_epochs_and_accuracy(two_runs):
    sweep_dir, results = two_runs, sweep_results(two_runs)
    table = progress([sweep_dir]).set_index("state")
    assert sorted(table.index) == ["max_epochs", "solved"]
    for r in results:
        row = table.loc[r["status"]]
        assert row["epochs"] == f"{r['epochs']}/{r['max_epochs']}"
        assert row["last acc"] == f"{r['val_acc_history'][-1]:.1%}"
        assert row["best acc"] == f"{max(r['val_acc_history']):.1%}"
        assert float(row["s/epoch"]) > 0 and row["to limit"] == ""


def test_a_run_held_by_a_live_process_is_running_and_released_is_not(two_runs):
    """A held run whose result is not final (resumed, in training) is running; a held run whose
    result is final at its limit is finished: the process that holds it (a multirun's, a
    pack's) goes on with other runs."""
    run_dir = next(p for p in sorted(two_runs.iterdir()) if p.is_dir())
    final = read_result(run_dir)
    assert not held(run_dir)
    try:
        with claim(run_dir):
            assert held(run_dir)
            states = progress([two_runs])["state"].tolist()
            assert "running" not in states and final["status"] in states
            write_result(run_dir, {**final, "status": "interrupted"})  # resumed: training again
            assert progress([two_runs])["state"].tolist().count("running") == 1
    finally:
        write_result(run_dir, final)
    assert not held(run_dir)


def test_a_missing_sweep_is_one_line(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main([str(tmp_path / "nope")])
    assert capsys.readouterr().err.strip().endswith(f"no such sweep directory: {tmp_path}/nope")
