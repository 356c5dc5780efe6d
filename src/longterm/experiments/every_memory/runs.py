"""The paper's problems across every memory (Raffel & Ellis 2015, §2.2, Table 1): the addition
and multiplication problems at each T0 for every model of the framework, three seeds, epochs to
100% under the paper's learning-rate rule (conf/experiment/every_memory.yaml has the setting and
the budget).

    python -m longterm.experiments.every_memory.runs                # the races' commands
    python -m longterm.experiments.every_memory.runs --run          # run them, one per core
    python -m longterm.experiments.every_memory.runs --models lstm gla --T0 50 --seeds 1
    python -m longterm.experiments.every_memory.runs --time 5 --T0 50 100   # seconds per update
    python -m longterm.experiments.every_memory.runs --run --launcher slurm --T0 500 1000 \
        --races 16 -- launcher.partition=gpu launcher.gpus=1     # 16 races at once on a cluster
    python -m longterm.experiments.every_memory.page runs/every_memory runs/table1 \\
        runs/table1_long --out docs/every_memory.md

Each memory has a race of its own (longterm.experiments.lr_race: the leader 3e-3, then the rest of
the paper's grid capped at the leader's epochs) in `outputs/every_memory/<model>/`, one command
per T0 covering both tasks and the seeds, listed by T0, then in table order; a rerun fills in
only what is missing (and resumes what was cut off). `--run` takes the races from that list
`--races` at a time (experiments/command_queue.py): on a CPU one per core, each race one thread;
with `--launcher slurm` 8, each waiting for its jobs on the cluster. Without --T0, a memory runs
at the lengths its cost allows on a 2-core CPU (every_memory/page.py, CPU_T0S); the longer ones
are for a GPU (`trainer.accelerator=auto` takes it; `--races N` sets how many races share it,
one per CPU core unless told) or SLURM.
The paper's network with attention and mean pooling is not run again: its rows are the archived
Table 1 runs (runs/table1, runs/table1_long), which the page reads.

A model of your own (docs/plugins.md) races as a built-in does, by its conf file's name, its
conf directory given to every job after `--`; run from your own directory, its sweeps go to
`outputs/every_memory/<name>/` there, at T0 = 50 unless --T0 says otherwise (OWN_T0S):

    python -m longterm.experiments.every_memory.runs --run --models gru \
        -- "hydra.searchpath=[file://$PWD/mylab/conf]"
"""

import argparse
import shlex
import sys

import torch
from omegaconf import OmegaConf

from longterm.analysis.arguments import at_least, positive, summary
from longterm.analysis.published import LEARNING_RATES
from longterm.experiments.command_queue import OVERRIDES_HELP, RACES_HELP, extended, run, show
from longterm.experiments.every_memory.page import ARCHIVED, CPU_T0S, MEMORIES, SWEEP_ROOT
from longterm.experiments.lr_race import CONFIG_DIR, LEADER, check_command
from longterm.experiments.update_time import seconds_per_update

EXPERIMENT = "every_memory"
SETTING = OmegaConf.load(CONFIG_DIR / "experiment" / f"{EXPERIMENT}.yaml")
SEEDS = (1, 2, 3)
TASKS = ("addition", "multiplication")
GRID = (LEADER, *(lr for lr in LEARNING_RATES if lr != LEADER))  # the leader first, as lr_race
# The learning rates of each memory's races: the paper's grid for the three cheapest (under 0.13 s
# an update at T0 = 100) and for the archived Table 1 runs, the leader and 1e-3 for the rest
# (conf/experiment/every_memory.yaml).
FULL_GRID = (*ARCHIVED, "rnn", "lstm", "linear_memory")
LRS = {m: GRID if m in FULL_GRID else (LEADER, 1e-3) for m in MEMORIES}
OWN_T0S = (50,)  # a model of your own, whose cost is not known here (--time measures it)


def lrs(memory: str) -> tuple[float, ...]:
    """The learning rates of `memory`'s races: LRS's, or for a model of your own 3e-3 then 1e-3."""
    return LRS.get(memory, (LEADER, 1e-3))


def lengths(memory: str) -> tuple[int, ...]:
    """The T0 of `memory` on a 2-core CPU: CPU_T0S's, or OWN_T0S for a model of your own."""
    return CPU_T0S.get(memory, OWN_T0S)


# One job at a time in each race's process, one thread (as the archived long Table 1 races ran).
ONE_THREAD = ("launcher.jobs=1", "launcher.threads=1")


def model_overrides(memory: str) -> list[str]:
    """The overrides that choose `memory`: the paper's network with its pooling, or a model read
    at its last step (its conf file's default readout)."""
    if memory in ARCHIVED:
        return ["model=feedforward", f"pool={memory}"]
    return [f"model={memory}"]


