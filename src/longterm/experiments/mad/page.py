"""docs/mad.md from the runs of the MAD protocol (conf/experiment/mad.yaml; mad/runs.py plans
them): per model, per task and setting the best test accuracy over mad-lab's grid (lr x weight
decay), per task the MAD score, the mean of its settings' (mad-lab's mad/analysis.py:
compute_model_mad_scores), and the mean of the six; the state size of each run beside (result.json's
`state_size`, per sequence after the setting's length). A cell not run says so with the command
that runs it; a page never joins runs of different settings in one cell (analysis/identity.py).

    python -m longterm.experiments.mad.page outputs/mad --out docs/mad.md

A run's test accuracy is mad-lab's: the accuracy on the test set at the epoch of its lowest test
loss (train.py evaluates the checkpoint of the lowest test perplexity, `trainer.validate` after
`fit`), read from the run's TensorBoard events; the last epoch's where a run logged no loss.
"""

from pathlib import Path

import numpy as np
import pandas as pd

from longterm.analysis.events import curve
from longterm.analysis.formats import pct
from longterm.analysis.identity import MixedSettingsError, mixed
from longterm.analysis.page_cli import page_cli
from longterm.analysis.runs import load_runs
from longterm.experiments.mad.runs import LRS, WEIGHT_DECAYS, command
from longterm.tasks.mad import SETTING_NAMES, TASKS, task_of

GRID = len(LRS) * len(WEIGHT_DECAYS)
POINT = ["model", "task", "setting"]  # one cell: its runs differ in lr and weight decay only


def test_accuracy(run_dir: str, history: list[float] | None) -> float | None:
    """The accuracy at the epoch of the lowest val/loss (the module docstring)."""
    if not history:
        return None
    try:
        loss = curve(run_dir, "val/loss")
    except Exception:  # no events (logger=csv or none)
        loss = pd.Series(dtype=float)
    if len(loss) != len(history):
        return history[-1]
    return history[int(np.argmin(loss.to_numpy()))]


def load(dirs: list[Path]) -> pd.DataFrame:
    """The finished runs of data=mad under `dirs`: their MAD task, setting, test accuracy."""
    runs = load_runs(dirs)
    if runs.empty:
        return runs
    runs = runs[runs.data == "mad"].copy()
    runs["setting"] = [s.get("setting") for s in runs.settings]
    runs["mad_task"] = [task_of(c["task"]["generator"]) for c in runs.config]
    runs["test_acc"] = [
        test_accuracy(d, h) for d, h in zip(runs.run_dir, runs.history, strict=True)
    ]
    return runs


def cells(runs: pd.DataFrame, model: str) -> pd.DataFrame:
    """One row per task and setting of `model`: the best test accuracy over its grid, where
    (lr, weight decay), how many of the grid's runs there are, the state size."""
    rows = []
    for task in TASKS:
        for setting in SETTING_NAMES[task]:
            g = runs[(runs.model == model) & (runs.mad_task == task) & (runs.setting == setting)]
            best = g.loc[g.test_acc.idxmax()] if g.test_acc.notna().any() else None
            rows.append(
                dict(
                    task=task,
                    setting=setting,
                    runs=len(g),
                    acc=None if best is None else best.test_acc,
                    at="" if best is None else f"lr {best.lr:g}, wd {best.weight_decay:g}",
                    state_size=None if best is None else best.state_size,
                )
            )
    return pd.DataFrame(rows)


def scores(table: pd.DataFrame) -> dict[str, float | None]:
    """Each task's MAD score, the mean of its settings' best accuracies; None until every
    setting has one."""
    return {
        task: (None if g.acc.isna().any() else float(g.acc.mean()))
        for task, g in table.groupby("task", sort=False)
    }


def model_section(runs: pd.DataFrame, model: str) -> str:
    table = cells(runs, model)
    score = scores(table)
    done = [v for v in score.values() if v is not None]
    mean = pct(float(np.mean(done))) if len(done) == len(TASKS) else "not every task scored"
    lines = [f"## model={model}", "", f"MAD score, the mean over the six tasks: **{mean}**", ""]
    lines += ["| task | MAD score | settings scored |", "|---|---|---|"]
    for task, value in score.items():
        scored = table[(table.task == task) & table.acc.notna()]
        n = len(SETTING_NAMES[task])
        lines.append(f"| {task} | {pct(value) or 'incomplete'} | {len(scored)} of {n} |")
    lines += [
        "",
        "| task | setting | best test accuracy (%) | at | runs of the grid | state size |",
    ]
    lines.append("|---|---|---|---|---|---|")
    for r in table.itertuples():
        if r.acc is None or pd.isna(r.acc):
            run = command(model, r.task, r.setting)
            lines.append(f"| {r.task} | {r.setting} | not run: `{run}` | | 0 of {GRID} | |")
            continue
        size = "" if r.state_size is None or pd.isna(r.state_size) else f"{int(r.state_size):,}"
        row = f"| {r.task} | {r.setting} | {pct(r.acc)} | {r.at} | {r.runs} of {GRID} | {size} |"
        lines.append(row)
    return "\n".join(lines)


def report(runs: pd.DataFrame, dirs: list[Path], out: Path | None = None) -> str:
    """The page: a section per model of the runs, in name order."""
    if not runs.empty:
        error = mixed(runs, POINT, within=("lr", "weight_decay"))
        if error:
            raise MixedSettingsError(error)
    models = sorted(set(runs.model)) if not runs.empty else []
    head = [
        "# The MAD protocol",
        "",
        "Generated by `python -m longterm.experiments.mad.page "
        + " ".join(map(str, dirs))
        + "` (longterm.experiments.mad.page) from the runs' result.json; the runs:"
        " `python -m longterm.experiments.mad.runs --model MODEL`.",
        "",
    ]
    body = [model_section(runs, m) for m in models] or ["No run of data=mad yet."]
    return "\n".join(head) + "\n" + "\n\n".join(body) + "\n"


def main(argv: list[str] | None = None) -> None:
    page_cli(__doc__, load, report, argv, empty="warn")


if __name__ == "__main__":
    main()
