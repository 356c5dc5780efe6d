"""Length extrapolation from a table of runs: the accuracy of each trained model at the lengths
of `eval.lengths` (training/eval_lengths.py; result.json's `eval_lengths`), over seeds, beside the
length it trained at, as the Mamba paper reports induction heads (arXiv 2312.00752, §4.1.2).
Runs without `eval_lengths` are left out; with none, there is no table.
"""

import pandas as pd

from longterm.analysis.formats import pct
from longterm.analysis.identity import one_setting

CELL = ["task", "model", "pool", "T0"]  # one row of the table: a task, a model, its training T0


def by_length(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per run and evaluated length: the cell's keys, seed, length and accuracy."""
    if "eval_lengths" not in runs:
        return pd.DataFrame()
    rows = [
        {**{k: run[k] for k in CELL}, "seed": run["seed"], "length": int(t), "accuracy": acc}
        for _, run in runs.iterrows()
        if isinstance(run["eval_lengths"], dict)
        for t, acc in run["eval_lengths"].items()
    ]
    return pd.DataFrame(rows)


def length_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Per cell (task, model, pool, trained T0) and length: seeds, mean, min and max accuracy. A
    cell joins the runs of one setting but their seeds: runs of another learning rate, model key
    or recipe are refused in one line (MixedSettingsError, analysis/identity.py)."""
    if "eval_lengths" in runs:
        tested = runs[[isinstance(e, dict) for e in runs.eval_lengths]]
        one_setting(tested, CELL, within=("seed",))
    rows = by_length(runs)
    if rows.empty:
        return rows
    stats = rows.groupby([*CELL, "length"]).accuracy.agg(["count", "mean", "min", "max"])
    return stats.reset_index().rename(columns={"count": "seeds"})


def length_markdown(table: pd.DataFrame) -> str:
    """The accuracy (%) by length, one row per cell and one column per length: the mean over
    seeds, with the range when there are several."""
    lengths = sorted(table.length.unique())
    head = "| task | model | pool | trained at T0 | seeds | " + " | ".join(map(str, lengths))
    lines = [head + " |", "|---" * (5 + len(lengths)) + "|"]
    for cell, g in table.groupby(CELL, sort=True):
        at = {row.length: row for row in g.itertuples()}
        cells = [
            (
                pct(at[t].mean)
                + (f" ({pct(at[t].min)}-{pct(at[t].max)})" if at[t].seeds > 1 else "")
                if t in at
                else ""
            )
            for t in lengths
        ]
        seeds = int(g.seeds.max())
        lines.append("| " + " | ".join([*map(str, cell), str(seeds), *cells]) + " |")
    return (
        "Accuracy (%) of each trained model at other lengths (`eval.lengths`), the mean over "
        "seeds (range). Columns: the T0 evaluated at.\n\n" + "\n".join(lines) + "\n"
    )
