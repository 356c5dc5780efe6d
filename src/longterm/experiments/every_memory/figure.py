"""The figure of docs/every_memory.md: which memory solves which of the paper's problems at which
T0, a panel per task, a row per memory, a column per T0 (Raffel & Ellis 2015, §2.2, Table 1).

A cell is green where every seed solved (its text: the median epochs to 100%), light green where
some did (`s/n` seeds), and where none did a shade of red by the median over seeds of each seed's
best accuracy at the epoch limit (its text); grey where nothing was run. A `*` marks a cell with
fewer seeds run than the fullest cell has, a `‡` one with seeds read at fewer learning rates than
their memory's grid (every_memory/page.py, raced_in_part).
"""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.cm import ScalarMappable  # noqa: E402
from matplotlib.colors import Normalize, to_rgba  # noqa: E402

FIGURE = "solved.png"
NOT_RUN, SOME, EVERY = "#d9d9d9", "#b8e0b0", "#2e8b3a"  # grey, light green, green
UNSOLVED = plt.get_cmap("Reds_r")  # dark at low accuracy


def cell_value(c: pd.Series) -> tuple[str | float, str]:
    """(a colour, or the accuracy that picks one from UNSOLVED; the text) of one cell of
    analysis.seeds.summarise."""
    if c.solved_seeds == c.seeds:
        return EVERY, f"{c.epochs_median:g}"
    if c.solved_seeds:
        return SOME, f"{c.solved_seeds}/{c.seeds}"
    acc = c.unsolved_acc_median
    if pd.isna(acc):  # every run diverged
        return 0.0, "div."
    return acc, f"{acc:.1%}" if acc >= 0.995 else f"{acc:.0%}"  # 99.9% never reads 100%


def plot(cells: pd.DataFrame, tasks: tuple[str, ...], memories: list[str], path: Path) -> None:
    """A panel per task of `cells` (every_memory/page.py, table_cells), the rows `memories` with
    their epoch limit, a column per T0 of the cells. No software metadata: the same cells, the
    same bytes."""
    T0s = sorted(set(cells.T0))
    limits = cells.groupby("memory").limit.max()
    most = cells.seeds.max()
    fig, axes = plt.subplots(1, len(tasks), figsize=(1.0 + 0.75 * len(T0s) * len(tasks), 5.6))
    axes = [axes] if len(tasks) == 1 else list(axes)
    for ax, task in zip(axes, tasks, strict=True):
        own = {(c.memory, c.T0): c for _, c in cells[cells.task == task].iterrows()}
        rgb = np.zeros((len(memories), len(T0s), 4))
        for i, memory in enumerate(memories):
            for j, T0 in enumerate(T0s):
                c = own.get((memory, T0))
                colour, text = cell_value(c) if c is not None else (NOT_RUN, "–")
                text += "*" if c is not None and c.seeds < most else ""
                text += "‡" if c is not None and c.in_part else ""
                rgb[i, j] = UNSOLVED(colour) if isinstance(colour, float) else to_rgba(colour)
                dark = colour == EVERY or (isinstance(colour, float) and colour < 0.5)
                ax.text(j, i, text, ha="center", va="center", fontsize=7,
                        color="white" if dark else "black")  # fmt: skip
        ax.imshow(rgb, aspect="auto")
        ax.set_xticks(range(len(T0s)), [f"{t:,}" for t in T0s], fontsize=8)
        ax.set_yticks(range(len(memories)), [], fontsize=8)
        ax.set(title=task, xlabel="T0")
    axes[0].set_yticks(
        range(len(memories)),
        [f"{m} (≤{int(limits[m])} ep.)" if m in limits else m for m in memories],
        fontsize=8,
    )
    scale = ScalarMappable(Normalize(0, 1), UNSOLVED)
    fig.colorbar(scale, ax=axes, label="unsolved: accuracy at the epoch limit (median over seeds)")
    fig.suptitle(
        "green: every seed solved (median epochs to 100%); light green: some seeds (solved/run); "
        "red: none (accuracy); *: fewer seeds run; ‡: fewer learning rates",
        fontsize=8,
    )
    fig.savefig(path, dpi=90, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)
