"""Recall against state size (zoology's headline figure, Arora et al. 2023, Figure 2): the
multi-query associative recall (MQAR) sweep's runs as a table per setting, a figure and the
published statements checked (recall/checks.py).

    python -m longterm.experiments.recall.page runs/recall --out docs/recall.md

The sweep is recall/runs.py (conf/experiment/recall.yaml): a learning-rate race
per model, width and setting, each in its own sweep directory; the directories given may hold
those (result.json files are found at any depth). Per setting (T0, key-value pairs), model and
width: the state size (numbers carried per sequence at inference, at the training width), the
parameters, the race's winner (best validation accuracy over the learning rates, then fewer
updates) and its learning rate and updates, and each seed's value. A point joins runs of one
setting but their learning rates and seeds (analysis/identity.py): runs of another vocabulary,
budget, recipe or model key under the same length, pairs, model and width are refused in one line
naming what differs. Writes the page and, beside it,
`<page>/recall_vs_state_size.png`: accuracy against the state size on a log axis, a panel per
setting, each seed of each point its own marker (attention models squares), with chance and the
1/k level (one of k pairs recalled) drawn across each panel.

Which models count as attention is what they declare (`kinds`): a state that grows with the
length. A model run at one length only (a model of your own: recall/runs.py) is drawn
and tabled beside the grid, and read by no check (checks.complete).

The runs of zoology's Figure 2 in its recipe (recall/figure2.py; `--grid figure2`, or recognised
from their configs) make Figure 2's page (figure2_page.py): the same checks and tables under its
title and recipe, and the grid's cells not run yet with their commands. A run that has not ended
(interrupted, failed) is read by no table; both pages list it with the command that resumes it
(unfinished.py).
"""

import shlex
from pathlib import Path

import pandas as pd

from longterm.analysis.formats import pct
from longterm.analysis.identity import MixedSettingsError, mixed
from longterm.analysis.page_cli import page_cli
from longterm.analysis.plateau import Cell, rise
from longterm.analysis.provenance import distinct, process_minutes, sweep_commands
from longterm.analysis.references import references
from longterm.analysis.runs import load_runs
from longterm.config.run_names import number as rate  # 0.00215 -> 2.15e-3, as run names
from longterm.experiments.recall import figure2_page
from longterm.experiments.recall.checks import (
    ATTENTION,
    CONVOLUTION,
    FIXED,
    GATED_CONV,
    RULE,
    ZOOLOGY,
    ZOOLOGY_CONFIG,
    check_rows,
    complete,
)
from longterm.experiments.recall.figure2_page import is_figure2, not_run, seen
from longterm.experiments.recall.plot import FIGURE, label, model_order, plot
from longterm.experiments.recall.settings import setting_rows
from longterm.experiments.recall.unfinished import in_progress

SWEEP = "python -m longterm.experiments.recall.runs --run"
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


def one_setting(runs: pd.DataFrame) -> None:
    """MixedSettingsError (one line) where a point would join runs of other settings than its
    learning rates and seeds: another vocabulary, recipe, batch or model key, or another budget,
    its race's epoch limit (the race caps the slower learning rate's runs below it)."""
    budget = runs.groupby("race").max_epochs.transform("max")
    rows = [{**s, "max_epochs": b} for s, b in zip(runs.settings, budget, strict=True)]
    line = mixed(runs.assign(settings=rows), GROUP, within=("lr", "seed"))
    if line is not None:
        raise MixedSettingsError(line)


def winners(runs: pd.DataFrame) -> pd.DataFrame:
    """Each race's winner per seed: the best accuracy, then the fewest updates, then the larger
    learning rate (the race's leader)."""
    ordered = runs.sort_values(["best_acc", "updates", "lr"], ascending=[False, True, False])
    return ordered.drop_duplicates([*GROUP, "seed"]).sort_values([*GROUP, "seed"])


