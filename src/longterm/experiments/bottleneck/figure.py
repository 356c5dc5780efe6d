"""The fixed-state bottleneck's figure, docs/bottleneck/recall.png: recall against distance
for each memory, the published points of the state beside it."""

from pathlib import Path

import pandas as pd

from longterm.experiments.bottleneck.measure import PUBLISHED, Z, label


def plot(df: pd.DataFrame, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.2))
    for (memory, d, lam), group in df.groupby(["memory", "d", "lambda"], dropna=False):
        lam = None if pd.isna(lam) else lam
        style = "--" if memory == "attention" else "-"
        ax.plot(group.distance, 100 * group.recall, style, label=label(memory, d, lam))
    for (memory, _, _, distance), value in PUBLISHED.items():
        if memory == "state":
            ax.plot(distance, 100 * value, "kx")
    ax.plot([], [], "kx", label="published (state)")
    ax.set(xlabel="distance back from the last token", ylabel="recall %", ylim=(-2, 102))
    ax.set_title(f"Recognising a token from a fixed state of d numbers (z = {Z})")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
