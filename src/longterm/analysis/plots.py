"""The collector's figures: epochs to 100% against T0, learning curves, accuracy by length."""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from longterm.analysis import published  # noqa: E402
from longterm.analysis.events import curve  # noqa: E402
from longterm.analysis.variable_length import variable_length_runs  # noqa: E402


def plot_epochs(cells: pd.DataFrame, path: Path) -> None:
    tasks = ["addition", "multiplication"]
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    for ax, task in zip(axes, tasks, strict=True):
        for pool, color in (("attention", "C0"), ("mean", "C1")):
            c = cells[(cells.task == task) & (cells.pool == pool) & (cells.solved_seeds > 0)]
            c = c.sort_values("T0")
            err = [c.epochs_median - c.epochs_min, c.epochs_max - c.epochs_median]
            ax.errorbar(
                c.T0,
                c.epochs_median,
                yerr=err,
                color=color,
                marker="o",
                capsize=3,
                label=f"{pool} (ours)",
            )
            paper = {t: e for t, e in published.TABLE1[(task, pool)].items() if isinstance(e, int)}
            ax.plot(
                list(paper),
                list(paper.values()),
                color=color,
                ls="--",
                marker="o",
                mfc="none",
                label=f"{pool} (paper)",
            )
        ax.set(xscale="log", yscale="log", title=task, xlabel="T0")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("epochs to 100% (median, min–max over seeds)")
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_learning_curves(seeds: pd.DataFrame, path: Path) -> str | None:
    """Training loss of each seed's winning run (TensorBoard's train/loss), one colour per T0.
    Returns why the figure was not drawn, or None."""
    tasks, pools = ["addition", "multiplication"], ["attention", "mean"]
    losses = {}  # (task, pool) -> [(T0, loss curve)], one curve per seed, also when lrs tie
    for s in seeds.itertuples(index=False):
        loss = curve(s.run_dirs[0], "train/loss") if s.run_dirs else pd.Series(dtype=float)
        if (loss > 0).any():
            losses.setdefault((s.task, s.pool), []).append((s.T0, loss[loss > 0]))
    if not losses:
        return "no run that the learning-rate rule chose logged train/loss"
    fig, axes = plt.subplots(2, 2, figsize=(10, 7), sharex=True, sharey=True)
    colors = {T0: f"C{i}" for i, T0 in enumerate(sorted(seeds.T0.unique()))}
    for (i, task), (j, pool) in ((a, b) for a in enumerate(tasks) for b in enumerate(pools)):
        ax = axes[i][j]
        for T0, loss in losses.get((task, pool), []):
            ax.plot(loss.index, loss.values, color=colors[T0], alpha=0.6, lw=1)
        ax.set(title=f"{task}, {pool}", xscale="log", yscale="log")
        ax.grid(True, which="both", alpha=0.3)
    for T0, color in colors.items():
        axes[0][0].plot([], [], color=color, label=f"T0={T0}")
    axes[0][0].legend(fontsize=8)
    for ax in axes[:, 0]:
        ax.set_ylabel("training loss (MSE)")
    for ax in axes[1]:
        ax.set_xlabel("update")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return None


def task_panels(data: pd.DataFrame) -> tuple[plt.Figure, dict[str, plt.Axes]]:
    """One panel per task in `data`, side by side, sharing the accuracy axis."""
    tasks = sorted(data.task.unique())
    fig, axes = plt.subplots(1, len(tasks), figsize=(5 * len(tasks), 4), sharey=True, squeeze=False)
    return fig, dict(zip(tasks, axes[0], strict=True))


def save_panels(fig: plt.Figure, axes: dict[str, plt.Axes], ylabel: str, path: Path) -> None:
    for ax in axes.values():
        ax.grid(True, alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=8)
    next(iter(axes.values())).set_ylabel(ylabel)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_variable_length_curves(runs: pd.DataFrame, path: Path) -> str | None:
    """Validation accuracy after each epoch (result.json's history) of the §2.3 runs, with the
    paper's accuracy after its 100 epochs as a dashed line. Returns why the figure was not
    drawn, or None."""
    v = variable_length_runs(runs)
    if not any(len(h) for h in v.history):
        return "no variable-length run was validated"
    fig, axes = task_panels(v)
    for task, ax in axes.items():
        drawn = set()  # the paper's line once per pool, in the colour of its first learning rate
        for i, ((pool, lr), g) in enumerate(v[v.task == task].groupby(["pool", "lr"])):
            for r in g.itertuples(index=False):
                epochs = range(1, len(r.history) + 1)
                label = f"{pool}, lr {lr:.0e}, seed {r.seed}"
                ax.plot(epochs, r.history, color=f"C{i}", marker=".", label=label)
            paper = published.VARIABLE_LENGTH.get((task, pool))
            if paper is not None and pool not in drawn:
                ax.axhline(paper, color=f"C{i}", ls="--", lw=1)
                drawn.add(pool)
        ax.set(title=f"{task} (dashed: the paper after 100 epochs)", xlabel="epoch", ylim=(0, 1.02))
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    save_panels(fig, axes, "validation accuracy (100 test lengths)", path)
    return None


