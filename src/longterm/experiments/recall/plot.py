"""The recall page's figure (recall/page.py): accuracy against state size, a panel per setting
(T0, key-value pairs), each seed of each point its own marker, attention models squares, with
chance and the 1/k level drawn across each panel; and the order and labels of models that the
page's tables share with it."""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from longterm.experiments.recall.checks import ATTENTION  # noqa: E402

FIGURE = "recall_vs_state_size.png"


def model_order(p: pd.DataFrame):
    """A sort key of models: attention first, then the rest, each by name."""
    kind = dict(zip(p.model, p.kind, strict=False)) if "kind" in p else {}
    return lambda model: (kind.get(model) != ATTENTION, model)


def label(model: str, kind: str) -> str:
    """`transformer (attention)`; a model of unknown kind says so."""
    return model + {ATTENTION: " (attention)", "unknown": " (state growth unknown)"}.get(kind, "")


def plot(p: pd.DataFrame, path: Path, chances: dict | None = None) -> None:
    """Accuracy against state size (log), a panel per setting, each seed of each point its own
    marker (no line through means), attention models squares; chance and 1/k (one of the k pairs
    recalled) across each panel. No software metadata: the same points, the same bytes."""
    settings = sorted(set(zip(p.T0, p.kv, strict=True)))
    fig, axes = plt.subplots(1, len(settings), figsize=(4.5 * len(settings), 3.8), sharey=True)
    axes = [axes] if len(settings) == 1 else list(axes)
    order = model_order(p)
    models = sorted(p.model.unique(), key=order)
    kind = dict(zip(p.model, p.kind, strict=False))
    colors = {m: plt.get_cmap("tab20")(i % 20) for i, m in enumerate(models)}
    for ax, (T0, kv) in zip(axes, settings, strict=True):
        for m in models:
            own = p[(p.T0 == T0) & (p.kv == kv) & (p.model == m)]
            xs = [s for s, c in zip(own.state, own.cell, strict=True) for _ in c.values]
            ys = [v for c in own.cell for v in c.values]
            marker = "s" if kind.get(m) == ATTENTION else "o"
            ax.plot(xs, ys, ls="none", marker=marker, color=colors[m], ms=4, alpha=0.8,
                    label=label(m, kind.get(m, "")))  # fmt: skip
        ax.axhline(1 / kv, color="0.4", ls=":", lw=1, label="1/k: one of the k pairs")
        level = (chances or {}).get((T0, kv))
        if level is not None:
            ax.axhline(level, color="0.6", ls="--", lw=1, label="chance (constant predictor)")
        ax.set(xscale="log", ylim=(0, 1.02), title=f"T0 = {T0}, {kv} key-value pairs")
        ax.set_xlabel("state size (numbers per sequence)")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("best validation accuracy (each seed)")
    legend = {}  # label -> handle, over every panel (a model may be drawn in one only)
    for ax in axes:
        legend |= {text: h for h, text in zip(*ax.get_legend_handles_labels(), strict=True)}
    lines = ("1/k", "chance")  # the reference lines after the models
    labels = sorted(legend, key=lambda t: (t.startswith(lines), order(t.split()[0])))
    fig.legend([legend[text] for text in labels], labels, loc="center left",
               bbox_to_anchor=(1.0, 0.5), fontsize=8)  # fmt: skip
    fig.tight_layout()
    fig.savefig(path, dpi=90, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)
