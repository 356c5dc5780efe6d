"""SLURM for real: a one-node cluster started on this machine by scripts/slurm/start.sh (root and
apt; `make test-slurm`), a sweep sent to it through src/train.py -m launcher=slurm, its jobs
requeued by submitit's signal and preempted by a job of a higher-priority partition, and each
resumed to the result of a run that was never stopped. Each run waits after its first epoch until
the test releases it (tests/plugins/hold.py), so that a signal finds it with most of its epochs
ahead of it however fast the machine trains; the test releases it once the signal has arrived.
The daemons are stopped by their PIDs at the end, however the tests went. The first test needs
no cluster and runs by default: a requeue signal after the run has finished is ignored."""

import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers.paths import CONF, ROOT
from helpers.presets import QUICK, quick
from helpers.results import metrics, read_json
from helpers.runs import run_command, train_py

from longterm.config.command_line import check
from longterm.store.records import FINAL_STATUSES

SCRIPTS = ROOT / "scripts" / "slurm"
PLUGINS = ROOT / "tests" / "plugins"  # hold.py, on the jobs' PYTHONPATH
# Up to eight epochs of 100 updates (solved after five to seven): interrupted after the first, a
# job has most of its run ahead of it.
RUN = quick("data.batches_per_epoch=100", "trainer.max_epochs=8")
# Each run of the sweep waits after its first epoch until `release` lets it go on. Without the
# wait, a run that trains an epoch in a fraction of a second can end before the signal sent after
# its first checkpoint lands, and the test would check a requeue that never happened.
HOLD = "+callbacks.hold._target_=hold.HoldAfterFirstEpoch"
SEEDS = [1, 2]
# Two one-CPU jobs fill the two-CPU node; time_min=10: every SIGUSR2 counts as a time-out.
SLURM = ["launcher=slurm", "launcher.cpus=1", "launcher.mem_gb=2", "launcher.time_min=10"]

# src/train.py under a SIGUSR2 handler that stands for submitit's (requeue, then exit 3), and a
# SIGUSR2 sent to itself at exit: after result.json is final, during interpreter shutdown.
SIGNAL_AT_EXIT = """
import atexit, os, runpy, signal, sys
def requeue(signum, frame):
    print("requeued", flush=True)
    os._exit(3)
signal.signal(signal.SIGUSR2, requeue)
atexit.register(os.kill, os.getpid(), signal.SIGUSR2)
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def test_a_requeue_signal_after_the_run_has_finished_is_ignored(tmp_path):
    """Once result.json is final, SIGUSR2 can neither requeue the finished job nor fail it while
    the process exits; the same holds for a rerun that finds the run finished."""
    wrapper, run_dir = tmp_path / "signal_at_exit.py", tmp_path / "run"
    wrapper.write_text(SIGNAL_AT_EXIT)
    args = [str(ROOT / "src" / "train.py"), *QUICK, "logger=none", f"hydra.run.dir={run_dir}"]
    for runs, attempt in enumerate(("trains", "finds it finished"), start=1):
        out = run_command([sys.executable, str(wrapper), *args], ROOT, dict(os.environ), 300)
        assert out.returncode == 0 and "requeued" not in out.stdout, (attempt, out.stderr)
        assert read_json(run_dir / "result.json")["status"] == "max_epochs"
        log = (run_dir / "train.log").read_text()
        assert log.count("the run is finished: SIGUSR2 is ignored from now on") == runs


@dataclass
class Cluster:
    """A cluster from scripts/slurm/start.sh: its state directory, and the environment
    (SLURM_CONF) that points SLURM's commands at it."""

    state: Path
    env: dict[str, str]

    def run(self, *command: str) -> str:
        """A SLURM command against this cluster, which must succeed; its output."""
        env = {**os.environ, **self.env}
        out = subprocess.run(command, capture_output=True, text=True, env=env, timeout=60)
        assert out.returncode == 0, out.stderr
        return out.stdout


