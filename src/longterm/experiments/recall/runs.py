"""The recall sweep: the runs behind docs/recall.md (recall/page.py), recall against state size on
multi-query associative recall (conf/experiment/recall.yaml).

    python -m longterm.experiments.recall.runs          # the sweep's commands
    python -m longterm.experiments.recall.runs --run    # run them, one per core, one thread
    python -m longterm.experiments.recall.runs --settings 128:8 --models hyena mamba --dims 32
    python -m longterm.experiments.recall.runs --run --models deltanet gla --seeds 2 3  # close
    python -m longterm.experiments.recall.runs --run --launcher slurm --settings 64:4 128:8 \
        256:16 --dims 64 128 256 512              # zoology's Figure 2 grid, on a cluster
    python -m longterm.experiments.recall.page outputs/recall --out docs/recall.md

Every setting (T0, key-value pairs) x width x model is one learning-rate race
(longterm.experiments.lr_race: LRS[0] leads, the others capped at the epochs it needed) in a sweep
directory of its own, `outputs/recall/<model>_d<width>_T<T0>/`, so that each race sees only its
own runs; a rerun fills in only what is missing. The attention models get `model.attn_span=T0`,
so that they see the whole sequence: those whose conf file has the key (a model of your own sets
its span itself, after `--`). `--launcher local`: token tasks train one job at a time under any
launcher (they are not packed).

A model of your own (docs/plugins.md) races as a built-in does, by its conf file's name, its
conf directory given to every job after `--` (`--models gru -- "hydra.searchpath=[file://$PWD/
mylab/conf]"`, run from your own directory: its sweeps go to `outputs/recall/` there). A model
run at one length only is drawn and tabled beside the grid on the page, and read by no check
(recall/checks.py), so the built-ins' verdicts stay those of their whole grid.

The races are listed settings first, then widths, then models, and `--run` takes them in that
order `--races` at a time (experiments/command_queue.py): on a CPU one process of one thread per
core, each taking the next race when its own ends; with `--launcher slurm` 8, each waiting for its
jobs on the cluster.
"""

import argparse
import shlex

from longterm.analysis.arguments import at_least, summary
from longterm.config.builtins import CONF, conf_file
from longterm.experiments.command_queue import OVERRIDES_HELP, RACES_HELP, extended, run, show

# (T0, key-value pairs): zoology's two shortest, and T0 = 32 below its grid (its ratio of a pair
# per 16 steps), the lengths at which attention learns MQAR within the CPU's 2,000 updates
SETTINGS = ((32, 2), (64, 4), (128, 8))
DIMS = (64, 32)  # model.dim
MODELS = (
    *("transformer", "mamba", "gla", "deltanet", "hyena", "s4d"),
    *("lstm", "rnn", "linear_memory", "all_attention", "feedback"),
)
LRS = ("3e-3", "1e-3")  # the leader first
SEEDS = (1,)  # more where points are close (--seeds)
SWEEP_ROOT = "outputs/recall"


def race(
    model: str,
    dim: int,
    T0: int,
    kv: int,
    launcher: str = "local",
    seeds: tuple[int, ...] = SEEDS,
    max_epochs: int | None = None,
) -> str:
    """One race's command line (`launcher`: lr_race's, `slurm` for a cluster; `max_epochs`: the
    epoch limit, None for conf/experiment/recall.yaml's)."""
    limit = () if max_epochs is None else ("--max-epochs", str(max_epochs))
    command = [
        *("python", "-m", "longterm.experiments.lr_race"),
        *("--sweep-dir", f"{SWEEP_ROOT}/{model}_d{dim}_T{T0}", "--T0", str(T0)),
        *("--tasks", "mqar", "--pools", "per_step", "--seeds", *map(str, seeds)),
        *("--lrs", *LRS, *limit),
        *("--launcher", launcher, "--", "experiment=recall", f"model={model}"),
        *(f"model.dim={dim}", f"task.params.kv_pairs={kv}"),
    ]
    if has_span(model):
        command.append(f"model.attn_span={T0}")
    return shlex.join(command)


def has_span(model: str) -> bool:
    """Whether a built-in model's conf file has `attn_span` (an attention model's window); a
    model of your own (not among the package's conf files) sets its own."""
    path = CONF / "model" / f"{model}.yaml"
    return path.exists() and "attn_span" in conf_file("model", model)


def races(
    settings: tuple[tuple[int, int], ...] = SETTINGS,
    dims: tuple[int, ...] = DIMS,
    models: tuple[str, ...] = MODELS,
    launcher: str = "local",
    seeds: tuple[int, ...] = SEEDS,
    max_epochs: int | None = None,
) -> list[str]:
    """The races, settings first, then widths, then models."""
    return [
        race(model, dim, T0, kv, launcher, seeds, max_epochs)
        for T0, kv in settings
        for dim in dims
        for model in models
    ]


def setting(text: str) -> tuple[int, int]:
    """`64:4` -> (64, 4)."""
    try:
        T0, kv = text.split(":")
        return int(T0), int(kv)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give T0:KV_PAIRS, e.g. 64:4") from None


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=summary(__doc__))
    p.add_argument("--run", action="store_true", help="run the races, --races at a time")
    p.add_argument("--settings", type=setting, nargs="+", default=SETTINGS, metavar="T0:KV")
    p.add_argument("--dims", type=int, nargs="+", default=DIMS)
    p.add_argument(
        "--models",
        nargs="+",
        default=MODELS,
        metavar="MODEL",
        help=f"{', '.join(MODELS)}, or a model of your own by its conf name (default: all)",
    )
    p.add_argument("--seeds", type=int, nargs="+", default=SEEDS)
    p.add_argument(
        "--max-epochs",
        type=at_least(1),
        help="each race's epoch limit (default: conf/experiment/recall.yaml's)",
    )
    p.add_argument(
        "--launcher", default="local", choices=("local", "slurm"), help="each race's (lr_race)"
    )
    p.add_argument("--races", type=at_least(1), help=RACES_HELP)
    p.add_argument("overrides", nargs="*", metavar="KEY=VALUE", help=OVERRIDES_HELP)
    args = p.parse_args(argv)
    chosen = races(
        tuple(args.settings),
        tuple(args.dims),
        tuple(args.models),
        args.launcher,
        tuple(args.seeds),
        args.max_epochs,
    )
    chosen = extended(chosen, args.overrides)
    from longterm.experiments.lr_race import check_command  # composes: only to check

    for command in chosen[: len(args.models)]:  # each model's first race
        check_command(command)
    if args.run:
        run(chosen, args.launcher, args.races)
    else:
        show(chosen, args.launcher, args.races)


if __name__ == "__main__":
    main()
