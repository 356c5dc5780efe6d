"""The paper's learning-rate rule at a fraction of the grid's cost (Raffel & Ellis 2015, §2.2:
"we report the best result achieved using any learning rate").

For every task x pool x T0 x seed the first learning rate (the leader) runs to the epoch limit or
until solved. Every other learning rate then runs for at most as many epochs as the leader needed:
a run that needs more cannot be the best, and a run that needs as many ties it. The best learning
rate and its epochs are therefore the full grid's; the rivals' own epochs beyond that point, which
the rule never looks at, are not computed. When the leader does not solve, the rivals run to the
limit too, so "accuracy after the limit" is over the whole grid as well.

    python -m longterm.experiments.lr_race --sweep-dir outputs/table1 --T0 50 100 500 1000 \
        --seeds 1 2 3

All jobs go through `src/train.py` into one sweep directory, named from their settings as in any
multirun, so rerunning the same command fills in only what is missing (and resumes what was cut
off). The jobs run where the race runs: a relative --sweep-dir, `hydra.searchpath=[file://...]`
(a model of your own, docs/plugins.md) and every other path are read from there. Each stage's
jobs of one cell train as one pack (`--launcher packed`, the default: a rival's epoch cap acts
inside it), packs side by side, at most one per CPU; `--launcher parallel` runs the jobs side by
side one by one, `--launcher local` one after another, `--launcher slurm` sends them to a
cluster.
Every invocation is appended to `<sweep dir>/sweep.json` with its command line and times;
`python -m longterm.analysis.collect` reads them.
"""

import argparse
import json
import os
import shlex
import subprocess
import sys
from collections import defaultdict
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from hydra.errors import HydraException
from omegaconf import DictConfig
from omegaconf.errors import OmegaConfBaseException

from longterm.analysis.arguments import at_least
from longterm.analysis.published import LEARNING_RATES
from longterm.config.command_line import composing, explain, job_config, job_overrides
from longterm.config.command_line import parse as parse_command_line
from longterm.config.validate import ConfigError, validate
from longterm.store.records import RESULT_FILE, SWEEP_RECORD, append_record, now

TRAIN_PY = Path(__file__).resolve().parents[2] / "train.py"
CONFIG_DIR = TRAIN_PY.parents[1] / "conf"
# The leader first: 3e-3 won or tied the most cells at T0 <= 1000; then the rest of the grid.
LEADER = 3e-3
Cell = tuple[str, str, int, int]  # task, pool, T0, seed
# Runs one command (`python src/train.py ...`, the interpreter first) in a directory and returns
# its exit status; the race's own is a process of its own (`run_process`).
Runner = Callable[[list[str], Path], int]


def run_process(command: list[str], cwd: Path) -> int:
    """`command` as a process of its own, its output this process's."""
    return subprocess.run(command, cwd=cwd).returncode


def csv(values: Iterable[Any]) -> str:
    return ",".join(str(v) for v in values)


def leader_caps(results: Iterable[dict[str, Any]], leader: float, limit: int) -> dict[Cell, int]:
    """The epochs each cell's rivals may run: what the leader needed when it solved, else the
    limit (unsolved, diverged or missing leaders leave the rivals the whole limit)."""
    caps: dict[Cell, int] = {}
    for r in results:
        if r["lr"] == leader:
            cell = (r["task"], r["pool"], r["T0"], r["seed"])
            if cell in caps:
                raise ValueError(
                    f"two runs of {cell} at lr={leader} in one sweep directory: give each set of "
                    "extra overrides its own --sweep-dir"
                )
            solved = r["status"] == "solved" and r["epoch_solved"] is not None
            caps[cell] = r["epoch_solved"] if solved else limit
    return caps


