"""Table 1 of the paper (fixed lengths, §2.2) from a table of runs (analysis.runs.load_runs), as
a DataFrame and Markdown, and the per-seed rule the other tables share.

Each seed repeats the paper's protocol: of its learning rates, the one that solves in the fewest
epochs wins, or, when none solves, the best accuracy at the epoch limit. A cell is then the
median and range over seeds.
"""

from collections.abc import Callable, Iterable
from typing import Any

import pandas as pd

from longterm.analysis import published

CELL = ["task", "pool", "T0"]
LONG_T0 = 5000  # from here on a cell's runs take hours on a 2-core CPU (docs/performance.md)


def best_over_lrs(runs: pd.DataFrame) -> pd.Series:
    """The paper's rule for one seed's learning rates: fewest epochs to 100%, else the best
    accuracy among the runs that reached the epoch limit."""
    solved = runs[runs.status == "solved"]
    limit = runs.max_epochs.max()
    at_limit = runs[(runs.status == "max_epochs") & (runs.epochs == limit)]
    if len(solved):
        epochs = solved.epoch_solved.min()
        best = solved[solved.epoch_solved == epochs]
        acc = 1.0
    else:
        epochs = None
        acc = at_limit.final_acc.max() if len(at_limit) else None
        best = at_limit[at_limit.final_acc == acc] if len(at_limit) else at_limit
    return pd.Series(
        {
            "solved": bool(len(solved)),
            "epochs": epochs,
            "acc": acc,
            "limit": limit,
            "lrs": tuple(sorted(best.lr)),
            "run_dirs": tuple(best.sort_values("lr").run_dir),
            "n_lrs": runs.lr.nunique(),
            "lrs_run": tuple(sorted(runs.lr.unique())),
            "diverged_lrs": tuple(sorted(runs[runs.status == "diverged"].lr)),
            # A run continued to a larger limit (longterm.store.continue_run) counts its whole
            # chain: the runs of the same learning rate.
            "best_wall_s": runs[runs.lr.isin(best.lr)].groupby("lr").wall_time_s.sum().min()
            if len(best)
            else None,
            "grid_wall_s": runs.wall_time_s.sum(),
            "protocols": tuple(sorted({protocol(c) for c in runs.get("config", [])})),
        }
    )


def protocol(config: dict) -> tuple[int | None, ...]:
    """A run's (updates an epoch, validation sequences), the keys of published.PROTOCOL."""
    return tuple(config["data"].get(key) for key in published.PROTOCOL)


def protocol_note(protocols: Iterable[tuple[int | None, ...]]) -> str | None:
    """Why a cell's runs cannot stand beside the paper's value; None when they followed its
    protocol."""
    paper = tuple(published.PROTOCOL.values())
    other = [p for p in protocols if p != paper and None not in p]  # None: not recorded
    if not other:
        return None
    updates, sequences = other[0]
    return (
        f"no paper value: {updates} updates an epoch, {sequences} validation sequences; "
        f"the paper's {paper[0]} and {paper[1]}"
    )


def per_seed(runs: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """`best_over_lrs` for every cell (`keys`) and seed."""
    if runs.empty:
        return pd.DataFrame()
    return runs.groupby([*keys, "seed"]).apply(best_over_lrs, include_groups=False).reset_index()


def lr_text(lrs: Iterable[tuple[float, ...]]) -> str:
    """How often each learning rate won (ties count for each), e.g. "3e-03 ×2, 1e-03"."""
    counts = pd.Series([lr for won in lrs for lr in won]).value_counts()
    return ", ".join(f"{lr:.0e}" + (f" ×{n}" if n > 1 else "") for lr, n in counts.items())


def summarise(seeds: pd.DataFrame) -> pd.Series:
    """One cell over its seeds: epochs median and range where solved, accuracy where not."""
    solved = seeds[seeds.solved]
    unsolved = seeds[~seeds.solved]
    epochs = solved.epochs.astype(float)
    acc = unsolved.acc.dropna()
    return pd.Series(
        {
            "seeds": len(seeds),
            "solved_seeds": len(solved),
            "epochs_median": epochs.median() if len(solved) else None,
            "epochs_min": epochs.min() if len(solved) else None,
            "epochs_max": epochs.max() if len(solved) else None,
            "unsolved_acc_median": acc.median() if len(acc) else None,
            "unsolved_acc_min": acc.min() if len(acc) else None,
            "unsolved_acc_max": acc.max() if len(acc) else None,
            "limit": seeds.limit.max(),
            "lr_chosen": lr_text(seeds.lrs),
            "lrs_per_seed": seeds.n_lrs.min(),
            "lrs_run": ", ".join(f"{lr:.0e}" for lr in sorted(set().union(*seeds.lrs_run))),
            "diverged_runs": sum(len(d) for d in seeds.diverged_lrs),
            "best_run_wall_s": seeds.best_wall_s.median(),
            "grid_wall_s": seeds.grid_wall_s.sum(),
            "protocol_note": protocol_note(set().union(*seeds.protocols)),
        }
    )


def spread(median: float, low: float, high: float, fmt: str = "{:g}") -> str:
    text = fmt.format(median)
    return text if low == high else f"{text} [{fmt.format(low)}–{fmt.format(high)}]"


def cell_text(c: pd.Series) -> str:
    """Table 1's format: epochs to 100%, or (italic) the accuracy at the limit when unsolved."""
    parts = []
    if c.solved_seeds:
        parts.append(spread(c.epochs_median, c.epochs_min, c.epochs_max))
    if c.solved_seeds < c.seeds:
        if pd.notna(c.unsolved_acc_median):
            acc = spread(c.unsolved_acc_median, c.unsolved_acc_min, c.unsolved_acc_max, "{:.1%}")
        else:  # no run reached the limit: every unsolved one diverged
            acc = "diverged"
        parts.append(
            f"*{acc}*" if not c.solved_seeds else f"{c.solved_seeds}/{c.seeds} solved, *{acc}*"
        )
    return "; ".join(parts)


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
