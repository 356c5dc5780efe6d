"""Where the paper's single run falls among our seeds (Raffel & Ellis 2015, Table 1 and §2.3).

Every Table 1 cell and every variable-length setting with a paper value, each seed's value beside
the paper's, and one sentence computed from them: whether the paper's value lies inside our range,
and what moves our seeds:
- the learning rate: the seeds' best learning rates differ;
- a plateau: epochs spent below PLATEAU validation accuracy before the winning run rises past it
  (the search for the markers);
- swings: the largest fall of validation accuracy from one epoch to the next (variable lengths:
  over the last LAST epochs).
The collector writes paper_position.md and paper_position.png from them.
"""

from typing import Any

import pandas as pd

from longterm.analysis import published
from longterm.analysis.seeds import protocol_note
from longterm.analysis.variable_length import note, variable_length_runs

PLATEAU = 0.5  # a run has found the markers once its validation accuracy reaches this
SWING = 0.10  # falls between epochs from this size on are named
LAST = 10  # variable lengths: the epochs the mean and the swings are taken over


def plateau(history: list[float]) -> int:
    """Epochs below PLATEAU before the first epoch at or above it (all of them if none is)."""
    return next((i for i, acc in enumerate(history) if acc >= PLATEAU), len(history))


def largest_fall(history: list[float]) -> float:
    """The largest drop of accuracy from one epoch to the next; 0 without one."""
    return max((a - b for a, b in zip(history, history[1:], strict=False)), default=0.0)


def where(paper: float, values: list[float], fewer_is_better: bool) -> str:
    """Whether the paper's value lies inside our seeds' range, in words."""
    low, high = min(values), max(values)
    fmt = "{:g}" if fewer_is_better else "{:.1%}"
    span = fmt.format(low) if low == high else f"{fmt.format(low)}–{fmt.format(high)}"
    seeds = f"{len(values)} seed{'s' if len(values) > 1 else ''}"
    if low <= paper <= high:
        return f"inside our range ({span}, {seeds})"
    better = (paper < low) == fewer_is_better
    side = "better than" if better else "worse than"
    return f"{side} every seed of ours ({span}, {seeds})"


def movers(
    lrs: list[tuple[float, ...]], plateaus: list[int], falls: list[float], window: str = ""
) -> str:
    """What moves the seeds, in words: the learning rate, a plateau, swings (over `window`, said
    after them); or none of them."""
    said = []
    if len({tuple(x) for x in lrs}) > 1:
        chosen = ", ".join("/".join(f"{lr:.0e}" for lr in x) for x in lrs)
        said.append(f"the best learning rate differs between seeds ({chosen})")
    if max(plateaus, default=0) >= 2:
        low, high = min(plateaus), max(plateaus)
        span = f"{low}" if low == high else f"{low}–{high}"
        said.append(f"a plateau of {span} epochs below {PLATEAU:.0%} before the rise")
    if max(falls, default=0.0) >= SWING:
        said.append(f"swings of up to {100 * max(falls):.0f} points between epochs{window}")
    return "; ".join(said) if said else "no learning-rate, plateau or swing differences"


