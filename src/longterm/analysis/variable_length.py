"""The variable-length experiment (§2.3) from a table of runs: final accuracy on the paper's
100-length test set, per task, pool and learning rate, over seeds, beside the paper's value."""

import pandas as pd

from longterm.analysis import published
from longterm.analysis.identity import one_setting
from longterm.analysis.seeds import protocol_note, spread

ROW = ["task", "pool", "lr"]  # a row of the table: its runs are the seeds


def variable_length_runs(runs: pd.DataFrame) -> pd.DataFrame:
    """The §2.3 runs, one per task, pool, seed and learning rate: of a run continued to a larger
    epoch limit (longterm.store.continue_run), the longest, since the shorter ones are its start.
    A row (task, pool, learning rate) joins the runs of one setting but their seeds: others (the
    padding masked, another epoch limit or recipe) are refused in one line (MixedSettingsError,
    analysis/identity.py)."""
    v = runs[(runs.data == "variable") & (runs.model == "feedforward")]
    same = ["task", "pool", "seed", "lr", "mask_padding"]
    v = v.sort_values("epochs").drop_duplicates(same, keep="last").sort_values(same)
    one_setting(v, ROW, within=("seed",))
    return v


def variable_length(runs: pd.DataFrame) -> pd.DataFrame:
    """§2.3: final accuracy on the 100-length test set, per task, pool and learning rate, over
    seeds (the paper's value is for its one run, whatever the learning rate)."""
    v = variable_length_runs(runs)
    if v.empty:
        return pd.DataFrame()
    rows = []
    for (task, pool, lr), g in v.groupby(ROW):
        rows.append(
            {
                "task": task,
                "pool": pool,
                "seeds": g.seed.nunique(),
                "lr": f"{lr:.0e}",
                "epochs": spread(g.epochs.median(), g.epochs.min(), g.epochs.max()),
                "final_acc_mean": g.final_acc.mean(),
                "final_acc_min": g.final_acc.min(),
                "final_acc_max": g.final_acc.max(),
                "best_acc_mean": g.best_acc.mean(),
                "diverged": int((g.status == "diverged").sum()),
                "paper": None if note(g) else published.VARIABLE_LENGTH.get((task, pool)),
                "paper_note": note(g),
                "wall_per_epoch_s": (g.wall_time_s / g.epochs_trained.clip(lower=1)).median(),
            }
        )
    return pd.DataFrame(rows)


def note(runs: pd.DataFrame) -> str | None:
    """Why these runs cannot stand beside the paper's value: an epoch of other than 1000 updates,
    or a test set of other than its 100 lengths x 10 sequences; None when they followed it."""
    protocols = {
        (d["batches_per_epoch"], d["val_batches"] * d["val_batch_size"])
        for d in (c["data"] for c in runs.get("config", []))
    }
    return protocol_note(protocols)


def percent(value: float | None) -> str:
    return "" if value is None or pd.isna(value) else f"{value:.1%}"


def variable_length_markdown(v: pd.DataFrame) -> str:
    lines = [
        "## Variable lengths 50–10000: accuracy on the paper's 100-length test set",
        "",
        "Final accuracy: after the last epoch trained, mean [min–max] over seeds. The paper's",
        f"is after {published.EPOCH_LIMIT} epochs, one run.",
        "",
        "| task | pool | seeds | lr | epochs | final accuracy | best accuracy | paper | s/epoch |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in v.itertuples(index=False):
        acc = (
            spread(r.final_acc_mean, r.final_acc_min, r.final_acc_max, "{:.1%}")
            if pd.notna(r.final_acc_mean)
            else "not validated"
        )
        lines.append(
            f"| {r.task} | {r.pool} | {r.seeds} | {r.lr} | {r.epochs} | {acc} | "
            f"{percent(r.best_acc_mean)} | {r.paper_note or percent(r.paper)} | "
            f"{r.wall_per_epoch_s:.0f} |"
        )
    return "\n".join(lines) + "\n"


def by_length_markdown(by_length: pd.DataFrame) -> str:
    """The mean accuracy over the shorter and the longer half of the test lengths, per task, pool
    and learning rate, over seeds, from analysis.evaluate.accuracy_by_length (a row per run and
    length)."""
    lengths = sorted(by_length.length.unique())
    mid = len(lengths) // 2
    half = by_length.length.ge(lengths[mid]).map({False: "short", True: "long"})
    h = by_length.groupby(["task", "pool", "lr", half]).acc.mean().unstack().reset_index()
    short, long = f"{lengths[0]}–{lengths[mid - 1]}", f"{lengths[mid]}–{lengths[-1]}"
    lines = [
        "",
        "## Accuracy by test length: the shorter and the longer half",
        "",
        "From each run's last checkpoint (accuracy_by_length.csv): the mean accuracy over each",
        "half of the test lengths, mean over seeds.",
        "",
        f"| task | pool | lr | lengths {short} | lengths {long} |",
        "|---|---|---|---|---|",
    ]
    for r in h.itertuples(index=False):
        lines.append(
            f"| {r.task} | {r.pool} | {r.lr:.0e} | {percent(r.short)} | {percent(r.long)} |"
        )
    return "\n".join(lines) + "\n"