def race_command(
    memory: str,
    T0: int,
    seeds: tuple[int, ...],
    launcher: str = "parallel",
    max_epochs: int = SETTING.trainer.max_epochs,
) -> str:
    """The lr_race command line of one memory at one T0: both tasks, these seeds, the epoch limit
    `max_epochs` (by default conf/experiment/every_memory.yaml's)."""
    extra = ONE_THREAD if launcher == "parallel" else ()
    command = [
        *("python", "-m", "longterm.experiments.lr_race"),
        *("--sweep-dir", str(SWEEP_ROOT / memory), "--T0", str(T0)),
        *("--seeds", *map(str, seeds), "--tasks", *TASKS, "--pools", "last"),
        *("--lrs", *(f"{lr:g}" for lr in lrs(memory))),
        *("--max-epochs", str(max_epochs), "--launcher", launcher),
        *("--", f"experiment={EXPERIMENT}", *model_overrides(memory), *extra),
    ]
    return shlex.join(command)


def plan(
    memories: list[str],
    T0s: list[int] | None,
    seeds: tuple[int, ...],
    launcher: str = "parallel",
    max_epochs: int = SETTING.trainer.max_epochs,
) -> list[str]:
    """The race commands for `memories` (the archived ones left out), by T0 then in table order,
    models of your own last, so that the short lengths finish first; without `T0s`, each memory's
    lengths on a 2-core CPU (`lengths`)."""
    chosen = [m for m in MEMORIES if m in memories and m not in ARCHIVED]
    chosen += [m for m in dict.fromkeys(memories) if m not in MEMORIES]
    every = sorted({T for m in chosen for T in (T0s or lengths(m))})
    return [
        race_command(m, T, seeds, launcher, max_epochs)
        for T in every
        for m in chosen
        if T in (T0s or lengths(m))
    ]


def first_of_each(commands: list[str]) -> list[str]:
    """The first race of each sweep directory (each memory's first), in order."""
    firsts: dict[str, str] = {}
    for command in commands:
        words = shlex.split(command)
        firsts.setdefault(words[words.index("--sweep-dir") + 1], command)
    return list(firsts.values())


def time_memories(
    memories: list[str], T0s: list[int], budget_s: float, extra: tuple[str, ...] = ()
) -> None:
    """Seconds per update of each memory at each T0 (update_time.seconds_per_update, one untimed
    update first), with the hours one run takes at the epoch limit and one race in the worst
    case: both tasks, the seeds and every learning rate to the limit. `extra`: every job's
    overrides (a model of your own's hydra.searchpath)."""
    epochs, batches = SETTING.trainer.max_epochs, SETTING.data.batches_per_epoch
    print(f"seconds per update, {budget_s:g} s each, {torch.get_num_threads()} thread(s);")
    print(f"a run at the limit: {epochs} epochs x {batches} updates; a race: both tasks, the")
    print(f"{len(SEEDS)} seeds and the memory's learning rates, each run to the limit")
    print("| memory | T0 | s / update | h / run | runs / race | h / race (worst) |")
    print("|---|---:|---:|---:|---:|---:|")
    for T0 in T0s:
        for memory in memories:
            overrides = [*model_overrides(memory), f"T0={T0}", *extra]
            s = seconds_per_update(EXPERIMENT, overrides, 10**9, 1, budget_s)
            hours = s * epochs * batches / 3600
            runs = len(TASKS) * len(SEEDS) * len(lrs(memory))
            print(
                f"| {memory} | {T0} | {s:.3f} | {hours:.2f} | {runs} | {runs * hours:.1f} |",
                flush=True,
            )


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=summary(__doc__))
    p.add_argument("--run", action="store_true", help="run the races, --races at a time")
    p.add_argument(
        "--time", type=positive, metavar="SECONDS", help="time each memory at each T0 (one thread)"
    )
    p.add_argument(
        "--models",
        nargs="+",
        default=list(MEMORIES),
        metavar="MODEL",
        help=f"{', '.join(MEMORIES)}, or a model of your own by its conf name (default: all)",
    )
    p.add_argument("--T0", type=int, nargs="+", help="default: each memory's 2-core CPU lengths")
    p.add_argument("--seeds", type=int, nargs="+", default=list(SEEDS))
    p.add_argument(
        "--max-epochs",
        type=at_least(1),
        default=SETTING.trainer.max_epochs,
        help="each race's epoch limit (default: conf/experiment/every_memory.yaml's, "
        f"{SETTING.trainer.max_epochs})",
    )
    p.add_argument(
        "--launcher", default="parallel", help="each race's: parallel (one job, one thread), slurm"
    )
    p.add_argument("--races", type=at_least(1), help=RACES_HELP)
    p.add_argument("overrides", nargs="*", metavar="KEY=VALUE", help=OVERRIDES_HELP)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    if args.time is not None:
        torch.set_num_threads(1)
        cpu = sorted({T for m in args.models if m not in ARCHIVED for T in lengths(m)})
        time_memories(args.models, args.T0 or cpu, args.time, tuple(args.overrides))
        return
    commands = extended(
        plan(args.models, args.T0, tuple(args.seeds), args.launcher, args.max_epochs),
        args.overrides,
    )
    for command in first_of_each(commands):  # a model of your own's name is checked here
        check_command(command)
    if args.run:
        run(commands, args.launcher, args.races)
        return
    for memory in sorted(set(args.models) & set(ARCHIVED)):
        print(f"# {memory}: the archived Table 1 runs (runs/table1, runs/table1_long)")
    show(commands, args.launcher, args.races)


if __name__ == "__main__":
    sys.exit(main())
