"""The memory comparison's tables, from its runs' result.json files
(conf/experiment/memory_comparison.yaml):

    python -m longterm.experiments.memory_comparison.page outputs/memory_comparison \
        --out docs/memory_comparison.md

Every architecture on every task (the page's first paragraph says which, read from the runs:
their architectures, tasks, lengths, updates, sizes and seeds): the best validation accuracy of
each run, as the mean over seeds and its range (lowest and highest seed), beside the parameter
count of the architecture on that task and its state size (the numbers it carries per sequence at
inference after the training width; – where its runs did not record one); the best constant
predictor (chance) on the same validation sets for reference.
"""

import shlex
from pathlib import Path

import pandas as pd

from longterm.analysis.arch_runs import archs, commands, setting, table_cli
from longterm.analysis.formats import pct
from longterm.analysis.identity import one_setting
from longterm.analysis.references import references
from longterm.tasks import default_width

POINT = ["task", "arch"]  # a cell of the tables: its runs are the seeds
COMMANDS = (
    "python src/train.py experiment=memory_comparison",
    "python src/train.py experiment=memory_comparison arch=all_attention model.n_persistent=0,16",
)


def over_seeds(runs: pd.DataFrame) -> pd.DataFrame:
    """Per task and architecture: parameters, state size, seeds, mean and range of the best
    accuracy (%), runs solved, mean wall time. A cell joins the runs of one setting but their
    seeds: runs of another learning rate, length, budget, recipe or model key are refused in one
    line (MixedSettingsError, analysis/identity.py)."""
    one_setting(runs, POINT, within=("seed",))
    grouped = runs.groupby(POINT, sort=False)
    return grouped.agg(
        params=("n_params", "max"),
        state=("state_size", "max"),
        seeds=("seed", "nunique"),
        mean=("best_acc", "mean"),
        low=("best_acc", "min"),
        high=("best_acc", "max"),
        solved=("status", lambda s: int((s == "solved").sum())),
        wall_s=("wall_time_s", "mean"),
    ).reset_index()


def cell(row: pd.Series) -> str:
    """'mean (low-high)' in %; the mean alone for one seed."""
    if row.seeds == 1:
        return pct(row["mean"])
    return f"{pct(row['mean'])} ({pct(row.low)}–{pct(row.high)})"


def summary(stats: pd.DataFrame) -> pd.DataFrame:
    """Architectures by tasks: mean (range) best accuracy over seeds."""
    stats = stats.assign(cell=stats.apply(cell, axis=1))
    table = stats.pivot(index="arch", columns="task", values="cell")
    return table.loc[archs(stats)].fillna("")


def task_table(stats: pd.DataFrame) -> pd.DataFrame:
    """One task: a row per architecture with its parameters beside its accuracies."""
    return pd.DataFrame(
        {
            "architecture": stats.arch,
            "parameters": stats.params.map("{:,}".format),
            "state size": stats.state.map(lambda n: "–" if pd.isna(n) else f"{int(n):,}"),
            "mean best acc (%)": stats["mean"].map(pct),
            "range (%)": stats.low.map(pct) + "–" + stats.high.map(pct),
            "seeds": stats.seeds,
            "solved": stats.solved,
            "wall time per run (s)": stats.wall_s.map("{:.0f}".format),
        }
    )


def chance(runs: pd.DataFrame) -> str:
    """The best constant predictor of each classification task on its validation set."""
    first = runs.drop_duplicates("task")
    refs = [(r.task, references(r.data, r.loss)[0]) for r in first.itertuples()]
    return ", ".join(f"{task} {pct(c)}%" for task, c in refs if c is not None)


REPORT = """# The memory comparison

{what} A run stops early at 100%. Classification tasks: accuracy of the arg-max; addition and
multiplication: |y - ŷ| < 0.04. Each cell is the best validation accuracy of a run, the mean over
seeds with the lowest and highest seed in brackets.

Commands (conf/experiment/memory_comparison.yaml), then these tables:

```
{commands}
```

{provenance}

## Best validation accuracy (%), mean over seeds (range)

{summary}

Chance (the best constant predictor on the same validation sets): {chance}.

## Per task, with parameter counts and state sizes

The state size is what the architecture carries per sequence at inference after {width} steps,
the width of the training batches (docs/models.md, "State size").

{tasks}
"""


def listed(values) -> str:
    """`a, b and c`."""
    values = [str(v) for v in values]
    return ", ".join(values[:-1]) + (" and " if len(values) > 1 else "") + values[-1]


def described(df: pd.DataFrame) -> str:
    """What the runs given were, read from them: architectures, tasks, lengths (each T0 with its
    longest sequence), updates, batch and validation sizes, seeds."""
    data = pd.DataFrame(list(df.data))
    lengths = sorted({(int(t), default_width(int(t)) - 1) for t in data.T0})
    seeds = df.groupby(["task", "arch"]).seed.nunique()
    seeds_text = (
        f"{seeds.min()} seed{'s' if seeds.min() > 1 else ''}"
        if seeds.min() == seeds.max()
        else f"{seeds.min()}–{seeds.max()} seeds"
    )
    return (
        f"{listed(archs(df.drop_duplicates('arch')))} on {listed(sorted(set(df.task)))} "
        f"({len(df)} runs, {seeds_text} a cell) at "
        + listed(f"T0 = {t} (lengths {t}..{w})" for t, w in lengths)
        + f"; at most {int(df.updates.max()):,} updates of "
        + listed(sorted({int(b) for b in data.batch_size}))
        + " sequences each, validation on "
        + listed(sorted({int(v) for v in data.val_size}))
        + " sequences (read from the runs)."
    )


def task_tables(stats: pd.DataFrame) -> str:
    """A section per task, in the order of their names, each with its table."""
    return "\n\n".join(
        f"### {task}\n\n"
        + task_table(stats[stats.task == task]).to_markdown(index=False, disable_numparse=True)
        for task in sorted(set(stats.task))
    )


def values(df: pd.DataFrame, dirs: list[Path], out: Path | None) -> dict:
    """Everything the report shows, by its name in REPORT."""
    stats = over_seeds(df)
    table_command = shlex.join(
        ["python", "-m", "longterm.experiments.memory_comparison.page", *map(str, dirs)]
        + (["--out", str(out)] if out else [])
    )
    return {
        **setting(df),
        "what": described(df),
        "commands": commands(COMMANDS, table_command),
        "summary": summary(stats).to_markdown(disable_numparse=True),
        "chance": chance(df) or "none",
        "tasks": task_tables(stats),
    }


def report(df: pd.DataFrame, dirs: list[Path], out: Path | None) -> str:
    """The memory comparison's Markdown page, from its runs; `out` is named in its command."""
    return REPORT.format(**values(df, dirs, out))


def main(argv: list[str] | None = None) -> None:
    table_cli(__doc__, report, argv)


if __name__ == "__main__":
    main()
