"""The runs of the MAD protocol for one model (conf/experiment/mad.yaml): every task x setting
(longterm.tasks.mad.SETTING_NAMES: the baseline and each harder value of one key) a multirun over
mad-lab's grid, lr 1e-4, 5e-4, 1e-3 x weight decay 0, 0.1 (mad/configs.py:
make_benchmark_mad_configs), all in one sweep directory (outputs/mad), each job in a directory
named by its task, model, setting, lr and seed and its weight decay, so that a rerun fills in
what is missing.

    python -m longterm.experiments.mad.runs --model mad_attention            # the commands
    python -m longterm.experiments.mad.runs --model mad_mamba --tasks memorization
    python -m longterm.experiments.mad.runs --model mad_gru -- "hydra.searchpath=[file://$PWD/conf]"

Overrides after `--` go to every command (a model of one's own: its conf directory).
"""

import argparse
import shlex

from longterm.analysis.arguments import summary
from longterm.tasks.mad import SETTING_NAMES, TASKS

SWEEP_DIR = "outputs/mad"
LRS = ("1e-4", "5e-4", "1e-3")  # mad/configs.py: lrs
WEIGHT_DECAYS = ("0.0", "0.1")  # mad/configs.py: wds


def conf_task(task: str) -> str:
    """`in-context-recall` -> `mad_in_context_recall` (conf/task/)."""
    return "mad_" + task.replace("-", "_")


def command(
    model: str, task: str, setting: str, sweep_dir: str = SWEEP_DIR, extra: tuple[str, ...] = ()
) -> str:
    """The multirun of one task x setting over the grid, as a shell command."""
    argv = [
        *("python", "src/train.py", "-m", "experiment=mad", f"model={model}"),
        *(f"task={conf_task(task)}", f"task.setting={setting}"),
        *(f"lr={','.join(LRS)}", f"optim.weight_decay={','.join(WEIGHT_DECAYS)}"),
        f"hydra.sweep.dir={sweep_dir}",
        *extra,
    ]
    return shlex.join(argv)


def commands(
    model: str,
    tasks: tuple[str, ...] = TASKS,
    sweep_dir: str = SWEEP_DIR,
    extra: tuple[str, ...] = (),
) -> list[str]:
    """Every task's every setting, tasks in MAD's order, the baseline first."""
    return [
        command(model, task, setting, sweep_dir, extra)
        for task in tasks
        for setting in SETTING_NAMES[task]
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=summary(__doc__))
    parser.add_argument("--model", required=True, help="a model's conf file (model=...)")
    parser.add_argument("--tasks", nargs="+", choices=TASKS, default=TASKS, metavar="TASK")
    parser.add_argument("--sweep-dir", default=SWEEP_DIR)
    parser.add_argument("overrides", nargs="*", help="after --: given to every command")
    args = parser.parse_args(argv)
    lines = commands(args.model, tuple(args.tasks), args.sweep_dir, tuple(args.overrides))
    print("\n".join(lines))
    jobs = sum(len(SETTING_NAMES[t]) for t in args.tasks) * len(LRS) * len(WEIGHT_DECAYS)
    print(f"# {len(lines)} multiruns, {jobs} runs", flush=True)


if __name__ == "__main__":
    main()