def plot_accuracy_by_length(data: pd.DataFrame, path: Path) -> None:
    """Accuracy on each test length (analysis.evaluate.accuracy_by_length), per pool and
    learning rate, mean over seeds."""
    fig, axes = task_panels(data)
    for task, ax in axes.items():
        for (pool, lr), g in data[data.task == task].groupby(["pool", "lr"]):
            mean = g.groupby("length").acc.mean()
            label = f"{pool}, lr {lr:.0e} (mean over seeds)"
            ax.plot(mean.index, mean.values, marker=".", label=label)
        ax.set(title=task, xlabel="evaluation length", ylim=(0, 1.02))
    save_panels(fig, axes, "accuracy (10 sequences per length)", path)


def plot_paper_position(table1: pd.DataFrame, variable: pd.DataFrame, path: Path) -> None:
    """Every seed against the paper's run (analysis.paper_position): epochs to 100% per T0 for
    each task, attention and mean side by side (a seed that did not solve is drawn at the top of
    the panel, hollow); then the accuracies: Table 1's cells the paper did not solve, and the
    variable-length runs after their last epoch. Dots: our seeds; black crosses: the paper."""
    epochs = table1[table1.measure == "epochs"]
    accuracy = table1[table1.measure == "accuracy"]
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.5), gridspec_kw={"width_ratios": [3, 3, 4]})
    offsets = {"attention": -0.15, "mean": 0.15}
    for ax, task in zip(axes[:2], ["addition", "multiplication"], strict=True):
        cells = epochs[epochs.task == task]
        T0s = sorted(cells.T0.unique())
        top = max([v for vs in cells.ours for v in vs if v is not None] + [1]) * 2
        for pool, color in (("attention", "C0"), ("mean", "C1")):
            for r in cells[cells.pool == pool].itertuples(index=False):
                x = T0s.index(r.T0) + offsets[pool]
                for i, v in enumerate(r.ours):  # seeds side by side, so that equal ones show
                    solved = v is not None and pd.notna(v)
                    ax.plot(
                        x + 0.06 * (i - (len(r.ours) - 1) / 2), v if solved else top, "o",
                        color=color, alpha=0.7, mfc=color if solved else "none",
                    )  # fmt: skip
                ax.plot(x, r.paper, "x", color="black", ms=9, mew=2)
            ax.plot([], [], "o", color=color, label=f"{pool}: our seeds")
        ax.plot([], [], "x", color="black", ms=9, mew=2, label="the paper's run")
        ax.set(title=task, yscale="log", xlabel="T0", ylabel="epochs to 100%")
        ax.set_xticks(range(len(T0s)), [str(t) for t in T0s])
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    ax = axes[2]
    labels = [f"{r.task[:4]}. {r.pool}\nT0={r.T0}, limit" for r in accuracy.itertuples()]
    labels += [f"{r.task[:4]}. {r.pool}\nvariable, {r.lr:.0e}" for r in variable.itertuples()]
    rows = [*accuracy.itertuples(index=False), *variable.itertuples(index=False)]
    for x, r in enumerate(rows):
        color = "C0" if r.pool == "attention" else "C1"
        spread = [x + 0.08 * (i - (len(r.ours) - 1) / 2) for i in range(len(r.ours))]
        ax.plot(spread, r.ours, "o", color=color, alpha=0.7)
        ax.plot(x, r.paper, "x", color="black", ms=9, mew=2)
    ax.set_xticks(range(len(labels)), labels, fontsize=7, rotation=45, ha="right")
    ax.set(title="accuracy: unsolved cells and variable lengths", ylabel="accuracy", ylim=(0, 1.02))
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