def pids(state: Path) -> dict[str, int]:
    return {p.stem: int(p.read_text()) for p in (state / "pids").glob("*.pid")}


def running(pid: int, state: Path) -> bool:
    """The process is alive and one of this cluster's (it names the state directory)."""
    try:
        seen = Path(f"/proc/{pid}/cmdline").read_bytes() + Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return False
    return f"{state}/".encode() in seen


@pytest.fixture(scope="session")
def cluster(tmp_path_factory) -> Iterator[Cluster]:
    """A one-node cluster from scripts/slurm/start.sh; every daemon it started is stopped, by
    PID, at the end of the session, and checked to be gone."""
    if os.geteuid() != 0:
        pytest.skip("the test cluster runs as root (scripts/slurm/start.sh)")
    state = tmp_path_factory.mktemp("slurm")
    began = time.monotonic()
    try:
        start = subprocess.run(
            [str(SCRIPTS / "start.sh"), str(state)], capture_output=True, text=True, timeout=900
        )
        assert start.returncode == 0, start.stdout + start.stderr
        print(f"\n[slurm] {start.stdout.splitlines()[-2]} ({time.monotonic() - began:.0f} s)")
        yield Cluster(state, {"SLURM_CONF": str(state / "etc" / "slurm.conf")})
    finally:
        if (state / "pids").exists():  # start.sh got as far as starting daemons
            started = pids(state)
            stop = subprocess.run(
                [str(SCRIPTS / "stop.sh"), str(state)], capture_output=True, text=True, timeout=120
            )
            left = {name: pid for name, pid in started.items() if running(pid, state)}
            stopped = " ".join(stop.stdout.split())
            print(f"[slurm] stop.sh: {stopped}; daemons still running: {left or 'none'}")
            assert stop.returncode == 0 and not left, stop.stdout + stop.stderr
            shutil.rmtree(state / "mysql", ignore_errors=True)  # 100 MB of database files


