"""zoology's Figure 2 grid in its own recipe (conf/experiment/zoology_figure2.yaml): every run of
model x length x width x learning rate x seed, one `python src/train.py` command each, the cells
finished in the sweep directory left out, the cheapest first; the page is recall/page.py's
(`python -m longterm.experiments.recall.page runs/zoology_figure2 --out docs/zoology_figure2.md`).

    python -m longterm.experiments.recall.figure2                 # the runs left to make
    python -m longterm.experiments.recall.figure2 --run           # run them, one per core
    python -m longterm.experiments.recall.figure2 --lengths 64 --widths 64 --models gla \
        --lrs 2.15e-3 --seeds 1 2 3
    python -m longterm.experiments.recall.figure2 --lengths 128 --widths 256 512  # the rest of it

A cell is one run: zoology's models by their arch (MODELS: `arch=zoology_*`) and the framework's
gla and deltanet with their short convolutions and zoology's tied head; a length T0 with T0 / 16
key-value pairs, batch 512 up to T0 = 128 and 256 above, an epoch of ceil(100,000 / batch)
batches (zoology's 100,000 sequences); a width `model.dim`; a learning rate of
np.logspace(-4, -2, 4), each a run of its own over the whole cosine schedule (a grid, no race:
a capped rival would train on another schedule); a seed (zoology: one run per learning rate).
The overrides a command carries are those that differ from the experiment's conf file, so a
command at T0 = 64 is the archived runs' own (runs/zoology_figure2) and resumes them.

A cell is finished when a run of its model, T0, width, learning rate and seed in `--sweep-dir`
(default: the experiment's sweep directory) ended as designed (solved, at its epoch limit or
diverged: store/records.py); an interrupted run's cell is listed, and its command resumes it.
The cost of a cell is a proxy, an epoch's sequences x T0 x width (the tokens it trains on times
the width, alike for every model: a model's own speed is not estimated here, race_hours.py does
that from runs); cells of one cost go seed by seed, then model, then learning rate, so that
seed 1 of the whole grid comes first. `--run` runs the commands in that order, one process of
one thread per core, each taking the next when its own ends (experiments/command_queue.py).
Every job of the printed commands is checked first (config/command_line.py), one multirun per
model and length.
"""

import argparse
import math
import shlex
import sys
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from omegaconf import OmegaConf

from longterm.analysis.arguments import at_least, summary
from longterm.analysis.runs import run_dirs
from longterm.config.builtins import CONF, conf_file
from longterm.config.run_names import number
from longterm.experiments.command_queue import OVERRIDES_HELP, RACES_HELP, extended, run, show
from longterm.store.run_dir import RunDirError, finished

EXPERIMENT = "zoology_figure2"
RECIPE = conf_file("experiment", EXPERIMENT)  # the conf file: the defaults a command leaves out
SWEEP_DIR = str(RECIPE.hydra.sweep.dir)  # outputs/zoology_figure2
# model name (as its runs record it) -> the overrides that make it
MODELS = {
    "zoology_attention": ("arch=zoology_attention",),
    "zoology_hyena": ("arch=zoology_hyena",),
    "zoology_base_conv": ("arch=zoology_base_conv",),
    "zoology_mamba": ("arch=zoology_mamba",),
    "gla": ("model=gla", "model.use_short_conv=true", "model.head=tied"),
    "deltanet": ("model=deltanet", "model.use_short_conv=true", "model.head=tied"),
}
LENGTHS = (64, 256)  # T0; zoology's grid has 128 between them (--lengths 128)
WIDTHS = (64, 128)  # model.dim; zoology's runs 64 to 512 (--widths 256 512)
LRS = ("1e-4", "4.64e-4", "2.15e-3", "1e-2")  # np.logspace(-4, -2, 4), as the conf file writes it
SEEDS = (1,)  # zoology's one run per learning rate; the page's verdicts read 3 (--seeds 2 3)
ZOOLOGY_EPOCH = 100_000  # sequences: zoology's num_train_examples
PAIR_EVERY = 16  # steps per key-value pair: 4, 8, 16 pairs at T0 = 64, 128, 256
LARGEST_FULL_BATCH = 128  # zoology's batch is 512 up to this T0 and 256 above it


@dataclass(frozen=True)
class GridRun:
    """One cell of the grid: a run."""

    model: str
    T0: int
    width: int
    lr: str
    seed: int

    def key(self) -> tuple:
        return (self.model, self.T0, self.width, number(float(self.lr)), self.seed)


def setting(T0: int) -> dict[str, int]:
    """Figure 2's data at length T0: the pairs, the batch and an epoch's batches."""
    batch = 512 if T0 <= LARGEST_FULL_BATCH else 256
    return {
        "T0": T0,
        "task.params.kv_pairs": T0 // PAIR_EVERY,
        "data.batch_size": batch,
        "data.batches_per_epoch": math.ceil(ZOOLOGY_EPOCH / batch),
    }


def setting_overrides(T0: int) -> list[str]:
    """The overrides of `setting(T0)` that differ from the conf file's values."""
    return [f"{k}={v}" for k, v in setting(T0).items() if OmegaConf.select(RECIPE, k) != v]


