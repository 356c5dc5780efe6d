"""Where the recall runs' settings differ from zoology's Figure 2 sweep (docs/recall.md, "Where
the settings differ from zoology's"): every difference of the experiment, the runs' values read
from their configs (a key absent from an older run's config reads as its default then: adam, no
weight decay, no schedule, no clipping, the MLP head, no short convolutions), zoology's from
ZOOLOGY_SETTING. The learning rates say how they ran: a race (longterm.experiments.lr_race, as
the run's sweep.json records) or a grid, each learning rate a run of its own.
"""

import json
from math import ceil
from pathlib import Path

import pandas as pd

from longterm.analysis.formats import joined
from longterm.analysis.runs import config_values as values
from longterm.config.run_names import number
from longterm.store.records import SWEEP_RECORD

RACE = "longterm.experiments.lr_race"

# zoology's Figure 2 sweep as its configs set it (HazyResearch/zoology, commit d88d6f5,
# zoology/experiments/paper_configs/iclr24_zoology_figure2/configs.py, and the model and data
# defaults they use), quantity -> value.
ZOOLOGY_SETTING = {
    "optimizer": "AdamW, weight decay 0.1",
    "schedule": "cosine, stepped per epoch over 64 epochs",
    "learning rates": "np.logspace(-4, -2, 4): 1e-4, 4.6e-4, 2.2e-3, 1e-2 (the best shown)",
    "stop": "above 99% validation accuracy",
    "random fillers (`random_non_queries`)": "false: the steps between pairs and queries are 0",
    "vocabulary": "8,192",
    "lengths (key-value pairs)": "64 (4), 128 (8), 256 (16)",
    "widths D": "64, 128, 256, 512",
    "layers": "2",
    "attention block": "1 head, learned absolute positions, pre-norm, no MLP",
    "head": "linear, tied to the token embeddings",
    "short convolutions (gla, deltanet)": "with",
    "Mamba's dt_rank": "ceil(D / 16)",
    "batch": "512 sequences at lengths up to 128, 256 at 256",
    "sequences seen": "100,000 training sequences × up to 64 epochs (6.4M)",
    "seeds": "one run per learning rate",
    "evaluation": "3,000 sequences",
}


def raced(run_dir: str) -> bool:
    """Whether a run comes from a learning-rate race: its sweep directory's sweep.json records a
    `longterm.experiments.lr_race` command (every other run is its learning rate's own run)."""
    record = Path(run_dir).parent / SWEEP_RECORD
    entries = json.loads(record.read_text()) if record.exists() else []
    return any(RACE in e.get("command", "") for e in entries)


def learning_rates(runs: pd.DataFrame) -> str:
    """The learning rates that ran: those of races (the best of a race shown), those of a grid
    (each its own run over the whole schedule, the best shown)."""
    race = runs.run_dir.map(raced)
    grid = "a grid: each learning rate its own run over the whole schedule, the best shown"
    said = [
        ", ".join(map(number, sorted(runs[ran].lr.unique()))) + f" ({how})"
        for ran, how in ((race, "a race; the best shown"), (~race, grid))
        if ran.any()
    ]
    return "; ".join(said)


def of(runs: pd.DataFrame, models: pd.Series | list) -> pd.DataFrame:
    return runs[runs.model.isin(list(models))]


def attention_block(runs: pd.DataFrame) -> str:
    """Each attention model's encoder with its heads, norm and feed-forward width."""
    said = []
    for model, own in runs.groupby("model"):
        m = own.config.iloc[0]["model"]
        ffn = f", feed-forward {m['d_ff']}" if "d_ff" in m else ""
        slots = f", {m['n_persistent']} persistent slots" if "n_persistent" in m else ""
        norm = values(own, "model", "norm")
        norm = f", {joined(norm)}-norm" if norm else ""
        encoder = f"`{m['encoder']}`, " if "encoder" in m else ""
        heads = values(own, "model", "heads")
        heads = f"{joined(heads)} heads" if heads else "heads not recorded"
        said.append(f"{model}: {encoder}{heads}{norm}{ffn}{slots}")
    return "; ".join(said) or "no attention runs"


