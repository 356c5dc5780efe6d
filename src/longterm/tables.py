"""The paper's tables from a table of runs (longterm.sweeps.load_runs): Table 1 (fixed lengths,
§2.2), the variable-length result (§2.3) and the masking comparison, as DataFrames and Markdown.

Each seed repeats the paper's protocol: of its learning rates, the one that solves in the fewest
epochs wins, or, when none solves, the best accuracy at the epoch limit. A cell is then the
median and range over seeds.
"""

from collections.abc import Iterable

import pandas as pd

from longterm import paper

CELL = ["task", "pool", "T0"]
GPU_T0 = 5000  # from here on a cell's runs take hours on a 2-core CPU (docs/performance.md)


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
            # A run continued to a larger limit (longterm.continue_run) counts its whole chain:
            # the runs of the same learning rate.
            "best_wall_s": runs[runs.lr.isin(best.lr)].groupby("lr").wall_time_s.sum().min()
            if len(best)
            else None,
            "grid_wall_s": runs.wall_time_s.sum(),
        }
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
        acc = spread(c.unsolved_acc_median, c.unsolved_acc_min, c.unsolved_acc_max, "{:.1%}")
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
    cells["paper"] = [paper.TABLE1.get((t, p), {}).get(T0) for t, p, T0 in cells[CELL].values]
    return cells


def table1_markdown(cells: pd.DataFrame) -> str:
    rows = [(t, p) for t in ("addition", "multiplication") for p in ("attention", "mean")]
    t0s = sorted(set(paper.T0S) | set(cells.T0))
    by_cell = {(c.task, c.pool, c.T0): c for c in cells.itertuples(index=False)}
    missing = []

    def grid(render) -> list[str]:
        lines = ["| task | pool | " + " | ".join(f"T0={t}" for t in t0s) + " |"]
        lines.append("|---|---|" + "---|" * len(t0s))
        for task, pool in rows:
            out = []
            for T0 in t0s:
                c = by_cell.get((task, pool, T0))
                out.append(render(c, task, pool, T0))
            lines.append(f"| {task} | {pool} | " + " | ".join(out) + " |")
        return lines

    def epochs(c, task, pool, T0) -> str:
        published = paper_text(paper.TABLE1.get((task, pool), {}).get(T0))
        if c is None:
            missing.append((task, pool, T0))
            return f"{'GPU' if T0 >= GPU_T0 else 'not run'} ({published})"
        return f"{cell_text(pd.Series(c._asdict()))} ({published})"

    def chosen(c, *_) -> str:
        return "" if c is None else c.lr_chosen

    def cost(c, *_) -> str:
        return "" if c is None else f"{c.best_run_wall_s:.0f} s / {c.grid_wall_s / 60:.1f} min"

    def seeds(c, *_) -> str:
        if c is None:
            return ""
        diverged = f", {c.diverged_runs} diverged" if c.diverged_runs else ""
        return f"{c.seeds} × {c.lrs_per_seed} lr{diverged}"

    out = [
        "## Epochs to 100% validation accuracy (paper's value in brackets)",
        "",
        "Each seed takes its best learning rate, as the paper did for its single run; a cell is",
        "the median [min–max] over seeds of the epochs that learning rate needed. *Italic*: not",
        "solved within the epoch limit, the accuracy then (the paper's greyed-out values).",
        "",
        *grid(epochs),
        "",
        "## Learning rate chosen (how many seeds it won; ties count for each)",
        "",
        *grid(chosen),
        "",
        "## Seeds and learning rates run",
        "",
        *grid(seeds),
        "",
        "## Cost: wall time of the winning run (median over seeds) / of all the cell's runs",
        "",
        "A run continued to a larger epoch limit counts with the runs it continued.",
        "",
        *grid(cost),
        "",
    ]
    gpu = sorted({T0 for _, _, T0 in missing if T0 >= GPU_T0})
    if gpu:
        out += [
            "Cells marked GPU were not run on this machine. On a GPU machine:",
            "",
            "    python -m longterm.lr_race --sweep-dir outputs/table1_gpu "
            f"--T0 {' '.join(map(str, gpu))} --seeds 1 2 3",
            "",
        ]
    limits = sorted(set(cells.limit))
    out.append(f"Epoch limit: {', '.join(map(str, limits))} (the paper's: {paper.EPOCH_LIMIT}).")
    return "\n".join(out) + "\n"


