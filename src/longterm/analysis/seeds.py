"""The per-seed rule the tables share (the paper's protocol, §2.2): each seed repeats it over its
learning rates (the one that solves in the fewest epochs wins, or, when none solves, the best
accuracy at the epoch limit), and a cell is then the median and range over seeds, in Table 1's
format. Table 1 (analysis/table1.py), the masking and variable-length tables, the paper's
position and the every-memory page read their runs by it.
"""

from collections.abc import Iterable

import pandas as pd

from longterm.analysis import published
from longterm.analysis.identity import one_setting


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
    """`best_over_lrs` for every cell (`keys`) and seed. A cell joins runs of one setting but
    their learning rates and seeds, a race's rivals at their capped epoch limits
    (analysis/identity.py); runs of another budget, recipe or model key are refused in one line
    (MixedSettingsError)."""
    if runs.empty:
        return pd.DataFrame()
    one_setting(runs, keys)
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