def cost(cell: GridRun) -> int:
    """Sequences of an epoch x T0 x width: the grid's order, cheapest first."""
    s = setting(cell.T0)
    return s["data.batch_size"] * s["data.batches_per_epoch"] * cell.T0 * cell.width


def command(
    model: str,
    T0: int,
    widths: Iterable[int],
    lrs: Iterable[str],
    seeds: Iterable[int],
    sweep_dir: str = SWEEP_DIR,
) -> str:
    """The `python src/train.py -m` line of the runs of `model` at T0 over the widths, learning
    rates and seeds (each list one value for one cell)."""
    where = [] if sweep_dir == SWEEP_DIR else [f"hydra.sweep.dir={sweep_dir}"]
    return shlex.join(
        [
            *("python", "src/train.py", "-m", f"experiment={EXPERIMENT}"),
            *setting_overrides(T0),
            *MODELS[model],
            "model.dim=" + ",".join(map(str, widths)),
            "lr=" + ",".join(lrs),
            "seed=" + ",".join(map(str, seeds)),
            *where,
        ]
    )


def cells(
    lengths: Iterable[int] = LENGTHS,
    widths: Iterable[int] = WIDTHS,
    models: Iterable[str] = MODELS,
    lrs: Iterable[str] = LRS,
    seeds: Iterable[int] = SEEDS,
) -> list[GridRun]:
    """Every cell, cheapest first (cost), then seed by seed, model, learning rate."""
    models, lrs = list(models), list(lrs)
    grid = [
        GridRun(m, T0, w, lr, s)
        for T0 in lengths
        for w in widths
        for m in models
        for lr in lrs
        for s in seeds
    ]
    return sorted(grid, key=lambda c: (cost(c), c.seed, models.index(c.model), lrs.index(c.lr)))


def run_key(record: dict) -> tuple:
    """A run record's (or a page's run row's) cell key, as GridRun.key."""
    dim = record["config"]["model"]["dim"]
    return (record["model"], int(record["T0"]), int(dim), number(record["lr"]), int(record["seed"]))


def finished_keys(sweep_dir: str | Path) -> set[tuple]:
    """The cell keys of the runs in `sweep_dir` that ended as designed (store/run_dir.finished)."""
    keys = set()
    for run_dir in run_dirs(Path(sweep_dir)) if Path(sweep_dir).is_dir() else []:
        try:
            record = finished(run_dir)
        except RunDirError:  # unreadable: not finished
            continue
        if record is not None and record.get("task") == "mqar":
            keys.add(run_key(record))
    return keys


def left(grid: list[GridRun], done: set[tuple]) -> list[GridRun]:
    return [c for c in grid if c.key() not in done]


def check_commands(grid: list[GridRun], overrides: list[str] = ()) -> None:
    """Exit with one line when a job of the grid does not check (config/command_line.check):
    one multirun per model and length holding every width, learning rate and seed, composed in
    a scratch sweep directory (a run in use in the real one is no mistake of the command)."""
    from longterm.config.command_line import check
    from longterm.config.validate import ConfigError

    for model, T0 in dict.fromkeys((c.model, c.T0) for c in grid):
        own = [c for c in grid if (c.model, c.T0) == (model, T0)]
        each = [sorted({getattr(c, k) for c in own}, key=str) for k in ("width", "lr", "seed")]
        line = shlex.split(command(model, T0, *each))[2:]
        with tempfile.TemporaryDirectory() as scratch:
            try:
                check([*line, *overrides, f"hydra.sweep.dir={scratch}"], CONF)
            except ConfigError as e:
                sys.exit(f"error: {shlex.join(line)}: {e}")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=summary(__doc__))
    p.add_argument("--run", action="store_true", help="run the commands, --races at a time")
    p.add_argument("--lengths", type=at_least(PAIR_EVERY), nargs="+", default=LENGTHS)
    p.add_argument("--widths", type=at_least(1), nargs="+", default=WIDTHS)
    p.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    p.add_argument("--lrs", nargs="+", default=LRS, help="as the commands write them")
    p.add_argument("--seeds", type=int, nargs="+", default=SEEDS)
    p.add_argument("--sweep-dir", default=SWEEP_DIR, help="where the runs go and are found")
    p.add_argument("--races", type=at_least(1), help=RACES_HELP)
    p.add_argument("overrides", nargs="*", metavar="KEY=VALUE", help=OVERRIDES_HELP)
    args = p.parse_args(argv)
    for lr in args.lrs:
        try:
            float(lr)
        except ValueError:
            p.error(f"argument --lrs: {lr!r} is not a number")
    grid = cells(args.lengths, args.widths, args.models, args.lrs, args.seeds)
    todo = left(grid, finished_keys(args.sweep_dir))
    check_commands(todo, args.overrides)
    lines = [command(c.model, c.T0, [c.width], [c.lr], [c.seed], args.sweep_dir) for c in todo]
    lines = extended(lines, args.overrides)
    if not lines:
        print(f"# every one of the {len(grid)} cells is finished in {args.sweep_dir}")
    elif args.run:
        run(lines, "local", args.races)
    else:
        print(f"# {len(lines)} of the {len(grid)} cells left in {args.sweep_dir}, cheapest first")
        show(lines, "local", args.races)


if __name__ == "__main__":
    main()