def variable_length_runs(runs: pd.DataFrame) -> pd.DataFrame:
    """The §2.3 runs, one per task, pool, seed and learning rate: of a run continued to a larger
    epoch limit (longterm.continue_run), the longest, since the shorter ones are its start."""
    v = runs[(runs.data == "variable") & (runs.model == "feedforward")]
    same = ["task", "pool", "seed", "lr", "mask_padding"]
    return v.sort_values("epochs").drop_duplicates(same, keep="last").sort_values(same)


def variable_length(runs: pd.DataFrame) -> pd.DataFrame:
    """§2.3: final accuracy on the 100-length test set, per task and pool, over seeds."""
    v = variable_length_runs(runs)
    if v.empty:
        return pd.DataFrame()
    rows = []
    for (task, pool), g in v.groupby(["task", "pool"]):
        rows.append(
            {
                "task": task,
                "pool": pool,
                "seeds": g.seed.nunique(),
                "lr": ", ".join(f"{lr:.0e}" for lr in sorted(g.lr.unique())),
                "epochs": spread(g.epochs.median(), g.epochs.min(), g.epochs.max()),
                "final_acc_mean": g.final_acc.mean(),
                "final_acc_min": g.final_acc.min(),
                "final_acc_max": g.final_acc.max(),
                "best_acc_mean": g.best_acc.mean(),
                "diverged": int((g.status == "diverged").sum()),
                "paper": paper.VARIABLE_LENGTH.get((task, pool)),
                "wall_per_epoch_s": (g.wall_time_s / g.epochs_trained.clip(lower=1)).median(),
            }
        )
    return pd.DataFrame(rows)


def variable_length_markdown(v: pd.DataFrame) -> str:
    lines = [
        "## Variable lengths 50–10000: accuracy on the paper's 100-length test set",
        "",
        "Final accuracy: after the last epoch trained, mean [min–max] over seeds. The paper's",
        f"is after {paper.EPOCH_LIMIT} epochs, one run.",
        "",
        "| task | pool | seeds | lr | epochs | final accuracy | best accuracy | paper | s/epoch |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in v.itertuples(index=False):
        acc = spread(r.final_acc_mean, r.final_acc_min, r.final_acc_max, "{:.1%}")
        lines.append(
            f"| {r.task} | {r.pool} | {r.seeds} | {r.lr} | {r.epochs} | {acc} | "
            f"{r.best_acc_mean:.1%} | {r.paper:.1%} | {r.wall_per_epoch_s:.0f} |"
        )
    return "\n".join(lines) + "\n"


def masking(runs: pd.DataFrame) -> pd.DataFrame:
    """Cells run both with and without the padding mask (per-sequence lengths)."""
    fixed = runs[
        (runs.data == "fixed") & (runs.model == "feedforward") & (runs.lengths == "per_sequence")
    ]
    both = fixed.groupby(CELL).mask_padding.transform("nunique") == 2
    if not both.any():
        return pd.DataFrame()
    # Compare like with like: the learning rates the masked runs used.
    masked_lrs = fixed[both & fixed.mask_padding.astype(bool)].groupby(CELL).lr.unique()
    keep = [lr in masked_lrs[tuple(c)] for *c, lr in fixed[both][[*CELL, "lr"]].values]
    same = fixed[both][keep]
    seeds = per_seed(same, [*CELL, "mask_padding"])
    return (
        seeds.groupby([*CELL, "mask_padding"]).apply(summarise, include_groups=False).reset_index()
    )


def masking_markdown(m: pd.DataFrame) -> str:
    lines = [
        "## Padding: masked or not (per-sequence lengths, same learning rates and seeds)",
        "",
        "Epochs to 100%, median [min–max] over seeds; *italic*: accuracy at the limit.",
        "",
        "| task | pool | T0 | lr | seeds | unmasked (paper's code) | masked |",
        "|---|---|---|---|---|---|---|",
    ]
    for (task, pool, T0), g in m.groupby(CELL):
        text = {bool(r.mask_padding): f"{cell_text(r)} (limit {r.limit})" for _, r in g.iterrows()}
        lines.append(
            f"| {task} | {pool} | {T0} | {g.lrs_run.iloc[0]} | {g.seeds.min()} | "
            f"{text.get(False, '')} | {text.get(True, '')} |"
        )
    return "\n".join(lines) + "\n"