def wait_for(condition, what: str, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def checkpointed(sweep_dir: Path) -> list[int]:
    """The seeds of the sweep's runs that have written their first checkpoint."""
    found = list(sweep_dir.glob("*/checkpoints/last.ckpt"))
    return sorted(seed for seed in SEEDS if any(f"-s{seed}," in p.parts[-3] for p in found))


def release(sweep_dir: Path, seed: int) -> None:
    """Let the run of `seed`, held after its first epoch (HOLD), go on."""
    (run_dir,) = (p for p in sweep_dir.iterdir() if f"-s{seed}," in p.name)
    (run_dir / "release").touch()  # tests/plugins/hold.py: RELEASE


def job_log(sweep_dir: Path, job: str) -> str:
    """What SLURM job `job` has printed so far (submitit's log, the run's lines among them)."""
    path = sweep_dir / ".submitit" / job / f"{job}_0_log.out"
    return path.read_text() if path.exists() else ""


def has_received(sweep_dir: Path, job: str, *signals: str) -> bool:
    """Whether the run of `job` has logged one of `signals` as received: SIGUSR2, deferred
    (training/callbacks.py: DeferSignal), or SIGTERM (Lightning's handler)."""
    said = {"SIGUSR2": "SIGUSR2 received;", "SIGTERM": "Received SIGTERM"}
    out = job_log(sweep_dir, job)
    return any(said[name] in out for name in signals)


@contextmanager
def submitted(cluster: Cluster, tmp_path: Path, *extra: str) -> Iterator[subprocess.Popen]:
    """The sweep of SEEDS (RUN each) sent to the cluster by src/train.py -m launcher=slurm, its
    output in tmp_path/sweep.log; interrupted (SIGINT) if still running at the end."""
    seeds = f"seed={','.join(map(str, SEEDS))}"
    command = [sys.executable, str(ROOT / "src" / "train.py"), "-m", *SLURM, seeds, *RUN, *extra]
    with (tmp_path / "sweep.log").open("w") as log:
        sweep = subprocess.Popen(
            command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
            env={**os.environ, **cluster.env, "PYTHONPATH": str(PLUGINS)},
        )  # fmt: skip
        try:
            yield sweep
        finally:
            if sweep.poll() is None:
                sweep.send_signal(signal.SIGINT)
                sweep.wait(timeout=60)


@pytest.mark.slurm
def test_a_sweep_is_requeued_preempted_and_resumes_to_the_same_result(cluster, tmp_path):
    """Both jobs held after their first epoch (HOLD): the first gets submitit's SIGUSR2 (as
    before a time limit) and requeues itself; then the other is preempted for real by a job of
    partition `urgent` (two CPUs: the node's, the first job's freed by its requeue), and SLURM
    requeues it. Each is released once its signal has arrived. Both resume from their last
    checkpoint, the sweep succeeds, and each result equals that of a run never stopped, bit for
    bit."""
    sweep_dir = tmp_path / "sweep"
    began = time.monotonic()
    with submitted(cluster, tmp_path, f"hydra.sweep.dir={sweep_dir}", HOLD) as sweep:
        wait_for(lambda: checkpointed(sweep_dir) == SEEDS, "both jobs' first checkpoints")
        array = cluster.run("squeue", "-h", "-o", "%i").split()[0].split("_")[0]
        jobs = {seed: f"{array}_{i}" for i, seed in enumerate(SEEDS)}  # job i runs the i-th seed
        print(f"[slurm] jobs {list(jobs.values())}: {' '.join(cluster.run('squeue').split())}")
        first, other = SEEDS
        usr2, preempted = jobs[first], jobs[other]
        cluster.run("scancel", "--signal=USR2", usr2)
        wait_for(lambda: has_received(sweep_dir, usr2, "SIGUSR2"), f"{usr2}'s SIGUSR2")
        release(sweep_dir, first)
        print(f"[slurm] {usr2} held after epoch 1: scancel --signal=USR2, as before a time limit")
        wait_for(lambda: f"Requeued job {usr2}" in job_log(sweep_dir, usr2), f"{usr2}'s requeue")
        urgent = cluster.run(
            "sbatch", "--parsable", "-p", "urgent", "-c", "2", "--mem=1G", "-o", "/dev/null",
            "--wrap", "sleep 1",
        ).strip()  # fmt: skip
        wait_for(
            lambda: has_received(sweep_dir, preempted, "SIGUSR2", "SIGTERM"),
            f"the preemption's signal to {preempted}",
        )
        release(sweep_dir, other)
        print(f"[slurm] {preempted} held after epoch 1: job {urgent} of partition urgent preempts")
        assert sweep.wait(timeout=600) == 0, (tmp_path / "sweep.log").read_text()[-3000:]
    print(f"[slurm] sweep finished in {time.monotonic() - began:.0f} s, exit 0")

    folders = {job: sweep_dir / ".submitit" / job for job in jobs.values()}
    requeued = (folders[usr2] / f"{usr2}_0_log.out").read_text()
    assert "Caught signal SIGUSR2 on" in requeued and "this job is timed-out" in requeued
    assert f"Requeued job {usr2} (19 remaining timeouts)" in requeued
    errors = (folders[preempted] / f"{preempted}_0_log.err").read_text()
    assert "DUE TO PREEMPTION" in errors
    # SIGTERM and SIGUSR2 come together; where submitit's handler ran first, its own requeue was
    # refused, as SLURM had requeued the job, and the job exited to start again.
    refused = f"scontrol requeue {preempted} failed: SLURM requeued the job itself" in errors
    print(f"[slurm] {preempted}: preempted; submitit's own requeue refused: {refused}")
    sacct = ("sacct", "-D", "-X", "-n", "-P", "-o", "JobID,State", "-j", preempted)
    wait_for(lambda: cluster.run(*sacct).endswith("COMPLETED\n"), "accounting", timeout=60)
    history = cluster.run(*sacct)
    print(f"[slurm] sacct history of {preempted}: {' '.join(history.split())}")
    assert "PREEMPTED" in history

    run_dirs = {read_json(p)["seed"]: p.parent for p in sweep_dir.glob("*/result.json")}
    assert sorted(run_dirs) == SEEDS
    for seed, job in jobs.items():
        result = read_json(run_dirs[seed] / "result.json")
        print(
            f"[slurm] {job} (seed={seed}): {result['status']}, resumed from the checkpoint at "
            f"update {result['resumed_at_update']} of {result['updates']}"
        )
        assert "resuming from" in (run_dirs[seed] / "train.log").read_text()
        assert result["status"] in FINAL_STATUSES
        assert 100 <= result["resumed_at_update"] < result["updates"]

    for seed, job in jobs.items():
        reference = tmp_path / f"uninterrupted_s{seed}"
        out = train_py(*RUN, f"seed={seed}", f"hydra.run.dir={reference}")
        assert out.returncode == 0, out.stderr
        assert metrics(run_dirs[seed]) == metrics(reference)
        print(f"[slurm] {job}: metrics equal to those of an uninterrupted run, bit for bit")


@pytest.mark.slurm
def test_a_pack_job_is_requeued_and_its_members_resume_to_the_same_results(cluster, tmp_path):
    """launcher.members=auto: the sweep's two runs (seeds 1 and 2, one cell) train as the members
    of one SLURM job. Once both have written their first checkpoint (and wait, HOLD), submitit's
    SIGUSR2 (as before a time limit) requeues the job; each member resumes from its own
    checkpoint and ends equal, bit for bit, to a run never stopped."""
    sweep_dir = tmp_path / "sweep"
    pack = ("launcher.members=auto", f"hydra.sweep.dir={sweep_dir}", HOLD)
    with submitted(cluster, tmp_path, *pack) as sweep:
        wait_for(lambda: checkpointed(sweep_dir) == SEEDS, "both members' first checkpoints")
        (job,) = cluster.run("squeue", "-h", "-o", "%i").split()  # one job for the two runs
        cluster.run("scancel", "--signal=USR2", job)
        wait_for(lambda: has_received(sweep_dir, job, "SIGUSR2"), f"{job}'s SIGUSR2")
        for seed in SEEDS:
            release(sweep_dir, seed)
        print(f"[slurm] pack job {job} held after epoch 1: scancel --signal=USR2")
        assert sweep.wait(timeout=600) == 0, (tmp_path / "sweep.log").read_text()[-3000:]
    out = (sweep_dir / ".submitit" / job / f"{job}_0_log.out").read_text()
    assert "Caught signal SIGUSR2 on" in out and f"Requeued job {job}" in out
    assert out.count("resuming from ") == len(SEEDS)
    run_dirs = {read_json(p)["seed"]: p.parent for p in sweep_dir.glob("*/result.json")}
    assert sorted(run_dirs) == SEEDS
    for seed in SEEDS:
        result = read_json(run_dirs[seed] / "result.json")
        assert 100 <= result["resumed_at_update"] < result["updates"]
        reference = tmp_path / f"uninterrupted_s{seed}"
        done = train_py(*RUN, f"seed={seed}", f"hydra.run.dir={reference}")
        assert done.returncode == 0, done.stderr
        assert metrics(run_dirs[seed]) == metrics(reference)
        print(
            f"[slurm] member seed={seed}: resumed at update {result['resumed_at_update']}, "
            "metrics equal to those of an uninterrupted run, bit for bit"
        )


@pytest.mark.slurm
def test_a_time_limit_too_short_for_the_signal_is_refused_before_any_job(cluster, tmp_path):
    before = cluster.run("sacct", "-X", "-n", "-P", "-o", "JobID", "-S", "now-1hours")
    out = train_py(
        "-m", *SLURM, "launcher.time_min=2", *QUICK, f"hydra.sweep.dir={tmp_path / 'sweep'}",
        env=cluster.env,
    )  # fmt: skip
    assert out.returncode != 0 and out.stderr.startswith("error: launcher: time_min=2 is too")
    assert len(out.stderr.strip().splitlines()) == 1
    assert cluster.run("sacct", "-X", "-n", "-P", "-o", "JobID", "-S", "now-1hours") == before
    assert not (tmp_path / "sweep").exists()


@pytest.mark.slurm
def test_a_cluster_without_accounting_is_pointed_out(cluster, tmp_path, monkeypatch, capsys):
    """Submitit learns that a job has ended from `sacct`: without accounting, a job that dies
    without its result leaves the sweep waiting, so the command says so on one line."""
    monkeypatch.setenv("SLURM_CONF", cluster.env["SLURM_CONF"])
    check(["-m", *SLURM, "seed=1,2"], CONF)
    assert capsys.readouterr().err == ""
    conf = (cluster.state / "etc" / "slurm.conf").read_text()
    without = tmp_path / "slurm.conf"
    without.write_text(conf.replace("accounting_storage/slurmdbd", "accounting_storage/none", 1))
    monkeypatch.setenv("SLURM_CONF", str(without))
    check(["-m", *SLURM, "seed=1,2"], CONF)
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("warning: launcher=slurm: sacct cannot report job states here")
    assert "Slurm accounting storage is disabled" in line


def with_values(argv: list[str], option: str, *values: str) -> list[str]:
    """argv with `option`'s values replaced by `values` (up to the next option or `--`)."""
    at = argv.index(option) + 1
    end = next((i for i in range(at, len(argv)) if argv[i].startswith("--")), len(argv))
    return [*argv[:at], *values, *argv[end:]]


@pytest.mark.slurm
def test_an_experiments_race_runs_on_the_cluster(cluster, tmp_path):
    """The every_memory planner's race command with `--launcher slurm` (its commands for a
    cluster, docs/slurm.md), cut to a few updates: the leader's stage and then the rivals' go to
    SLURM as jobs, every run ends final, the rivals run no further than the race allows, and the
    page reads the race."""
    from longterm.experiments.every_memory.page import main as every_memory_page
    from longterm.experiments.every_memory.runs import LRS, race_command

    sweep_dir = tmp_path / "every_memory" / "transformer"
    argv = shlex.split(race_command("transformer", 50, (1,), launcher="slurm"))[1:]
    argv = with_values(argv, "--sweep-dir", str(sweep_dir))
    argv = with_values(argv, "--max-epochs", "2")
    argv += [*SLURM[1:], *quick("data.batches_per_epoch=20", drop=("trainer.max_epochs",))]
    began = time.monotonic()
    race = subprocess.run(
        [sys.executable, *argv], cwd=ROOT, capture_output=True, text=True, timeout=900,
        env={**os.environ, **cluster.env},
    )  # fmt: skip
    assert race.returncode == 0, race.stdout[-3000:] + race.stderr[-3000:]
    jobs = sorted(p.name for p in (sweep_dir / ".submitit").iterdir() if p.is_dir())
    print(f"[slurm] race finished in {time.monotonic() - began:.0f} s: SLURM jobs {jobs}")

    results = [read_json(p) for p in sweep_dir.glob("*/result.json")]
    leader, *rivals = LRS["transformer"]
    assert sorted((r["task"], r["lr"]) for r in results) == sorted(
        (task, lr) for task in ("addition", "multiplication") for lr in (leader, *rivals)
    )
    assert {r["status"] for r in results} <= set(FINAL_STATUSES)
    assert len(jobs) >= 2  # the leader's stage, then the rivals'
    for task in ("addition", "multiplication"):
        (led,) = (r for r in results if r["task"] == task and r["lr"] == leader)
        allowed = led["epochs"] if led["status"] == "solved" else 2
        assert all(r["epochs"] <= allowed for r in results if r["task"] == task)
    out = tmp_path / "page.md"  # its figure in page/, apart from the sweeps
    every_memory_page([str(tmp_path / "every_memory"), "--out", str(out)])
    row = next(x for x in out.read_text().splitlines() if x.startswith("| transformer |"))
    assert "not run" not in row.split("|")[5]  # the T0 = 50 cell