def leader_conflict(
    results: Iterable[dict[str, Any]], args: argparse.Namespace, limit: int
) -> str | None:
    """Why this race would make a second leader run in a cell, or None. A cell run before under
    another leader holds this race's leader rate as a rival capped below `limit`; leading with it
    now would train that rate again beside it (which leader_caps then refuses). One line: the
    cell, the capped run, and the leader that cell had."""
    leader = args.lrs[0]
    cells = {
        (r["task"], r["pool"], r["T0"], r["seed"]): r
        for r in results
        if r["lr"] == leader and r["max_epochs"] < limit
    }
    for (task, pool, T0, seed), capped in sorted(cells.items()):
        if task in args.tasks and pool in args.pools and T0 in args.T0 and seed in args.seeds:
            before = sorted(
                r["lr"]
                for r in results
                if (r["task"], r["pool"], r["T0"], r["seed"]) == (task, pool, T0, seed)
                and r["max_epochs"] == limit
            )
            led = f" (led by lr={csv(before)})" if before else ""
            return (
                f"--lrs {leader:g} ...: seed {seed} of {task}/{pool}/T0={T0} already ran "
                f"lr={leader:g} as a rival capped at {capped['max_epochs']} epochs by an "
                f"earlier race{led}; lead that seed with the same rate as before (a race per "
                "seed set), or give this race its own --sweep-dir"
            )
    return None


def first_job(launcher: str, overrides: list[str]) -> DictConfig:
    """The config of a race's first job, as src/train.py composes and checks it (ConfigError, one
    line); its epoch limit is an experiment's own (conf/experiment/recall.yaml: 8) or
    conf/trainer's."""
    line = parse_command_line(["-m", f"launcher={launcher}", *overrides])
    if line is None:
        raise ConfigError(f"{shlex.join(overrides)}: give src/train.py's overrides after --")
    with composing(CONFIG_DIR, line.config_dir):
        first = job_overrides(line.overrides, None)[0]
        try:
            cfg = job_config(line.config_name or "train", first)
        except (HydraException, OmegaConfBaseException) as e:
            raise ConfigError(explain(e, first)) from None
    validate(cfg)
    return cfg


def read_results(sweep_dir: Path) -> list[dict[str, Any]]:
    """Every readable result.json under `sweep_dir` (the collector is the one that warns)."""
    results = []
    for path in sorted(sweep_dir.glob(f"*/{RESULT_FILE}")):
        try:
            results.append(json.loads(path.read_text()))
        except (OSError, json.JSONDecodeError):
            continue
    return results


class RaceError(Exception):
    """A race that cannot run as given (one line, before any job)."""


class Race:
    """One race over a grid; `run` executes it, `commands` is what it launched."""

    def __init__(self, args: argparse.Namespace, runner: Runner = run_process):
        self.args = args
        self.runner = runner
        self.sweep_dir = Path(args.sweep_dir)
        self.commands: list[list[str]] = []
        self.failures = 0

    def train(self, overrides: list[str]) -> None:
        a = self.args
        script = os.path.relpath(TRAIN_PY)  # src/train.py in the repository
        command = [script, "-m", f"launcher={a.launcher}", *overrides, *a.overrides]
        command += ["trainer.enable_progress_bar=false", f"hydra.sweep.dir={self.sweep_dir}"]
        self.commands.append(command)
        print("+ python", shlex.join(command), flush=True)
        self.failures += self.runner([sys.executable, *command], Path.cwd()) != 0

    def run(self) -> int:
        a = self.args
        conflict = leader_conflict(read_results(self.sweep_dir), a, a.max_epochs or a.default_limit)
        if conflict:
            raise RaceError(conflict)
        leader, rivals = a.lrs[0], a.lrs[1:]
        limit = ["trainer.max_epochs=" + str(a.max_epochs)] if a.max_epochs else []
        grid = [f"task={csv(a.tasks)}", f"pool={csv(a.pools)}", f"T0={csv(a.T0)}"]
        self.train([*grid, f"lr={leader}", f"seed={csv(a.seeds)}", *limit])
        if not rivals:
            return self.failures
        caps = leader_caps(read_results(self.sweep_dir), leader, a.max_epochs or a.default_limit)
        by_cap: dict[tuple[str, str, int, int], list[int]] = defaultdict(list)
        for (task, pool, T0, seed), cap in sorted(caps.items()):
            if task in a.tasks and pool in a.pools and T0 in a.T0 and seed in a.seeds:
                by_cap[(task, pool, T0, cap)].append(seed)
        for (task, pool, T0, cap), seeds in by_cap.items():
            full = cap == (a.max_epochs or a.default_limit)
            epochs = limit if full else [f"trainer.max_epochs={cap}", "limit=capped"]
            cell = [f"task={task}", f"pool={pool}", f"T0={T0}", f"lr={csv(rivals)}"]
            self.train([*cell, f"seed={csv(seeds)}", *epochs])
        return self.failures


