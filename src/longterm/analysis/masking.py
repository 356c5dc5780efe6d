"""Masking the padding or not (per-sequence lengths): the cells run both ways, compared at the same
learning rates and seeds."""

import pandas as pd

from longterm.analysis.seeds import cell_text, per_seed, summarise
from longterm.analysis.table1 import CELL


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