def stop_rule(runs: pd.DataFrame) -> str:
    """When the runs stop: at or above (`strict`: above) each threshold, else the epoch limit."""

    def strict(config: dict) -> bool:
        return bool(config.get("callbacks", {}).get("stop_when_solved", {}).get("strict", False))

    said = []
    for rule in sorted({strict(c) for c in runs.config}):
        these = runs[[strict(c) == rule for c in runs.config]]
        thresholds = values(these, "callbacks", "stop_when_solved", "threshold")
        said.append(("above " if rule else "at ") + ", ".join(f"{100 * t:g}%" for t in thresholds))
    return " or ".join(said) + " validation accuracy, else at the epoch limit"


def head_rule(runs: pd.DataFrame) -> str:
    """The runs' heads: tied alone (logits h E^T, zoology's lm_head), else with the paper's MLP
    head's shape."""
    heads = values(runs, "model", "head", default="mlp")
    if heads == ["tied"]:
        return "tied to the token embeddings (logits = h Eᵀ)"
    return (
        f"{joined(heads)} (hidden {joined(values(runs, 'model', 'hidden'))}, leaky ReLU "
        f"{joined(values(runs, 'model', 'negative_slope'))}, on the encoder's output)"
    )


def setting_rows(runs: pd.DataFrame, kinds: dict[str, str], seen: str | None = None) -> str:
    """The table: a row per difference, the runs' value beside zoology's (`seen`: the sequences
    seen, where a page says them run by run)."""
    pairs = sorted(set(zip(runs.T0, runs.kv, strict=True)))
    batches = values(runs, "data", "batch_size")
    updates = int(runs.updates.max())
    attention = of(runs, [m for m, k in kinds.items() if k == "attention"])
    convs = of(runs, ["gla", "deltanet"])
    mamba = of(runs, ["mamba"])
    dt = values(mamba, "model", "dt_rank")
    widths = sorted(mamba.width.unique().tolist())
    seeds = runs.groupby(["model", "width", "T0"]).seed.nunique()
    ours = {
        "optimizer": f"{joined(values(runs, 'optim', 'name', default='adam'))}, weight decay "
        f"{joined(values(runs, 'optim', 'weight_decay', default=0))}, gradient clipping "
        f"{joined(values(runs, 'optim', 'clip', default='none'))}",
        "schedule": joined(values(runs, "optim", "schedule", default="none")),
        "learning rates": learning_rates(runs),
        "stop": stop_rule(runs),
        "random fillers (`random_non_queries`)": joined(
            values(runs, "task", "params", "random_non_queries", default=True)
        ),
        "vocabulary": joined(values(runs, "task", "params", "vocab")),
        "lengths (key-value pairs)": ", ".join(f"{t} ({k})" for t, k in pairs),
        "widths D": joined(sorted(runs.width.unique().tolist())),
        "layers": joined(values(runs, "model", "layers")),
        "attention block": attention_block(attention),
        "head": head_rule(runs),
        "short convolutions (gla, deltanet)": "with"
        if values(convs, "model", "use_short_conv", default=False) == [True]
        else "without"
        if values(convs, "model", "use_short_conv", default=False) == [False]
        else "both",
        "Mamba's dt_rank": (
            f"{joined(dt)} (zoology's ceil(D / 16) would be "
            + ", ".join(f"{ceil(w / 16)} at D = {w}" for w in widths)
            + ")"
        )
        if dt
        else "no mamba runs",
        "batch": f"{joined(batches)} sequences",
        "sequences seen": seen
        or f"at most {updates:,} updates × {joined(batches)} ({max(batches) * updates:,}), fresh "
        "each batch",
        "seeds": f"{int(seeds.min())}–{int(seeds.max())} a point"
        if seeds.min() != seeds.max()
        else f"{int(seeds.min())} a point",
        "evaluation": f"{joined(values(runs, 'data', 'val_size'))} sequences",
    }
    table = pd.DataFrame(
        {"": list(ours), "here (the runs' configs)": list(ours.values())}
        | {"zoology (its Figure 2 sweep)": [ZOOLOGY_SETTING[k] for k in ours]}
    )
    return table.to_markdown(index=False, disable_numparse=True)
