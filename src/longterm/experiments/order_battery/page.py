"""The order battery's table, from its runs' result.json files (conf/experiment/order_battery.yaml):

    python -m longterm.experiments.order_battery.page outputs/order_battery \
        --out docs/order_battery.md

One row per task, one column per architecture, the best validation accuracy of each run, beside
two references computed on the same validation sets: the best constant predictor (chance) and, for
temporal order, the best order-blind predictor (one that sees only how many X and Y there are,
all that pooling over per-step features can see).
"""

from pathlib import Path

import pandas as pd

from longterm.analysis.arch_runs import archs, commands, setting, table_cli
from longterm.analysis.formats import pct
from longterm.analysis.identity import one_setting
from longterm.analysis.references import references

COMMANDS = (
    "python src/train.py experiment=order_battery",
    "python src/train.py experiment=order_battery task=associative_recall task.params.k=2,8",
)


def table(df: pd.DataFrame) -> pd.DataFrame:
    """Best validation accuracy (%) by task and architecture, with the references."""
    acc = df.pivot(index="task", columns="arch", values="best_acc")[archs(df)].map(pct)
    refs = df.drop_duplicates("task").set_index("task")
    chance_ceiling = [references(r.data, r.loss) for r in refs.itertuples()]
    acc["chance"] = pd.Series([pct(c) for c, _ in chance_ceiling], index=refs.index)
    acc["order-blind ceiling"] = pd.Series([pct(o) for _, o in chance_ceiling], index=refs.index)
    return acc


RECALLED = 0.9  # "recalls" on associative recall: best validation accuracy at least this


def findings(df: pd.DataFrame) -> list[str]:
    """Sentences read off the runs: temporal order against its ceiling, recall as k grows."""
    lines = []
    order = df[df.task == "temporal_order"]
    if not order.empty:
        _, ceiling = references(order.data.iloc[0], "cross_entropy")
        accs = ", ".join(f"{r.arch} {pct(r.best_acc)}%" for r in order.itertuples())
        solved = ", ".join(order[order.status == "solved"].arch) or "none"
        lines.append(
            f"Temporal order: {accs}; the order-blind ceiling on this validation set is "
            f"{pct(ceiling)}%; solved by: {solved}."
        )
    recall = df[df.task.str.startswith("associative_recall")]
    for arch, runs in recall.groupby("arch", sort=False):
        runs = runs.assign(k=runs.task.str.extract(r"k=(\d+)")[0].astype(int)).sort_values("k")
        failed = runs[runs.best_acc < RECALLED]
        where = (
            f"below {pct(RECALLED)}% from k = {failed.k.iloc[0]}"
            if len(failed)
            else (f"at least {pct(RECALLED)}% up to k = {runs.k.max()}")
        )
        accs = ", ".join(f"k={r.k}: {pct(r.best_acc)}%" for r in runs.itertuples())
        lines.append(f"Associative recall, {arch}: {where} ({accs}).")
    return lines


REPORT = """# The order battery

Every architecture on temporal order, variable tracking, associative recall and the paper's
addition problem at T0 = {T0} (lengths {T0}..{longest}),
at most {updates} updates of {batch_size} sequences each, validation on
{val_size} sequences; a run stops early at 100%. Classification tasks: accuracy of the
arg-max; addition: |y - ŷ| < 0.04.

Commands (conf/experiment/order_battery.yaml), then this table:

```
{commands}
```

{provenance}

## Best validation accuracy (%)

"chance": the best constant predictor on the same validation set; "order-blind ceiling": the
best predictor from the number of X and Y alone, on the same validation set.

{accuracy}

Solved (100%): {solved}.

{findings}

## Wall time per run (s)

{times}
"""


def solved_at(df: pd.DataFrame) -> str:
    """The solved runs with the epoch each reached 100%, or 'none'."""
    solved = df[df.status == "solved"]
    runs = (f"{r.arch} on {r.task} (epoch {int(r.epoch_solved)})" for r in solved.itertuples())
    return ", ".join(runs) or "none"


def wall_times(df: pd.DataFrame) -> pd.DataFrame:
    """Wall time per run (s) by task and architecture."""
    times = df.pivot(index="task", columns="arch", values="wall_time_s")[archs(df)]
    return times.map(lambda t: "" if pd.isna(t) else f"{t:.0f}")


def values(df: pd.DataFrame, dirs: list[Path]) -> dict:
    """Everything the report shows, by its name in REPORT. A cell (task, architecture) is one
    run: two runs in one, of another seed, learning rate, budget or model key, are refused in one
    line naming what differs (MixedSettingsError, analysis/identity.py)."""
    one_setting(df, ["task", "arch"], within=())
    table_command = (
        f"python -m longterm.experiments.order_battery.page {' '.join(map(str, dirs))} "
        "--out docs/order_battery.md"
    )
    return {
        **setting(df),
        "commands": commands(COMMANDS, table_command),
        "accuracy": table(df).to_markdown(disable_numparse=True),
        "solved": solved_at(df),
        "findings": "\n".join(f"- {line}" for line in findings(df)),
        "times": wall_times(df).to_markdown(disable_numparse=True),
    }


def report(df: pd.DataFrame, dirs: list[Path]) -> str:
    """The order battery's Markdown page, from its runs."""
    return REPORT.format(**values(df, dirs))


def main(argv: list[str] | None = None) -> None:
    table_cli(__doc__, lambda df, dirs, out: report(df, dirs), argv)


if __name__ == "__main__":
    main()
