"""Runs that are exact, survive being killed, preempted or diverging, and never share a directory;
all through the real entry point, src/train.py."""

import json
import os
import shlex
import shutil
import signal
import socket
import sys
import threading
import time
from pathlib import Path

import pytest
import torch
from helpers.configs import composed
from helpers.hold import HOLD, has_received, is_held, release
from helpers.paths import PLUGINS, ROOT
from helpers.presets import LONGER, QUICK, quick
from helpers.results import metrics, read_json, run_dirs, sweep_results
from helpers.runs import multirun, run_command, run_once, start, train_py, wait_for, wait_for_file
from omegaconf import OmegaConf
from tensorboard.plugins.hparams import metadata

from longterm.analysis.events import scalars
from longterm.store.continue_run import ContinueError, continue_run
from longterm.store.run_dir import EVENTS
from longterm.training.hparams import records


def sessions(run_dir: Path) -> tuple[int, int]:
    """How many HPARAMS session-start and session-end records the run's event files hold."""
    found = records(run_dir)
    starts = found.get(metadata.SESSION_START_INFO_TAG, [])
    return len(starts), len(found.get(metadata.SESSION_END_INFO_TAG, []))


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory) -> Path:
    """The run the interrupted ones must end up equal to: LONGER, never stopped."""
    return run_once(tmp_path_factory, "uninterrupted", *LONGER)


def record(run_dir: Path) -> str:
    """result.json without what differs between two identical runs: times, process and
    directory."""
    result = read_json(run_dir / "result.json")
    for when in ("wall_time_s", "started_at", "finished_at", "process"):
        del result[when]
    return json.dumps(result).replace(str(run_dir), "<run_dir>")


