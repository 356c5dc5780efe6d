"""A page's point is what ran: the runs it joins share every setting that identifies a run
(config/run_settings.py: run_params, read from each record by `recorded_params`), but those the
page varies within a point (the learning rates of a race, the seeds). `mixed` names, in one line,
the settings in which a point's runs differ; a page refuses such a mix (MixedSettingsError)
rather than fold a run of another vocabulary, budget, recipe or plugin key into a point.
`one_setting` is that refusal for a page's points: a learning-rate race's rivals, whose epoch
limit the race caps below its leader's, read at their race's limit (`at_budget`).
"""

from collections.abc import Iterable
from typing import Any

import pandas as pd

from longterm.config.run_settings import recorded_params
from longterm.store.records import capped


class MixedSettingsError(ValueError):
    """Runs of other settings in one point of a page; the message is one line."""


# What a learning-rate race varies within a point (experiments/lr_race.py): the rates and seeds.
RACED = ("lr", "seed")


def settings(record: dict[str, Any]) -> dict[str, Any]:
    """A run's settings as its result record has them (store/upgrade.py for an old record)."""
    return recorded_params(record)


def differing(rows: Iterable[dict[str, Any]], within: Iterable[str] = ()) -> dict[str, list]:
    """The settings (but those in `within`) in which the `rows` (run settings) differ: each with
    its values, sorted (as text where they do not compare). A setting a row lacks (recorded
    before it existed: a model key added since) is not held against it."""
    rows, within = list(rows), set(within)
    found = {}
    for key in sorted({k for r in rows for k in r} - within):
        values = {repr(r[key]): r[key] for r in rows if key in r}
        if len(values) > 1:
            try:  # numbers by value, else as text
                found[key] = sorted(values.values())
            except TypeError:
                found[key] = [values[v] for v in sorted(values)]
    return found


def mixed(runs: pd.DataFrame, point: list[str], within: Iterable[str] = ()) -> str | None:
    """One line naming the first point (its `point` columns' values) whose runs differ in a
    setting other than `within`; None when every point is one setting. `runs` has a
    `settings` column (analysis/runs.py)."""
    for key, g in runs.groupby(point, sort=True):
        differ = differing(g.settings, within)
        if differ:
            where = ", ".join(f"{c}={v}" for c, v in zip(point, key, strict=True))
            named = "; ".join(f"{k}: {', '.join(map(repr, v))}" for k, v in differ.items())
            return (
                f"runs of other settings in one point ({where}) differ in {named}: give the "
                "page the runs of one setting (their directories), or run the others apart"
            )
    return None


def at_budget(runs: pd.DataFrame, race: list[str]) -> list[dict[str, Any]]:
    """Each run's settings (`runs`: analysis/runs.py's columns), a race's rival read at its race's
    epoch limit (`race`: the columns of one race, a point and its seed). A run below the most
    epochs of its race is a rival lr_race capped at the epochs its leader needed (records.capped:
    another learning rate of its race solved at its limit), or the start of a run of its own rate
    continued to a larger limit (store/continue_run.py: that run resumed at its updates): it reads
    as at the race's limit. Any other limit stays the run's own, so a point that joins runs of
    two budgets is refused."""
    found = dict(zip(runs.index, runs.settings, strict=True))
    for _, rivals in runs.groupby(race, sort=False, dropna=False):
        limits = [s.get("max_epochs") for s in rivals.settings]
        budget = max((n for n in limits if n is not None), default=None)
        for i, r in rivals.iterrows():
            limit = r.settings.get("max_epochs")
            if budget is None or limit is None or limit >= budget:
                continue
            race = [{**o.settings, **o.to_dict()} for _, o in rivals.iterrows()]
            own = rivals[(rivals.lr == r.lr) & (rivals.max_epochs > limit)]
            continued = (own.resumed_at_update == r.updates).any()
            if capped({**r.settings, **r.to_dict()}, race) or continued:
                found[i] = {**r.settings, "max_epochs": budget}
    return [found[i] for i in runs.index]


def one_setting(runs: pd.DataFrame, point: list[str], within: Iterable[str] = RACED) -> None:
    """MixedSettingsError (one line, `mixed`) where a point (the `point` columns of `runs`) would
    join runs of other settings than `within`; where the learning rate is among them (a race),
    each seed's rivals read at its race's epoch limit (`at_budget`). A table made without result
    records (no `settings` column) has nothing to compare."""
    if runs.empty or "settings" not in runs:
        return
    within = tuple(within)
    if "lr" in within:
        race = [*point, "seed"] if "seed" in within else point
        runs = runs.assign(settings=at_budget(runs, race))
    line = mixed(runs, point, within)
    if line is not None:
        raise MixedSettingsError(line)
