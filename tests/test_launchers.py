"""launcher=parallel (src/hydra_plugins/longterm_launcher): the jobs of a multirun side by side,
each job the same run, with the same files and numbers, as under launcher=local."""

import logging
import os
import shlex
import signal

import pytest
from helpers.paths import CONF, ROOT
from helpers.presets import LONGER, QUICK, TWO_THRESHOLDS, quick
from helpers.results import metrics, read_json, sweep_results
from helpers.runs import start, train_py, wait_for
from hydra.core.global_hydra import GlobalHydra
from hydra.core.singleton import Singleton
from hydra.core.utils import JobReturn, JobStatus
from hydra.types import HydraContext, RunMode

from hydra_plugins.longterm_launcher import parallel_launcher
from hydra_plugins.longterm_launcher.parallel_launcher import budget, with_budget
from longterm.config.command_line import composing
from longterm.experiments import lr_race
from longterm.sweeps.failures import Failures


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
    assert errors[2].startswith("error: 2 job(s) of the sweep stopped; each said why above; ")
    assert errors[2].endswith(f" {' '.join(args)} hydra.sweep.dir={tmp_path}")  # resumes it
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
    resume = shlex.join(["python", str(ROOT / "src" / "train.py"), *args])  # its sweep dir last
    assert stderr.strip().splitlines()[-1] == (
        "error: the sweep was stopped by SIGTERM: 2 job(s) interrupted, 1 not started; resume "
        f"them with: {resume}"
    )
    with pytest.raises(ProcessLookupError):  # nothing left in the command's process group
        os.killpg(sweep.pid, 0)
    stopped = sweep_results(tmp_path)
    assert [r["status"] for r in stopped] == ["interrupted"] * 2
    out = train_py(*args)
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("resuming from ") == 2
    assert [r["status"] for r in sweep_results(tmp_path)] == ["max_epochs"] * 3


class NoCallbacks:
    """Hydra's callbacks of a job, none of them doing anything."""

    def on_job_start(self, **kwargs) -> None: ...

    def on_job_end(self, **kwargs) -> None: ...


def test_a_worker_runs_its_job_through_hydras_run_job(tmp_path, monkeypatch):
    """run_one, what a worker runs (Hydra's public run_job, the job's config made as Hydra's
    launchers make it), in this process: a job's directory, `.hydra/` files and JobReturn; and a
    task that raises past src/train.py comes back with what it raised, said in one line under
    its label and counted as stopped (settled), so the sweep ends with its table. Its names are
    read from the module when used: Hydra's plugin scan executes it again, making new classes."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    try:
        with composing(CONF):
            loader = GlobalHydra.instance().config_loader()
            config = loader.load_configuration(
                "train", overrides=[f"hydra.sweep.dir={tmp_path}"], run_mode=RunMode.MULTIRUN
            )
            context = HydraContext(config_loader=loader, callbacks=NoCallbacks())
            monkeypatch.setattr(parallel_launcher, "FAILURES", Failures())  # after the scan
            state = Singleton.get_state()
            done, lines = parallel_launcher.run_one(
                4, ["lr=0.01"], context, config, lambda cfg: cfg.lr, state
            )

            def task(cfg):
                raise RuntimeError("the task failed\nat its second line")

            failed, failed_lines = parallel_launcher.run_one(
                5, ["seed=2"], context, config, task, state
            )
    finally:
        for handler in root.handlers[:]:
            if handler not in handlers:
                root.removeHandler(handler)
                handler.close()
        root.handlers[:], root.level = handlers, level
    assert isinstance(done, JobReturn) and done.status == JobStatus.COMPLETED
    assert done.return_value == 0.01 and lines == [] and failed_lines == []
    assert done.hydra_cfg.hydra.job.id == "train_4" and done.hydra_cfg.hydra.job.num == 4
    assert sorted(p.parent.name for p in tmp_path.glob("*/.hydra")) == [
        "addition-attention-T50-lr1e-2-s0",
        "addition-attention-T50-lr1e-3-s2",
    ]
    assert isinstance(failed, parallel_launcher.Failed) and str(failed.error).startswith(
        "the task failed"
    )
    ret = parallel_launcher.settled(failed, "job #5 (seed=2)")
    assert ret.status == JobStatus.COMPLETED and ret.return_value is None
    assert parallel_launcher.FAILURES.since(0) == [
        "job #5 (seed=2) failed: RuntimeError: the task failed"
    ]