def test_the_same_command_and_seed_rerun_exactly(tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    for run_dir in (first, second):
        out = train_py(*QUICK, "seed=7", f"hydra.run.dir={run_dir}")
        assert out.returncode == 0, out.stderr
    assert record(first) == record(second)
    assert metrics(first)["val_acc_history"]  # the comparison saw measurements
    assert scalars(first) == scalars(second)
    assert len(scalars(first)["train/loss"]) == 4  # the comparison saw the curves
    other = tmp_path / "other_seed"
    assert train_py(*QUICK, "seed=8", f"hydra.run.dir={other}").returncode == 0
    assert scalars(other)["train/loss"] != scalars(first)["train/loss"]


def test_a_run_killed_mid_epoch_resumes_to_the_same_result(tmp_path, uninterrupted):
    last = tmp_path / "checkpoints" / "last.ckpt"
    run = start(*LONGER, f"hydra.run.dir={tmp_path}")
    try:
        wait_for_file(EVENTS, tmp_path, run)  # the logger starts before the first epoch
        began = time.monotonic()
        wait_for_file("checkpoints/last.ckpt", tmp_path, run)
        # Into the second epoch, well before its end even if the machine speeds up meanwhile.
        time.sleep(min((time.monotonic() - began) / 4, 0.5))
    finally:
        run.send_signal(signal.SIGKILL)
        run.wait()
    assert run.returncode == -signal.SIGKILL, run.stderr.read()
    assert torch.load(last, weights_only=True)["global_step"] == 100  # killed inside epoch 2
    assert not (tmp_path / "result.json").exists()
    assert sessions(tmp_path) == (1, 0)

    resumed = train_py(*LONGER, f"hydra.run.dir={tmp_path}")
    assert resumed.returncode == 0, resumed.stderr
    assert "resuming from" in (tmp_path / "train.log").read_text()
    assert read_json(tmp_path / "result.json")["resumed_at_update"] == 100
    assert read_json(tmp_path / "result.json")["earlier_wall_time_s"] is None  # none recorded
    assert metrics(tmp_path) == metrics(uninterrupted)
    assert metrics(tmp_path)["updates"] == 200
    assert scalars(tmp_path) == scalars(uninterrupted)  # one continuous curve in the same run
    assert sessions(tmp_path) == (1, 1)  # the first process's start record, one end


def test_a_terminated_run_says_so_and_resumes(tmp_path, uninterrupted):
    """SIGTERM (Ctrl-C, `kill`, a scheduler) ends the run after the current batch with status
    interrupted and a non-zero exit; the same command then finishes it."""
    run = start(*LONGER, f"hydra.run.dir={tmp_path}")
    try:
        wait_for_file("checkpoints/last.ckpt", tmp_path, run)
        run.send_signal(signal.SIGTERM)
        assert run.wait(timeout=120) != 0
    finally:
        run.kill()
    stopped = read_json(tmp_path / "result.json")
    assert stopped["status"] == "interrupted" and 100 <= stopped["updates"] < 200
    assert stopped["val_acc_history"] and "interrupted:" in run.stderr.read()
    assert sessions(tmp_path) == (1, 0)  # an interrupted run has no session end
    resumed = train_py(*LONGER, f"hydra.run.dir={tmp_path}")
    assert resumed.returncode == 0, resumed.stderr
    assert metrics(tmp_path) == metrics(uninterrupted)
    assert sessions(tmp_path) == (1, 1)
    # the time of the stopped process is kept beside the last one's
    assert read_json(tmp_path / "result.json")["earlier_wall_time_s"] == stopped["wall_time_s"]


TRAIN_PY = str(ROOT / "src" / "train.py")


def stopped_by_sigterm(args: list[str], cwd: Path, ready: str) -> str:
    """src/train.py with `args` in `cwd`, sent SIGTERM once a path matching `ready` exists under
    `cwd`; the last line it said (stderr), after a non-zero exit."""
    run = start(*args, cwd=cwd)
    try:
        wait_for(lambda: any(cwd.glob(ready)) or run.poll() is not None, ready)
        assert run.poll() is None, run.stderr.read()
        run.send_signal(signal.SIGTERM)
        assert run.wait(timeout=120) != 0
    finally:
        run.kill()
    stderr = run.stderr.read()
    assert "Traceback" not in stderr, stderr
    return stderr.strip().splitlines()[-1]


def run_printed(line: str, lead: str, cwd: Path) -> str:
    """Run the command that `line` gives after `lead` (`python src/train.py ...`, as a user
    pastes it) in `cwd`, which must succeed; its stdout."""
    assert lead in line, line
    python, *command = shlex.split(line.split(lead, 1)[1])
    assert python == "python", line
    out = run_command([sys.executable, *command], cwd, dict(os.environ), timeout=300)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_a_stopped_run_in_its_default_directory_says_the_command_that_resumes_it(tmp_path):
    """A run in a new, timestamped directory (no hydra.run.dir given) stopped by SIGTERM: its
    last line gives its command with hydra.run.dir=<its directory>, and that command resumes it
    there instead of starting a new run."""
    line = stopped_by_sigterm(LONGER, tmp_path, "outputs/runs/*/checkpoints/last.ckpt")
    (run_dir,) = (tmp_path / "outputs" / "runs").iterdir()
    resume = shlex.join(["python", TRAIN_PY, *LONGER, f"hydra.run.dir={run_dir}"])
    assert line == f"interrupted: {run_dir / 'result.json'}; resume it with: {resume}"
    run_printed(line, "; resume it with: ", tmp_path)
    assert list((tmp_path / "outputs" / "runs").iterdir()) == [run_dir]
    result = read_json(run_dir / "result.json")
    assert result["status"] == "max_epochs" and result["resumed_at_update"] == 100


def test_a_stopped_sweep_says_the_command_that_resumes_it_in_its_directory(tmp_path):
    """A sweep (launcher=local, no hydra.sweep.dir given) stopped by SIGTERM in its second job:
    its last line gives its command with hydra.sweep.dir=<its directory>; that command skips the
    finished job, resumes the stopped one and runs the third, in the same directory."""
    args = ["-m", "lr=1e-3,3e-3,1e-2", *LONGER]
    line = stopped_by_sigterm(args, tmp_path, "outputs/multirun/*/*lr3e-3*/checkpoints/last.ckpt")
    (sweep_dir,) = (tmp_path / "outputs" / "multirun").iterdir()
    resume = shlex.join(
        ["python", TRAIN_PY, *args, f"hydra.sweep.dir={sweep_dir.relative_to(tmp_path)}"]
    )
    assert line.startswith("interrupted: ") and line.endswith(f"; resume the sweep with: {resume}")
    assert [r["status"] for r in sweep_results(sweep_dir)] == ["max_epochs", "interrupted"]
    stdout = run_printed(line, "; resume the sweep with: ", tmp_path)
    assert stdout.count("already max_epochs, not trained again") == 1
    assert list((tmp_path / "outputs" / "multirun").iterdir()) == [sweep_dir]
    results = sweep_results(sweep_dir)  # lr=1e-2, 1e-3, 3e-3 in name order
    assert [r["status"] for r in results] == ["max_epochs"] * 3
    assert [r["resumed_at_update"] for r in results] == [None, None, 100]


@pytest.mark.parametrize("name", ["SIGINT", "SIGTERM"])
def test_a_signal_while_scoring_eval_lengths_is_recorded_and_the_rerun_scores(tmp_path, name):
    """Ctrl-C or SIGTERM after training, while the trained model is scored at eval.lengths:
    result.json says interrupted and the process says so in one line; the same command resumes
    from the last checkpoint, trains no further, and scores."""
    flag, run_dir = tmp_path / "signal-once", tmp_path / "run"
    flag.touch()
    args = [
        *quick("trainer.max_epochs=1"),
        "task.generator=faulty.addition_signalled",
        "task.name=addition_signalled",
        "eval.lengths=[60]",
        "eval.sequences=4",
        f"hydra.run.dir={run_dir}",
    ]
    env = {"PYTHONPATH": str(PLUGINS), "SIGNAL_ONCE": name, "SIGNAL_ONCE_FLAG": str(flag)}
    stopped = train_py(*args, env=env)
    assert stopped.returncode == 1 and "Traceback" not in stopped.stderr, stopped.stderr
    resume = shlex.join(["python", TRAIN_PY, *args])  # its hydra.run.dir last, as given
    assert stopped.stderr.strip().splitlines()[-1] == (
        f"interrupted: {run_dir / 'result.json'}; resume it with: {resume}"
    )
    first = read_json(run_dir / "result.json")
    assert first["status"] == "interrupted" and "eval_lengths" not in first and not flag.exists()
    resumed = train_py(*args, env=env)
    assert resumed.returncode == 0, resumed.stderr
    second = read_json(run_dir / "result.json")
    assert second["status"] == "max_epochs" and second["updates"] == first["updates"] == 20
    assert list(second["eval_lengths"]) == ["60"] and second["eval_sequences"] == 4


def test_a_finished_run_continued_to_a_larger_limit_equals_one_run_to_it(tmp_path, uninterrupted):
    """longterm.store.continue_run: one epoch, then continued to LONGER's two, ends as LONGER
    does."""
    one, two = tmp_path / "one", tmp_path / "two"
    one_epoch = quick("trainer.max_epochs=1", base=LONGER)
    assert train_py(*one_epoch, f"hydra.run.dir={one}").returncode == 0
    continue_run(one, two)
    continued = train_py(*LONGER, f"hydra.run.dir={two}")
    assert continued.returncode == 0, continued.stderr
    assert read_json(two / "result.json")["resumed_at_update"] == 100
    assert read_json(two / "result.json")["earlier_wall_time_s"] is None  # `one` keeps its own
    assert metrics(two) == metrics(uninterrupted)
    assert scalars(two) == scalars(uninterrupted)
    assert sessions(one) == sessions(two) == (1, 1)  # the copied records replaced, not added to
    (start,) = records(two)[metadata.SESSION_START_INFO_TAG]
    start = metadata.parse_session_start_info_plugin_data(start)
    assert start.hparams["max_epochs"].number_value == 2
    state = torch.load(two / "checkpoints" / "last.ckpt", weights_only=False)["callbacks"]
    assert str(one) not in str(state) and str(two / "checkpoints") in str(state)
    with pytest.raises(ContinueError, match="already holds a run"):
        continue_run(one, two)
    for ckpt in (one / "checkpoints").glob("*.ckpt"):  # an archive that kept its records only
        ckpt.unlink()
    with pytest.raises(ContinueError, match="keeps no checkpoint"):
        continue_run(one, tmp_path / "three")
    assert not (tmp_path / "three").exists()
    (one / "result.json").write_text(json.dumps({"status": "interrupted"}))
    with pytest.raises(ContinueError, match="status 'interrupted': rerun its own command"):
        continue_run(one, tmp_path / "three")


def test_rerunning_a_sweep_fills_in_only_what_is_missing(tmp_path):
    """Finished jobs are left as they are, missing ones run; a finished directory refuses a
    command with other settings."""
    args = ["-m", "lr=1e-3,3e-3", *quick("trainer.max_epochs=1"), f"hydra.sweep.dir={tmp_path}"]
    assert train_py(*args).returncode == 0
    kept, lost = sorted(p.parent for p in tmp_path.glob("*/result.json"))
    before = (kept / "result.json").read_bytes()
    events = sorted(kept.glob(EVENTS))
    shutil.rmtree(lost)  # a job that never ran (or whose directory was lost)
    again = train_py(*args)
    assert again.returncode == 0, again.stderr
    assert (kept / "result.json").read_bytes() == before
    assert sorted(kept.glob(EVENTS)) == events and len(events) == 2  # not trained again
    assert read_json(lost / "result.json")["status"] == "max_epochs"
    assert "already max_epochs, not trained again" in (kept / "train.log").read_text()
    other = train_py(*quick("trainer.max_epochs=1", "lr=1e-2"), f"hydra.run.dir='{kept}'")
    assert other.returncode != 0 and "holds a finished run with other settings (lr=" in other.stderr


def test_a_diverging_job_is_recorded_and_the_sweep_goes_on(tmp_path):
    sane, huge = multirun(tmp_path, "lr=1e-3,1e30", *QUICK)
    assert (sane["lr"], sane["status"], sane["updates"]) == (1e-3, "max_epochs", 40)
    assert (huge["lr"], huge["status"]) == (1e30, "diverged")
    assert 1 <= huge["diverged_step"] == huge["updates"] < 20  # stopped at once, in epoch 1
    # its NaN weights are neither validated nor saved: no made-up accuracy, no checkpoint
    assert (huge["final_acc"], huge["best_acc"], huge["val_acc_history"]) == (None, None, [])
    assert not (tmp_path / "addition-attention-T50-lr1e30-s0" / "checkpoints").exists()


def test_two_runs_started_together_get_their_own_directories(tmp_path):
    runs = [start(*quick("trainer.max_epochs=1"), cwd=tmp_path) for _ in range(2)]
    for run in runs:
        assert run.wait(timeout=300) == 0, run.stderr.read()
    dirs = sorted((tmp_path / "outputs" / "runs").iterdir())
    assert len(dirs) == 2 and all((d / "result.json").exists() for d in dirs)
    assert all(d.name.endswith("-addition-attention-T50-lr1e-3-s0") for d in dirs)  # time first


def test_a_directory_in_use_is_refused(tmp_path):
    """A second process on the same run directory stops at once; the first is untouched."""
    # A learning rate too small to solve the task: the first run is still training, not writing
    # its result, when it is killed.
    slow = quick("trainer.max_epochs=100", "lr=1e-9", base=LONGER)
    first = start(*slow, f"hydra.run.dir={tmp_path}")
    try:
        wait_for_file(EVENTS, tmp_path, first)
        second = train_py(*LONGER, f"hydra.run.dir={tmp_path}")
        assert first.poll() is None, first.stderr.read()
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()
    assert second.returncode == 1 and "Traceback" not in second.stderr
    assert second.stderr.strip().splitlines()[-1] == (
        f"error: {tmp_path} is in use by pid {first.pid} on {socket.gethostname()}: wait for it "
        "to end, or give this run another directory (hydra.run.dir=... or hydra.sweep.dir=...)"
    )
    assert not (tmp_path / "result.json").exists()
    assert OmegaConf.load(tmp_path / ".hydra" / "config.yaml").lr == 1e-9  # refused before Hydra


def test_a_reader_never_sees_half_a_result(tmp_path):
    """result.json is written beside the old one and renamed over it: a reader polling the file
    while it is rewritten always parses a whole record, old or new."""
    from longterm.store.records import write_result

    write_result(tmp_path, {"version": -1})
    seen, stop = [], threading.Event()

    def reader() -> None:
        while not stop.is_set():
            seen.append(read_json(tmp_path / "result.json")["version"])  # raises on half a file

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        for version in range(100):
            write_result(tmp_path, {"version": version, "padding": "x" * 500_000})
    finally:
        stop.set()
        thread.join()
    assert len(seen) > 10 and seen == sorted(seen)  # whole records, never going back
    assert read_json(tmp_path / "result.json")["version"] == 99
    assert [p.name for p in tmp_path.iterdir()] == ["result.json"]  # no temp file left behind
    assert (tmp_path / "result.json").stat().st_mode & 0o777 == 0o644  # a collector can read it


def append_many(path: Path, who: int, n: int) -> None:
    from longterm.store.records import append_record

    for i in range(n):
        append_record(path, {"who": who, "i": i})


def test_commands_appending_to_one_sweep_record_at_once_lose_nothing(tmp_path):
    """Two processes (two streams of a race in one sweep directory) append to sweep.json at
    once: every entry of each is kept, in its own order."""
    import multiprocessing

    path = tmp_path / "sweep.json"
    context = multiprocessing.get_context("fork")
    writers = [context.Process(target=append_many, args=(path, who, 200)) for who in (0, 1)]
    for w in writers:
        w.start()
    for w in writers:
        w.join()
    entries = read_json(path)
    for who in (0, 1):
        assert [e["i"] for e in entries if e["who"] == who] == list(range(200))
    assert [p.name for p in tmp_path.iterdir()] == ["sweep.json"]


def test_a_preempted_submitit_job_is_requeued_and_resumes(tmp_path, uninterrupted, monkeypatch):
    """launcher=submitit_local runs a sweep's jobs, one submitit job each. SIGUSR2 is what SLURM
    sends a submitit job before preemption or its time limit; the local executor handles it the
    same way: checkpoint the job, exit, start it again. The other job runs through. Each job waits
    after its first epoch (HOLD) until the signal has arrived, so that it finds the job with its
    second epoch ahead of it however fast the machine trains."""
    monkeypatch.setenv("PYTHONPATH", str(PLUGINS))  # tests/plugins/hold.py, for the jobs
    args = ["-m", "launcher=submitit_local", "task=addition,multiplication", *LONGER, HOLD]
    sweep = start(*args, f"hydra.sweep.dir={tmp_path}")
    try:
        wait_for(
            lambda: (
                (len(runs := run_dirs(tmp_path)) == 2 and all(map(is_held, runs)))
                or sweep.poll() is not None
            ),
            "both jobs held after their first epoch",
        )
        assert sweep.poll() is None, sweep.stderr.read()
        job, other = run_dirs(tmp_path)  # addition's, multiplication's
        pid = int((job / ".lock").read_text().split()[1])  # "pid N on host"
        os.kill(pid, signal.SIGUSR2)
        wait_for(lambda: has_received(job) or sweep.poll() is not None, "the job's SIGUSR2")
        release(job)
        release(other)
        assert sweep.wait(timeout=300) == 0, sweep.stderr.read()
    finally:
        for run_dir in run_dirs(tmp_path):  # none left waiting
            release(run_dir)
        sweep.kill()
    result = read_json(job / "result.json")
    assert result["resumed_at_update"] == 100 and result["status"] == "max_epochs"
    log = (job / "train.log").read_text()
    assert "this job is preempted" in log and "Requeued job" in log and "resuming from" in log
    assert metrics(job) == metrics(uninterrupted)
    results = sweep_results(tmp_path)
    assert [(r["task"], r["status"]) for r in results] == [
        ("addition", "max_epochs"),
        ("multiplication", "max_epochs"),
    ]
    assert results[1]["resumed_at_update"] is None
    assert len(list((tmp_path / ".submitit").iterdir())) == 2  # submitit's job folders


def test_slurm_jobs_are_requeued_by_submitit_alone():
    """launcher=slurm: submitit requeues on time-outs too; Lightning's own requeue is off."""
    from hydra.utils import instantiate

    cfg = composed("launcher=slurm", with_hydra=True)
    assert cfg.hydra.launcher.max_num_timeout == cfg.launcher.max_num_timeout > 0
    assert cfg.hydra.launcher.signal_delay_s > 0
    (environment,) = [instantiate(p) for p in cfg.trainer.plugins]
    assert type(environment).__name__ == "SLURMEnvironment" and not environment.auto_requeue


def test_a_checkpoint_of_lightnings_automatic_update_resumes_at_its_step(tmp_path, uninterrupted):
    """A trainer that clips gradients updates through Lightning's automatic optimization (clipped
    here at a norm never reached: the plain update's numbers), which counts its steps where the
    plain update does not (checkpoints of earlier versions too). One epoch of it, continued to
    two plainly, resumes at update 100 and ends as the plain run does."""
    one, two = tmp_path / "one", tmp_path / "two"
    automatic = quick("trainer.max_epochs=1", "+trainer.gradient_clip_val=1e9", base=LONGER)
    assert train_py(*automatic, f"hydra.run.dir={one}").returncode == 0
    loops = torch.load(one / "checkpoints" / "last.ckpt", weights_only=False)["loops"]["fit_loop"]
    steps = loops["epoch_loop.automatic_optimization.optim_progress"]["optimizer"]["step"]
    assert steps["total"]["completed"] == 100
    assert loops["epoch_loop.manual_optimization.optim_step_progress"]["total"]["completed"] == 0
    continue_run(one, two)
    continued = train_py(*LONGER, f"hydra.run.dir={two}")
    assert continued.returncode == 0, continued.stderr
    assert read_json(two / "result.json")["resumed_at_update"] == 100
    assert read_json(two / "result.json")["earlier_wall_time_s"] is None  # `one` keeps its own
    assert (
        read_json(two / "result.json")["updates"]
        == read_json(uninterrupted / "result.json")["updates"]
    )
    assert metrics(two) == metrics(uninterrupted)
