"""Run an experiment's commands from one queue, a few at a time.

The commands are `python -m longterm.experiments.lr_race ...` or `python src/train.py ...` lines,
as the planners list them. On a CPU one process of one thread per core runs them, each taking the
next command when its own ends, so that every core stays busy until the queue is empty whatever
each command costs; for a cluster `--races` of them (default RACES_AT_ONCE) run at once, since
each only waits for its SLURM jobs.

The planners (claims.runs, recall.runs, every_memory.runs) list their commands in the order they
should start, and their `--run` runs them here. Commands of several planners share the cores as one
queue when their printed lists are run together:

    (python -m longterm.experiments.every_memory.runs --seeds 2 3
     python -m longterm.experiments.recall.runs --settings 128:8) > queue.txt
    python -m longterm.experiments.command_queue queue.txt      # [--races N] [--launcher slurm]

(the lines starting with `#` are the planners' notes, and skipped). The commands run where this
runs, as the planners that print them assume: from the repository, or from a directory of your
own with a model of your own (docs/plugins.md). Two commands may share a sweep directory (one
memory's races at two lengths): their jobs are apart, and sweep.json takes one record at a time
(store/records.py: append_record).
"""

import argparse
import os
import shlex
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from longterm.analysis.arguments import at_least, summary

# For a cluster: each race holds two waiting Pythons here (the race's and its sweep's, torch
# imported), so the default stays small.
RACES_AT_ONCE = 8
OVERRIDES_HELP = "after --: every job's overrides, after the planner's (-- launcher.partition=gpu)"


def cores() -> int:
    """The CPUs this process may run on."""
    return len(os.sched_getaffinity(0))


RACES_HELP = f"commands at once: on a CPU one per core ({cores()} here), with --launcher slurm "
RACES_HELP += f"{RACES_AT_ONCE}"


def local(command: str) -> str:
    """`command` run by this interpreter, not whichever `python` is on PATH."""
    return command.replace("python", shlex.quote(sys.executable), 1)


def extended(commands: list[str], overrides: list[str]) -> list[str]:
    """Each race command with `overrides` for every job after the planner's own (a race's
    overrides end its command line), e.g. a cluster's launcher.partition=gpu."""
    tail = f" {shlex.join(overrides)}" if overrides else ""
    return [f"{command}{tail}" for command in commands]


def at_once(launcher: str, races: int | None) -> int:
    return races or (RACES_AT_ONCE if launcher == "slurm" else cores())


def run_at_once(commands: list[str], at_once: int, one_thread: bool = False) -> None:
    """Every command, at most `at_once` at a time, started in order (`one_thread`: each with
    OMP_NUM_THREADS=1); exits with a line naming the commands that failed, after all have run
    (one command's failure does not stop the others)."""
    env = {**os.environ, **({"OMP_NUM_THREADS": "1"} if one_thread else {})}

    def run(command: str) -> int:
        return subprocess.run(["bash", "-c", local(command)], env=env).returncode

    with ThreadPoolExecutor(max_workers=at_once) as pool:
        codes = list(pool.map(run, commands))
    failed = [c for c, code in zip(commands, codes, strict=True) if code]
    if failed:
        sys.exit(f"error: {len(failed)} of {len(commands)} commands failed: {failed}")


def show(commands: list[str], launcher: str = "local", races: int | None = None) -> None:
    """Print the commands as `run` would run them, under a line saying how."""
    n = at_once(launcher, races)
    if launcher == "slurm":
        print(f"# {n} at a time under --run, each waiting for its SLURM jobs")
    else:
        print(f"# {n} at a time under --run, one thread each (OMP_NUM_THREADS=1), in this order")
    print("\n".join(commands))


def run(commands: list[str], launcher: str, races: int | None) -> None:
    """The planners' `--run`: the commands in order, `races` at a time (default: on a CPU one
    per core, each of one thread; with `--launcher slurm` RACES_AT_ONCE)."""
    run_at_once(commands, at_once(launcher, races), one_thread=launcher != "slurm")


def read(text: str) -> list[str]:
    """The commands of a planner's printed list: its lines, without blank ones and `#` notes."""
    lines = (line.strip() for line in text.splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=summary(__doc__))
    p.add_argument("file", nargs="?", help="the commands, one a line (default: standard input)")
    p.add_argument("--races", type=at_least(1), help=RACES_HELP)
    p.add_argument("--launcher", default="local", choices=("local", "slurm"), help="the races'")
    args = p.parse_args(argv)
    try:
        text = Path(args.file).read_text() if args.file else sys.stdin.read()
    except OSError as e:
        sys.exit(f"error: {args.file}: {e.strerror}")
    commands = read(text)
    if not commands:
        sys.exit(f"error: no command in {args.file or 'standard input'}")
    run(commands, args.launcher, args.races)


if __name__ == "__main__":
    main()