def table1_positions(seeds: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """A row per Table 1 cell with a paper value: each seed's epochs to 100% (or accuracy at the
    limit when the paper's is one), the paper's, and the sentence. `seeds` is
    analysis.table1.table1_seeds; `runs` the collector's runs, for the winning runs' histories."""
    if seeds.empty:
        return pd.DataFrame()
    histories = dict(zip(runs.run_dir, runs.history, strict=True))
    rows = []
    for (task, pool, T0), g in seeds.groupby(["task", "pool", "T0"]):
        paper = published.TABLE1.get((task, pool), {}).get(T0)
        if paper is None or protocol_note(set().union(*g.protocols)):
            continue
        solved_paper = isinstance(paper, int)
        values = [
            (s.epochs if s.solved else None) if solved_paper else (1.0 if s.solved else s.acc)
            for s in g.itertuples()
        ]
        won = [histories[s.run_dirs[0]] for s in g.itertuples() if s.run_dirs]
        moved = movers(list(g.lrs), [plateau(h) for h in won], [largest_fall(h) for h in won])
        if solved_paper and None in values:
            place = f"the paper solved it; {values.count(None)} of {len(values)} seeds not"
        else:
            place = where(paper, values, fewer_is_better=solved_paper)
        inside = None not in values and min(values) <= paper <= max(values)
        rows.append(
            {
                "task": task,
                "pool": pool,
                "T0": T0,
                "seeds": tuple(g.seed),
                "ours": tuple(values),
                "paper": paper,
                "measure": "epochs" if solved_paper else "accuracy",
                "grid": bool(g.n_lrs.min() == len(published.LEARNING_RATES)),
                "inside": inside,
                "sentence": f"{place}; {moved}",
            }
        )
    return pd.DataFrame(rows)


def variable_positions(runs: pd.DataFrame) -> pd.DataFrame:
    """A row per variable-length task, pool and learning rate: each seed's accuracy after its
    last epoch (the paper's measure) and its mean over the last LAST epochs, and the sentence."""
    rows = []
    v = variable_length_runs(runs)
    for (task, pool, lr), g in v.groupby(["task", "pool", "lr"]):
        paper = published.VARIABLE_LENGTH.get((task, pool))
        if paper is None or note(g) or not all(len(h) for h in g.history):
            continue
        last = [h[-1] for h in g.history]
        tail = [sum(h[-LAST:]) / len(h[-LAST:]) for h in g.history]
        falls = [largest_fall(h[-LAST:]) for h in g.history]
        moved = movers([(lr,)], [], falls, window=f" (the last {LAST})")
        sentence = f"{where(paper, last, fewer_is_better=False)}; {moved}"
        rows.append(
            {
                "task": task,
                "pool": pool,
                "lr": lr,
                "seeds": tuple(g.seed),
                "epochs": tuple(g.epochs),
                "ours": tuple(last),
                "last_mean": tuple(tail),
                "paper": paper,
                "sentence": sentence,
            }
        )
    return pd.DataFrame(rows)


def value_text(value: Any, epochs: bool) -> str:
    """Epochs as a count, an accuracy in %; a seed that did not solve an epochs cell says so."""
    if value is None or pd.isna(value):
        return "not solved"
    return f"{value:g}" if epochs else f"{value:.1%}"


def positions_markdown(table1: pd.DataFrame, variable: pd.DataFrame) -> str:
    """The page: a row per cell, every seed's value, the paper's, the sentence."""
    lines = [
        "## Table 1: every seed against the paper's run",
        "",
        "Each seed's epochs to 100% with its best learning rate (the paper's rule), or its",
        "accuracy after the epoch limit where the paper's run did not solve the cell; the paper's",
        "single run beside them. The sentence says where the paper's value falls among our seeds",
        f"and what moves them: the best learning rate, a plateau below {PLATEAU:.0%} validation",
        f"accuracy before the rise, falls of {SWING:.0%} or more between epochs.",
        "",
        "| task | pool | T0 | ours, seed by seed | paper "
        "| where the paper falls; what moves our seeds |",
        "|---|---|---|---|---|---|",
    ]
    if not table1.empty:
        counted = table1[table1.measure == "epochs"]
        full = counted[counted.grid & (counted.seeds.map(len) >= 3)]
        lines[1:1] = [
            "",
            f"Of the {len(counted)} cell{'s' if len(counted) != 1 else ''} whose paper value is an "
            f"epoch count, {len(full)} have "
            "three seeds or more",
            "over the paper's whole grid of learning rates; the paper's value is inside our range",
            f"in {int(full.inside.sum())} of those.",
        ]
    for r in table1.itertuples(index=False):
        epochs = r.measure == "epochs"
        ours = ", ".join(
            f"s{s}: {value_text(v, epochs)}" for s, v in zip(r.seeds, r.ours, strict=True)
        )
        lines.append(
            f"| {r.task} | {r.pool} | {r.T0} | {ours} | {value_text(r.paper, epochs)} | "
            f"{r.sentence} |"
        )
    if not variable.empty:
        lines += [
            "",
            "## Variable lengths: every seed against the paper's run",
            "",
            "Each seed's accuracy on the paper's 100-length test set after its last epoch (the",
            f"paper's measure) and, in brackets, its mean over the last {LAST} epochs.",
            "",
            "| task | pool | lr | ours, seed by seed | paper | where the paper falls |",
            "|---|---|---|---|---|---|",
        ]
        for r in variable.itertuples(index=False):
            ours = ", ".join(
                f"s{s} ({e} epochs): {a:.1%} ({m:.1%})"
                for s, e, a, m in zip(r.seeds, r.epochs, r.ours, r.last_mean, strict=True)
            )
            lines.append(
                f"| {r.task} | {r.pool} | {r.lr:.0e} | {ours} | {r.paper:.1%} | {r.sentence} |"
            )
    return "\n".join(lines) + "\n"
