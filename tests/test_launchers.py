"""launcher=parallel (src/hydra_plugins/longterm_launcher): the jobs of a multirun side by side,
each job the same run, with the same files and numbers, as under launcher=local."""

import os
import signal

import pytest
from helpers.presets import LONGER, QUICK, TWO_THRESHOLDS, quick
from helpers.results import metrics, read_json, sweep_results
from helpers.runs import start, train_py, wait_for

from hydra_plugins.longterm_launcher.parallel_launcher import budget, with_budget
from longterm.experiments import lr_race


@pytest.mark.parametrize(
    ("jobs", "threads", "n_jobs", "cpus", "expected"),
    [
        ("auto", "auto", 8, 2, (2, 1)),  # one job per CPU, one thread each
        ("auto", "auto", 1, 2, (1, 2)),  # a sweep of one job keeps every CPU
        ("auto", "auto", 3, 16, (3, 5)),  # never more jobs than the sweep has
        (4, "auto", 8, 16, (4, 4)),
        ("auto", 2, 20, 16, (8, 2)),  # as many jobs as the CPUs hold at 2 threads each
        (1, "auto", 8, 2, (1, 2)),  # one at a time: launcher=local with a thread budget
    ],
)
def test_the_budget(jobs, threads, n_jobs, cpus, expected):
    assert budget(jobs, threads, n_jobs, cpus) == expected


def test_a_job_gets_its_budget_in_place_of_the_command_lines():
    given = ["T0=50", "launcher.threads=8", "+launcher.jobs=3", "seed=1"]
    assert with_budget(given, 2, 1) == ["T0=50", "seed=1", "launcher.jobs=2", "launcher.threads=1"]


def test_the_race_runs_its_stages_side_by_side():
    args = lr_race.parse(["--sweep-dir", "x", "--T0", "50"])
    assert args.launcher == "packed"
    with pytest.raises(SystemExit):
        lr_race.parse(["--sweep-dir", "x", "--T0", "50", "--", "launcher=local"])


def test_a_parallel_sweep_is_the_local_sweep_run_side_by_side(two_runs, tmp_path):
    """The command of conftest.two_runs under launcher=parallel, with jobs too large for memory
    beside them (T0=5000000): the same job directories with the same metrics and files, each
    job's config with its resolved budget, each job's verdict line on the terminal; the jobs too
    large stop in one line each in their worker processes, and the sweep ends with its table and
    exits 1, as under launcher=local (tests/test_memory_estimate.py)."""
    args = ("-m", "launcher=parallel", "T0=5000000,50", *QUICK, TWO_THRESHOLDS)
    out = train_py(*args, f"hydra.sweep.dir={tmp_path}")
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
    jobs = sorted(p.name for p in two_runs.iterdir() if (p / ".hydra").is_dir())
    assert [r["T0"] for r in sweep_results(tmp_path)] == [50, 50]
    cpus = len(os.sched_getaffinity(0))
    at_once, threads = budget("auto", "auto", 2 * len(jobs), cpus)
    for job in jobs:
        assert metrics(tmp_path / job) == metrics(two_runs / job)
        files = {p.name for p in (tmp_path / job).iterdir()}
        assert {"result.json", "hparams.yaml", "train.log", "checkpoints"} <= files
        assert any(name.startswith("events.out.tfevents") for name in files)
        assert (tmp_path / job / "checkpoints" / "last.ckpt").exists()
        launcher = read_json(tmp_path / job / "result.json")["config"]["launcher"]
        assert launcher == {"name": "parallel", "jobs": at_once, "threads": threads}
    verdicts = [line for line in out.stdout.splitlines() if line.endswith("result.json")]
    assert len(verdicts) == len(jobs)
    assert f"4 jobs, {at_once} at a time with {threads} threads each" in out.stdout
    errors = [line for line in out.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 3 and errors[0].startswith("error: T0=5000000 needs about ")
    assert at_once == 1 or f"available for each of {at_once} jobs side by side" in errors[0]
    assert errors[2] == "error: 2 job(s) of the sweep stopped; each said why above"
    table = out.stdout[out.stdout.index("4 jobs in ") :].splitlines()
    assert len(table) == 3 + 4 and sum("no result" in row for row in table) == 2


def test_a_parallel_sweep_stopped_by_sigterm_stops_its_jobs_and_resumes(tmp_path):
    """`kill` of a launcher=parallel command (three jobs, two at a time): its jobs stop after
    their batch and record themselves as interrupted, the third never starts, the command says so
    in one line after its table and leaves no process behind; the same command resumes them."""
    args = ("-m", "launcher=parallel", "launcher.jobs=2", "lr=1e-5,2e-5,3e-5")
    args += (*quick("trainer.max_epochs=3", base=LONGER), f"hydra.sweep.dir={tmp_path}")
    sweep = start(*args)
    try:
        # both running jobs into their second epoch
        wait_for(
            lambda: (
                len(list(tmp_path.glob("*/checkpoints/last.ckpt"))) == 2 or sweep.poll() is not None
            ),
            "checkpoints",
        )
        assert sweep.poll() is None, sweep.stderr.read()
        sweep.send_signal(signal.SIGTERM)
        assert sweep.wait(timeout=120) == 1
    finally:
        sweep.kill()
    stderr = sweep.stderr.read()
    assert "Traceback" not in stderr
    assert stderr.strip().splitlines()[-1] == (
        "error: the sweep was stopped by SIGTERM: 2 job(s) interrupted, 1 not started; rerun "
        "the same command to resume them"
    )
    with pytest.raises(ProcessLookupError):  # nothing left in the command's process group
        os.killpg(sweep.pid, 0)
    stopped = sweep_results(tmp_path)
    assert [r["status"] for r in stopped] == ["interrupted"] * 2
    out = train_py(*args)
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("resuming from ") == 2
    assert [r["status"] for r in sweep_results(tmp_path)] == ["max_epochs"] * 3
