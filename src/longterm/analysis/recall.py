"""Recall against state size (zoology's headline figure, Arora et al. 2023, Figure 2): the
multi-query associative recall (MQAR) sweep's runs as a table per setting, a figure and the
published statements checked (longterm.analysis.recall_checks).

    python -m longterm.analysis.recall runs/recall --out docs/recall.md

The sweep is longterm.experiments.recall_runs (conf/experiment/recall.yaml): a learning-rate race
per model, width and setting, each in its own sweep directory; the directories given may hold
those (result.json files are found at any depth). Per setting (T0, key-value pairs), model and
width: the state size (numbers carried per sequence at inference, at the training width), the
parameters, the race's winner (best validation accuracy over the learning rates, then fewer
updates) and its learning rate and updates, and the seeds. Writes the page and, beside it,
`<page>/recall_vs_state_size.png`: accuracy against the state size on a log axis, a panel per
setting, a line per model joining its widths, attention models dashed.
"""

import shlex
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from longterm.analysis.formats import pct  # noqa: E402
from longterm.analysis.page_cli import page_cli  # noqa: E402
from longterm.analysis.provenance import distinct, process_minutes, sweep_commands  # noqa: E402
from longterm.analysis.recall_checks import (  # noqa: E402
    ATTENTION,
    RULE,
    ZOOLOGY,
    ZOOLOGY_CONFIG,
    ZOOLOGY_SETTING,
    check_rows,
    complete,
)
from longterm.analysis.runs import load_runs  # noqa: E402

FIGURE = "recall_vs_state_size.png"
SWEEP = "python -m longterm.experiments.recall_runs --run"
GROUP = ["T0", "kv", "model", "width"]


def load(dirs: list[Path]) -> pd.DataFrame:
    """The finished MQAR runs under `dirs` (analysis.runs), with their width, key-value pairs and
    race (the sweep directory holding the run)."""
    runs = load_runs(dirs)
    if runs.empty:
        return runs
    runs = runs[runs.task == "mqar"]
    return runs.assign(
        width=[c["model"]["dim"] for c in runs.config],
        kv=[c["task"]["params"]["kv_pairs"] for c in runs.config],
        race=[str(Path(d).parent) for d in runs.run_dir],
    )


def winners(runs: pd.DataFrame) -> pd.DataFrame:
    """Each race's winner per seed: the best accuracy, then the fewest updates, then the larger
    learning rate (the race's leader)."""
    ordered = runs.sort_values(["best_acc", "updates", "lr"], ascending=[False, True, False])
    return ordered.drop_duplicates([*GROUP, "seed"]).sort_values([*GROUP, "seed"])


