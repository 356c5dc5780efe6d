"""Running an experiment's commands (`python -m longterm.experiments.lr_race ...` or `python
src/train.py ...` lines, as the planners print them): on a CPU as streams side by side, each
stream's commands one after another on one thread; for a cluster, many at once, since each only
waits for its SLURM jobs.

The planners (claim_runs, recall_runs, every_memory_runs) split their commands into streams of
about equal cost for a 2-core machine. Under `--launcher slurm` the same commands run with at
most `--races` of them at once (run_at_once), in the order the planner lists them, so that the
cluster's queue holds the jobs of that many races.
"""

import os
import shlex
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

from longterm.experiments.lr_race import TRAIN_PY

ROOT = TRAIN_PY.parents[1]  # where `python src/train.py` runs
# For a cluster: each race holds two waiting Pythons here (the race's and its sweep's, torch
# imported), so the default stays small.
RACES_AT_ONCE = 8
OVERRIDES_HELP = "after --: every job's overrides, after the planner's (-- launcher.partition=gpu)"


def local(command: str) -> str:
    """`command` run by this interpreter, not whichever `python` is on PATH."""
    return command.replace("python", shlex.quote(sys.executable), 1)


def extended(streams: list[list[str]], overrides: list[str]) -> list[list[str]]:
    """Each race command with `overrides` for every job after the planner's own (a race's
    overrides end its command line), e.g. a cluster's launcher.partition=gpu."""
    tail = f" {shlex.join(overrides)}" if overrides else ""
    return [[f"{command}{tail}" for command in stream] for stream in streams]


def run_streams(streams: list[list[str]]) -> None:
    """Every stream's commands in order, the streams side by side, one thread each; exits with
    a line naming the exit codes if any stream failed (a stream stops at its first failure)."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    scripts = [" && ".join(local(c) for c in stream) for stream in streams]
    procs = [subprocess.Popen(["bash", "-c", s], cwd=ROOT, env=env) for s in scripts]
    codes = [p.wait() for p in procs]
    if any(codes):
        sys.exit(f"error: a stream failed (exit codes {codes})")


def run_at_once(commands: list[str], at_once: int = RACES_AT_ONCE) -> None:
    """Every command, at most `at_once` at a time, started in order; exits with a line naming
    the commands that failed, after all have run (one race's failure does not stop the others)."""

    def run(command: str) -> int:
        return subprocess.run(["bash", "-c", local(command)], cwd=ROOT).returncode

    with ThreadPoolExecutor(max_workers=at_once) as pool:
        codes = list(pool.map(run, commands))
    failed = [c for c, code in zip(commands, codes, strict=True) if code]
    if failed:
        sys.exit(f"error: {len(failed)} of {len(commands)} commands failed: {failed}")


def show(streams: list[list[str]], launcher: str = "local", races: int | None = None) -> None:
    """Print the commands as `run` would run them: each stream under its process's header, or
    under `--launcher slurm` one list."""
    if launcher == "slurm":
        print(f"# {races or RACES_AT_ONCE} at a time under --run, each waiting for its SLURM jobs")
        print("\n".join(c for stream in streams for c in stream))
        return
    for i, stream in enumerate(streams, 1):
        print(f"# process {i} (OMP_NUM_THREADS=1)")
        print("\n".join(stream))


def run(streams: list[list[str]], launcher: str, races: int | None) -> None:
    """The planners' `--run`: the streams side by side on a CPU; with `--launcher slurm`, every
    command of every stream in the planner's order, `races` at once (default RACES_AT_ONCE)."""
    if launcher == "slurm":
        run_at_once([c for stream in streams for c in stream], races or RACES_AT_ONCE)
    else:
        run_streams(streams)