def record(sweep_dir: Path, entry: dict[str, Any]) -> None:
    """Append one invocation to `<sweep dir>/sweep.json` (a list, oldest first)."""
    append_record(sweep_dir / SWEEP_RECORD, entry)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--sweep-dir", required=True, help="one directory for every job of the race")
    p.add_argument("--T0", type=int, nargs="+", required=True)
    p.add_argument("--tasks", nargs="+", default=["addition", "multiplication"])
    p.add_argument("--pools", nargs="+", default=["attention", "mean"])
    p.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    default_lrs = [LEADER, *(lr for lr in LEARNING_RATES if lr != LEADER)]
    p.add_argument(
        "--lrs",
        type=float,
        nargs="+",
        default=default_lrs,
        help="the first is the leader (default: the paper's grid, "
        + " ".join(map(str, default_lrs))
        + ")",
    )
    p.add_argument(
        "--max-epochs",
        type=at_least(1),
        help="the epoch limit (default: the composed config's: conf/trainer's 100, or an "
        "experiment's own)",
    )
    p.add_argument(
        "--launcher",
        default="packed",
        help="how each stage's jobs run: packed (a pack per cell, the default), parallel, local, "
        "slurm, ...",
    )
    p.add_argument("overrides", nargs="*", help="more src/train.py overrides, after --")
    return p


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = parser()
    args = p.parse_args(argv)
    try:
        args.default_limit = checked_limit(args)
    except RaceError as e:
        p.error(str(e))
    return args


def checked_first_job(args: argparse.Namespace) -> DictConfig:
    """first_job of the race (its leader's first cell and seed), or a RaceError whose message is
    one line saying what is wrong with the race's overrides: ones the race sets itself, or ones
    with which its jobs do not compose or check."""
    overrides = args.overrides
    if any(o.startswith("trainer.max_epochs=") for o in overrides):
        raise RaceError(
            "give the epoch limit as --max-epochs: the race sets trainer.max_epochs itself"
        )
    if any(o.startswith("launcher=") for o in overrides):
        raise RaceError("give the launcher as --launcher: the race sets launcher= itself")
    first = [f"task={args.tasks[0]}", f"pool={args.pools[0]}", f"T0={args.T0[0]}"]
    first += [f"lr={args.lrs[0]}", f"seed={args.seeds[0]}"]
    try:
        job = first_job(args.launcher, [*first, *overrides])
    except ConfigError as e:
        raise RaceError(str(e)) from None
    if job.optim.schedule != "none":  # a rival's cap would change its learning rates
        raise RaceError(
            f"optim.schedule={job.optim.schedule} follows each run's trainer.max_epochs, which "
            "the race caps: race with optim.schedule=none, or sweep the grid with -m lr=..."
        )
    return job


def checked_limit(args: argparse.Namespace) -> int:
    """The epoch limit the race's jobs are composed with (the limit where --max-epochs gives
    none)."""
    return int(checked_first_job(args).trainer.max_epochs)


def check_command(command: str) -> None:
    """Exit with one line if the overrides of a race's command line (`python -m
    longterm.experiments.lr_race ... -- overrides`, as the planners print them) do not check:
    the planners check their first race before running or printing any."""
    try:
        checked_limit(parser().parse_args(shlex.split(command)[3:]))
    except RaceError as e:
        sys.exit(f"error: {e}")


def main(argv: list[str] | None = None, runner: Runner = run_process) -> int:
    args = parse(argv)
    sweep_dir = Path(args.sweep_dir)
    sweep_dir.mkdir(parents=True, exist_ok=True)
    race = Race(args, runner)
    started = now()
    try:
        failures = race.run()
    except (RaceError, ValueError) as e:  # leader_caps's ValueError too: one line, no traceback
        print(f"error: {e}", file=sys.stderr)
        return 2
    command = [
        "python",
        "-m",
        "longterm.experiments.lr_race",
        *(sys.argv[1:] if argv is None else argv),
    ]
    record(
        sweep_dir,
        {
            "command": shlex.join(command),
            "started_at": started,
            "finished_at": now(),
            "launched": [shlex.join(["python", *c]) for c in race.commands],
            "failed_commands": failures,
        },
    )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