def points(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per setting, model and width: state size, parameters, accuracy (the median of the
    winners over seeds), `cell` (each seed's winner and how much its run still rose at its
    cutoff: plateau.Cell), the winning learning rates and most updates, seeds, runs, and the
    model's `kind` (`kinds`)."""
    one_setting(runs)
    won = winners(runs)
    won = won.assign(rise=[rise(h, s) for h, s in zip(won.history, won.status, strict=True)])
    table = won.groupby(GROUP).agg(
        state=("state_size", "max"),
        params=("n_params", "max"),
        acc=("best_acc", "median"),
        lr=("lr", lambda s: ", ".join(map(rate, sorted(set(s))))),
        updates=("updates", "max"),
        seeds=("seed", "nunique"),
    )
    table["cell"] = [
        Cell(f"{m} D={w} at T0 = {t}", tuple(g.best_acc), tuple(g.rise), int(g.updates.max()))
        for (t, _, m, w), g in won.groupby(GROUP)
    ]
    table = table.join(runs.groupby(GROUP).size().rename("runs")).reset_index()
    kind = kinds(table, runs)
    return table.assign(kind=table.model.map(kind))


def kinds(p: pd.DataFrame, runs: pd.DataFrame) -> dict[str, str]:
    """Each model's kind by what it declares: `attention` where its state grows with the length
    (its recorded state sizes at one width and two lengths, else what its configuration declares
    at four times its length: `declared_growth`), `fixed` where it does not, the gated
    convolution the statements name apart, `unknown` where neither tells."""
    found = {}
    for model, own in p.dropna(subset=["state"]).groupby("model"):
        grows = None
        for _, g in own.groupby("width"):
            if g.T0.nunique() > 1:
                g = g.sort_values("T0")
                grows = bool(g.state.iloc[-1] > g.state.iloc[0])
                break
        if grows is None:
            first = runs[runs.model == model].iloc[0]
            grows = declared_growth(first.config, int(first.T0))
        found[model] = (
            "unknown"
            if grows is None
            else (GATED_CONV if model == CONVOLUTION else ATTENTION)
            if grows
            else FIXED
        )
    return found | {m: "unknown" for m in set(p.model) - set(found)}


def declared_growth(config: dict, T0: int) -> bool | None:
    """Whether the encoder a run's config names carries more numbers after 4 T0 steps than after
    T0 (built on PyTorch's meta device from the config's model section: no memory); None where
    it cannot be built here."""
    try:
        import torch

        from longterm.models.build import build_encoder
        from longterm.tasks.inputs import encoder_in_features

        keys = {k: v for k, v in config["model"].items() if k not in ("name", "encoder", "dim")}
        dim = config["model"]["dim"]
        with torch.device("meta"):
            encoder = build_encoder(
                config["model"]["encoder"], encoder_in_features(config["task"], dim), dim, **keys
            )
        return encoder.state_size(4 * T0) > encoder.state_size(T0)
    except Exception:  # a model whose package is not importable here: its kind is unknown
        return None


def seed_values(cell: Cell) -> str:
    """Each seed's value in % (`95.7 / 99.7 / 39.4`)."""
    return cell.text()


def setting_table(p: pd.DataFrame, beside: set[str] = frozenset()) -> str:
    order = model_order(p)
    p = p.assign(order=p.model.map(order)).sort_values(["order", "width"])
    table = pd.DataFrame(
        {
            "model": [
                label(m, k) + (" †" if m in beside else "")
                for m, k in zip(p.model, p.kind, strict=True)
            ],
            "width D": p.width,
            "state size": p.state.map(lambda n: "–" if pd.isna(n) else f"{int(n):,}"),
            "parameters": p.params.map("{:,}".format),
            "best val acc (%), each seed": p.cell.map(seed_values),
            "rose over the last 2 epochs (points)": p.cell.map(
                lambda c: " / ".join(pct(r) for r in c.rises)
            ),
            "lr": p.lr,
            "updates": p.updates.map("{:,}".format),
            "seeds": p.seeds,
            "runs": p.runs,
        }
    )
    return table.to_markdown(index=False, disable_numparse=True)


def chance(runs: pd.DataFrame, T0: int, kv: int) -> float | None:
    """The best constant predictor on a setting's validation set (its first run's, regenerated
    from its config: analysis.references); 2 / vocab (the values are uniform on half the
    vocabulary) where the config does not say enough to regenerate it."""
    own = runs[(runs.T0 == T0) & (runs.kv == kv)]
    if own.empty:
        return None
    first = own.iloc[0]
    try:
        return references(first.config["data"], first.loss)[0]
    except (KeyError, TypeError, ValueError):
        vocab = first.config["task"]["params"].get("vocab")
        return 2 / vocab if vocab else None


def chances(runs: pd.DataFrame, p: pd.DataFrame) -> dict[tuple[int, int], float | None]:
    """Chance at each setting (T0, pairs) of the points."""
    return {s: chance(runs, *s) for s in sorted(set(zip(p.T0, p.kv, strict=True)))}


def commands(runs: pd.DataFrame, sweep: str = SWEEP) -> str:
    """The sweep's command, then each race's recorded commands (its sweep.json, or while it
    runs, its multiruns' commands.json)."""
    lines = [sweep]
    for race, g in runs.groupby("race"):
        lines += distinct(sweep_commands(Path(race), g.run_dir))
    return "\n".join(lines)


def provenance(runs: pd.DataFrame, races: str = "race(s)") -> str:
    commits = ", ".join(sorted(set(runs.commit.astype(str))))
    return (
        f"{len(runs)} runs in {runs.race.nunique()} {races}; commit(s) {commits}; "
        f"{'; '.join(sorted(set(runs.machine)))}; "
        f"{runs.wall_time_s.sum() / 60:.1f} minutes of training in the runs (sum of their wall "
        f"times), {process_minutes(runs):.1f} in their processes."
    )


REPORT = """{header}

## Published statements, checked here

**Rule.** {rule}

{checks}

{body}"""

HEADER = """# Recall against state size

Generated by `{command}` from the runs' `result.json` files (the sweep: `{sweep}`,
conf/experiment/recall.yaml). Multi-query associative recall (`task=mqar`, zoology's MQAR) read at
every query step, each sequence model of the framework at each width, the best of the learning
rates per point: zoology's Figure 2 ([Arora et al. 2023]({zoology}), accuracy against the model
width at each length), drawn here against the state size (the numbers a model carries per sequence
at inference after the training width, docs/models.md) as the Based paper's MQAR plots do."""

BODY = """## The figure

![accuracy against state size]({figure})

Each seed's best validation accuracy is its own marker (attention models squares); the dotted
line is 1/k, one of a panel's k pairs recalled, the dashed one chance (the best constant
predictor on the setting's validation set).

## Where the settings differ from zoology's

Every difference from zoology's Figure 2 sweep (its [configs]({config})): the values here are
read from the runs' configs.

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


def report(runs: pd.DataFrame, dirs: list[Path], out: Path | None, grid: str | None = None) -> str:
    """The page; with runs and `out`, the figure beside it (`<out without .md>/FIGURE`). Of
    zoology's Figure 2 (figure2_page.py) where `grid` says so or, without it, the runs are."""
    command = shlex.join(
        ["python", "-m", "longterm.experiments.recall.page", *map(str, dirs)]
        + (["--out", str(out)] if out else [])
        + (["--grid", grid] if grid else [])
    )
    figure2 = grid == "figure2" or (grid is None and is_figure2(runs))
    sweep = figure2_page.SWEEP if figure2 else SWEEP
    sections = [s for s in (not_run(runs) if figure2 else "", in_progress(dirs)) if s]
    p = points(runs) if not runs.empty else pd.DataFrame(columns=[*GROUP, "state", "acc"])
    kept, partial, beside = complete(p)
    checks = pd.DataFrame(check_rows(kept)).to_markdown(index=False, disable_numparse=True)
    if partial:
        checks += "\n\nLeft out of the checks, run in part: " + "; ".join(partial) + "."
    if beside:
        checks += (
            "\n\nBeside the grid, in the tables (†) and the figure but read by no check: "
            + "; ".join(beside)
            + "."
        )
    body = NO_RUNS.format(sweep=sweep) + "".join(f"\n{s}\n" for s in sections)
    if not runs.empty:
        figure = Path(out.stem if out else ".") / FIGURE
        if out:
            (out.parent / figure).parent.mkdir(parents=True, exist_ok=True)
            plot(p, out.parent / figure, chances(runs, p))
        mine = {b.split(" (")[0] for b in beside}
        tables = "\n\n".join(
            [
                *(
                    f"## T0 = {T0}, {kv} key-value pairs\n\n" + setting_table(g, mine)
                    for (T0, kv), g in p.groupby(["T0", "kv"])
                ),
                *sections,
            ]
        )
        kind = dict(zip(p.model, p.kind, strict=False))
        body = BODY.format(
            figure=figure,
            config=ZOOLOGY_CONFIG,
            setting=setting_rows(runs, kind, seen(runs) if figure2 else None),
            tables=tables,
            commands=commands(runs, sweep),
            provenance=provenance(runs, figure2_page.directories(runs) if figure2 else "race(s)"),
        )
    head = figure2_page.header(command) if figure2 else None
    head = head or HEADER.format(command=command, sweep=SWEEP, zoology=ZOOLOGY)
    rule = figure2_page.RULE_FIGURE2 if figure2 else RULE
    return REPORT.format(header=head, rule=rule, checks=checks, body=body)


def main(argv: list[str] | None = None) -> None:
    what = (
        "zoology's Figure 2's page (figure2_page.py) or the recall sweep's (default: by the runs)"
    )
    grid = {"choices": ("figure2", "recall"), "help": what}
    page_cli(__doc__, load, report, argv, empty="warn", options=[("--grid", grid)])


if __name__ == "__main__":
    main()