def points(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per setting, model and width: state size, parameters, accuracy (the winners' mean
    over seeds), the winning learning rates and most updates, seeds, runs."""
    won = winners(runs).groupby(GROUP)
    table = won.agg(
        state=("state_size", "max"),
        params=("n_params", "max"),
        acc=("best_acc", "mean"),
        lr=("lr", lambda s: ", ".join(map(rate, sorted(set(s))))),
        updates=("updates", "max"),
        seeds=("seed", "nunique"),
    )
    return table.join(runs.groupby(GROUP).size().rename("runs")).reset_index()


def rate(lr: float) -> str:
    """A learning rate as the run names write it: 0.003 -> '3e-3'."""
    return f"{lr:.0e}".replace("e-0", "e-")


def model_order(model: str) -> tuple[bool, str]:
    """Attention models first, then the rest, each by name."""
    return (model not in ATTENTION, model)


def setting_table(p: pd.DataFrame) -> str:
    p = p.assign(order=p.model.map(model_order)).sort_values(["order", "width"])
    table = pd.DataFrame(
        {
            "model": p.model + p.model.map(lambda m: " (attention)" if m in ATTENTION else ""),
            "width D": p.width,
            "state size": p.state.map(lambda n: "–" if pd.isna(n) else f"{int(n):,}"),
            "parameters": p.params.map("{:,}".format),
            "best val acc (%)": p.acc.map(pct),
            "lr": p.lr,
            "updates": p.updates.map("{:,}".format),
            "seeds": p.seeds,
            "runs": p.runs,
        }
    )
    return table.to_markdown(index=False, disable_numparse=True)


def plot(p: pd.DataFrame, path: Path) -> None:
    """Accuracy against state size (log), a panel per setting, a line per model over its widths;
    attention models dashed with squares. No software metadata: the same points, the same bytes."""
    settings = sorted(set(zip(p.T0, p.kv, strict=True)))
    fig, axes = plt.subplots(1, len(settings), figsize=(4.5 * len(settings), 3.8), sharey=True)
    axes = [axes] if len(settings) == 1 else list(axes)
    models = sorted(p.model.unique(), key=model_order)
    colors = {m: plt.get_cmap("tab20")(i % 20) for i, m in enumerate(models)}
    for ax, (T0, kv) in zip(axes, settings, strict=True):
        for m in models:
            own = p[(p.T0 == T0) & (p.kv == kv) & (p.model == m)].sort_values("state")
            attention = m in ATTENTION
            style = {"ls": "--", "marker": "s"} if attention else {"ls": "-", "marker": "o"}
            label = f"{m} (attention)" if attention else m
            ax.plot(own.state, own.acc, color=colors[m], ms=4, label=label, **style)
        ax.set(xscale="log", ylim=(0, 1.02), title=f"T0 = {T0}, {kv} key-value pairs")
        ax.set_xlabel("state size (numbers per sequence)")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("best validation accuracy")
    legend = {}  # label -> handle, over every panel (a model may be drawn in one only)
    for ax in axes:
        legend |= {label: h for h, label in zip(*ax.get_legend_handles_labels(), strict=True)}
    labels = sorted(legend, key=lambda label: model_order(label.split()[0]))
    fig.legend([legend[label] for label in labels], labels, loc="center left",
               bbox_to_anchor=(1.0, 0.5), fontsize=8)  # fmt: skip
    fig.tight_layout()
    fig.savefig(path, dpi=90, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)


def config_values(runs: pd.DataFrame, *keys: str) -> list:
    """The distinct values of a config entry over the runs that have it (a one-layer recurrent
    model has no `model.layers`), sorted."""
    values = set()
    for c in runs.config:
        for k in keys:
            c = c.get(k) if isinstance(c, dict) else None
        if c is not None:
            values.add(c)
    return sorted(values)


def joined(values: list) -> str:
    """Whole numbers, comma-separated: `32, 64`."""
    return ", ".join(f"{int(v):,}" for v in values)


def setting_rows(runs: pd.DataFrame) -> str:
    """Where the runs' settings (read from their configs) meet zoology's Figure 2 sweep."""
    pairs = sorted(set(zip(runs.T0, runs.kv, strict=True)))
    batches = config_values(runs, "data", "batch_size")
    ours = {
        "vocabulary": joined(config_values(runs, "task", "params", "vocab")),
        "lengths (key-value pairs)": ", ".join(f"{t} ({k})" for t, k in pairs),
        "widths D": joined(sorted(runs.width.unique().tolist())),
        "layers": joined(config_values(runs, "model", "layers")),
        "batch": f"{joined(batches)} sequences",
        "training": f"at most {runs.updates.max():,} updates "
        f"({max(batches) * runs.updates.max():,} sequences, fresh each batch); a run stops at "
        "100%",
        "learning rates": ", ".join(map(rate, sorted(runs.lr.unique()))) + " (a race)",
        "evaluation": f"{joined(config_values(runs, 'data', 'val_size'))} sequences",
    }
    table = pd.DataFrame(
        {"": list(ours), "here (the runs' configs)": list(ours.values())}
        | {"zoology (its Figure 2 sweep)": [ZOOLOGY_SETTING[k] for k in ours]}
    )
    return table.to_markdown(index=False, disable_numparse=True)


def commands(runs: pd.DataFrame) -> str:
    """The sweep's command, then each race's recorded commands (its sweep.json, or while it
    runs, its multiruns' commands.json)."""
    lines = [SWEEP]
    for race, g in runs.groupby("race"):
        lines += distinct(sweep_commands(Path(race), g.run_dir))
    return "\n".join(lines)


def provenance(runs: pd.DataFrame) -> str:
    commits = ", ".join(sorted(set(runs.commit.astype(str))))
    return (
        f"{len(runs)} runs in {runs.race.nunique()} race(s); commit(s) {commits}; "
        f"{'; '.join(sorted(set(runs.machine)))}; "
        f"{runs.wall_time_s.sum() / 60:.1f} minutes of training in the runs (sum of their wall "
        f"times), {process_minutes(runs):.1f} in their processes."
    )


REPORT = """# Recall against state size

Generated by `{command}` from the runs' `result.json` files (the sweep: `{sweep}`,
conf/experiment/recall.yaml). Multi-query associative recall (`task=mqar`, zoology's MQAR) read at
every query step, each sequence model of the framework at each width, the best of the learning
rates per point: zoology's Figure 2 ([Arora et al. 2023]({zoology}), accuracy against the model
width at each length), drawn here against the state size (the numbers a model carries per sequence
at inference after the training width, docs/models.md) as the Based paper's MQAR plots do.

## Published statements, checked here

**Rule.** {rule}

{checks}

{body}"""

BODY = """## The figure

![accuracy against state size]({figure})

## Where the settings differ from zoology's

The sweep is CPU-sized; zoology's values are those of its [Figure 2 sweep]({config}).

{setting}

{tables}

## Commands

```
{commands}
```

{provenance}
"""

NO_RUNS = """## Runs

No finished runs under the given directories: every check above says so. Run the sweep (`{sweep}`)
and regenerate this page with the command at the top.
"""


def report(runs: pd.DataFrame, dirs: list[Path], out: Path | None) -> str:
    """The page; with runs and `out`, the figure beside it (`<out without .md>/FIGURE`)."""
    command = shlex.join(
        ["python", "-m", "longterm.analysis.recall", *map(str, dirs)]
        + (["--out", str(out)] if out else [])
    )
    p = points(runs) if not runs.empty else pd.DataFrame(columns=[*GROUP, "state", "acc"])
    kept, partial = complete(p)
    checks = pd.DataFrame(check_rows(kept)).to_markdown(index=False, disable_numparse=True)
    if partial:
        checks += "\n\nLeft out of the checks, run in part: " + "; ".join(partial) + "."
    body = NO_RUNS.format(sweep=SWEEP)
    if not runs.empty:
        figure = Path(out.stem if out else ".") / FIGURE
        if out:
            (out.parent / figure).parent.mkdir(parents=True, exist_ok=True)
            plot(p, out.parent / figure)
        tables = "\n\n".join(
            f"## T0 = {T0}, {kv} key-value pairs\n\n" + setting_table(g)
            for (T0, kv), g in p.groupby(["T0", "kv"])
        )
        body = BODY.format(
            figure=figure,
            config=ZOOLOGY_CONFIG,
            setting=setting_rows(runs),
            tables=tables,
            commands=commands(runs),
            provenance=provenance(runs),
        )
    return REPORT.format(
        command=command, sweep=SWEEP, zoology=ZOOLOGY, rule=RULE, checks=checks, body=body
    )


def main(argv: list[str] | None = None) -> None:
    page_cli(__doc__, load, report, argv, empty="warn")


if __name__ == "__main__":
    main()
