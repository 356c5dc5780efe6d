"""The runs under sweep directories as one table, a row per result.json, each named by its
architecture: what the table generators of experiments/order_battery and
experiments/memory_comparison read (and the every-memory page its memories' names), with the
parts of their prose they share (the setting of the runs, the commands, the command line)."""

from collections.abc import Callable
from pathlib import Path

import pandas as pd

from longterm.analysis.page_cli import page_cli
from longterm.analysis.runs import load_runs
from longterm.tasks import default_width

ARCHS = {  # (model, pool) -> the name of the architecture in tables, in table order
    ("feedforward", "attention"): "attention",
    ("feedforward", "mean"): "mean",
    ("rnn", "last"): "rnn",
    ("lstm", "last"): "lstm",
    ("linear_memory", "last"): "linear_memory",
    ("transformer", "last"): "transformer",
    ("all_attention", "last"): "all_attention",
    ("feedback", "last"): "feedback",
    ("s4d", "last"): "s4d",
    ("hyena", "last"): "hyena",
    ("mamba", "last"): "mamba",
    ("gla", "last"): "gla",
    ("deltanet", "last"): "deltanet",
}


def arch_name(result: dict) -> str:
    """The architecture of a run; all-attention with its number of persistent slots."""
    name = ARCHS.get((result["model"], result["pool"]), f"{result['model']}+{result['pool']}")
    if result["model"] == "all_attention":
        name += f" N={result['config']['model']['n_persistent']}"
    return name


def load(dirs: list[Path]) -> pd.DataFrame:
    """One row per finished run under `dirs` (analysis.runs.load_runs, which warns about the
    others), in the order of ARCHS, then by task and seed."""
    rows = []
    for r in load_runs(dirs).to_dict("records"):
        k = r["config"]["task"]["params"].get("k")
        rows.append(
            {
                "task": r["task"] + (f" k={k}" if k is not None else ""),
                "arch": arch_name(r),
                **{c: r[c] for c in ("seed", "best_acc", "status", "epoch_solved", "updates")},
                **{c: r[c] for c in ("wall_time_s", "n_params", "state_size", "commit")},
                **{c: r[c] for c in ("machine", "loss", "lr")},
                "data": r["config"]["data"],
                "settings": r["settings"],  # what identifies the run (analysis/identity.py)
            }
        )
    rows.sort(key=lambda row: (rank(row["arch"]), row["task"], row["seed"]))
    return pd.DataFrame(rows)


def rank(arch: str) -> tuple[int, str]:
    """Sort key of an architecture name: the order of ARCHS, variants after their model."""
    names = list(ARCHS.values())
    base = arch.split(" ")[0]
    return (names.index(base) if base in names else len(names), arch)


def archs(df: pd.DataFrame) -> list[str]:
    """The architectures of the runs, in table order."""
    return sorted(set(df.arch), key=rank)


def provenance(df: pd.DataFrame) -> str:
    """Runs, commits, machines and the training time they took."""
    return (
        f"{len(df)} runs; commit(s) {', '.join(sorted(set(df.commit.astype(str))))}; "
        f"{'; '.join(sorted(set(df.machine)))};\n"
        f"{df.wall_time_s.sum() / 60:.1f} minutes of training in all."
    )


def setting(df: pd.DataFrame) -> dict:
    """What a table's prose says of its runs: T0, the longest sequence and the batches' width,
    the most updates, the batch and validation sizes (those of the first run), and the
    provenance."""
    first = df.data.iloc[0]
    return {
        "T0": first["T0"],
        "longest": default_width(first["T0"]) - 1,
        "width": default_width(first["T0"]),
        "updates": df.updates.max(),
        "batch_size": first["batch_size"],
        "val_size": first["val_size"],
        "provenance": provenance(df),
    }


def commands(experiment: tuple[str, ...], table: str) -> str:
    """The commands behind a table: the experiment's, one thread each, then the table's own."""
    return "\n".join([*(f"OMP_NUM_THREADS=1 {c}" for c in experiment), table])


def table_cli(
    doc: str, report: Callable[[pd.DataFrame, list[Path], Path | None], str], argv=None
) -> None:
    """The command line of a table generator: sweep directories in, Markdown out (or printed)."""
    page_cli(doc, load, report, argv)
