"""Table 1 of the paper (fixed lengths, §2.2) from a table of runs (analysis.runs.load_runs), as
a DataFrame and Markdown: each seed's best learning rate, then the median and range over seeds
(analysis/seeds.py, the rule the other tables share), beside the paper's value.
"""

from collections.abc import Callable
from typing import Any

import pandas as pd

from longterm.analysis import published
from longterm.analysis.seeds import cell_text, per_seed, summarise

CELL = ["task", "pool", "T0"]
LONG_T0 = 5000  # from here on a cell's runs take hours on a 2-core CPU (docs/performance.md)


def paper_text(value: int | float | None) -> str:
    if value is None:
        return ""
    return f"*{value:.1%}*" if isinstance(value, float) else str(value)


def table1_seeds(runs: pd.DataFrame) -> pd.DataFrame:
    """Each seed's best over learning rates in Table 1's setting: fixed lengths, the default
    fidelity (per-sequence lengths, padding not masked), the paper's two tasks."""
    fixed = runs[
        (runs.data == "fixed")
        & (runs.model == "feedforward")
        & (runs.lengths == "per_sequence")
        & ~runs.mask_padding.astype(bool)
        & runs.task.isin(["addition", "multiplication"])
    ]
    return per_seed(fixed, CELL)


def table1(seeds: pd.DataFrame) -> pd.DataFrame:
    """Table 1 cells from `table1_seeds`, with the paper's value."""
    if seeds.empty:
        return pd.DataFrame()
    cells = seeds.groupby(CELL).apply(summarise, include_groups=False).reset_index()
    cells["paper"] = [
        None if note else published.TABLE1.get((t, p), {}).get(T0)
        for (t, p, T0), note in zip(cells[CELL].values, cells.protocol_note, strict=True)
    ]
    return cells


Render = Callable[[Any, str, str, int], str]  # (cell or None, task, pool, T0) -> text


def grid(cells: pd.DataFrame, render: Render) -> list[str]:
    """A Markdown table with a row per (task, pool) of the paper and a column per T0."""
    t0s = t0_columns(cells)
    by_cell = {(c.task, c.pool, c.T0): c for c in cells.itertuples(index=False)}
    lines = ["| task | pool | " + " | ".join(f"T0={t}" for t in t0s) + " |"]
    lines.append("|---|---|" + "---|" * len(t0s))
    for task, pool in published.TABLE1:
        out = [render(by_cell.get((task, pool, T0)), task, pool, T0) for T0 in t0s]
        lines.append(f"| {task} | {pool} | " + " | ".join(out) + " |")
    return lines


def epochs_text(c: Any, task: str, pool: str, T0: int) -> str:
    """Our cell, the paper's value in brackets; a cell with no finished run says so (the note
    under the table gives the commands that make it)."""
    value = paper_text(published.TABLE1.get((task, pool), {}).get(T0))
    if c is None:
        return f"not run ({value})"
    note = c.protocol_note
    return f"{cell_text(pd.Series(c._asdict()))} ({note or value})"


def chosen_text(c: Any, *_: Any) -> str:
    return "" if c is None else c.lr_chosen


def cost_text(c: Any, *_: Any) -> str:
    return "" if c is None else f"{c.best_run_wall_s:.0f} s / {c.grid_wall_s / 60:.1f} min"


def seeds_text(c: Any, *_: Any) -> str:
    if c is None:
        return ""
    diverged = f", {c.diverged_runs} diverged" if c.diverged_runs else ""
    return f"{c.seeds} × {c.lrs_per_seed} lr{diverged}"


def t0_columns(cells: pd.DataFrame) -> list[int]:
    return sorted(set(published.T0S) | set(cells.T0))


def not_run_note(cells: pd.DataFrame) -> list[str]:
    """Which lengths have cells with no finished run, and the commands that make them."""
    run = {(c.task, c.pool, c.T0) for c in cells.itertuples(index=False)}
    missing = [
        T0 for T0 in t0_columns(cells) if any((*cell, T0) not in run for cell in published.TABLE1)
    ]
    if not missing:
        return []
    long = ", ".join(str(T0) for T0 in missing if T0 >= LONG_T0)
    return [
        'Cells marked "not run" have no finished run in the sweeps collected here (an unfinished',
        "run is left out until it ends). `scripts/long_sweeps.sh` makes every cell on a 2-core",
        "CPU, resuming where it was stopped; the paper's rule over the whole grid and 3 seeds:",
        "",
        "    python -m longterm.experiments.lr_race --sweep-dir outputs/table1 "
        f"--T0 {' '.join(map(str, missing))} --seeds 1 2 3",
        "",
        *([f"At T0 = {long} a run takes hours on 2 cores.", ""] if long else []),
    ]


def table1_markdown(cells: pd.DataFrame) -> str:
    out = [
        "## Epochs to 100% validation accuracy (paper's value in brackets)",
        "",
        "Each seed takes its best learning rate, as the paper did for its single run; a cell is",
        "the median [min–max] over seeds of the epochs that learning rate needed. *Italic*: not",
        "solved within the epoch limit, the accuracy then (the paper's greyed-out values).",
        "",
        *grid(cells, epochs_text),
        "",
        "## Learning rate chosen (how many seeds it won; ties count for each)",
        "",
        *grid(cells, chosen_text),
        "",
        "## Seeds and learning rates run",
        "",
        *grid(cells, seeds_text),
        "",
        "## Cost: wall time of the winning run (median over seeds) / of all the cell's runs",
        "",
        "A run continued to a larger epoch limit counts with the runs it continued.",
        "",
        *grid(cells, cost_text),
        "",
        *not_run_note(cells),
    ]
    limits = sorted(set(cells.limit))
    out.append(
        f"Epoch limit: {', '.join(map(str, limits))} (the paper's: {published.EPOCH_LIMIT})."
    )
    return "\n".join(out) + "\n"
