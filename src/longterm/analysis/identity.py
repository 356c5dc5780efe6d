"""A page's point is what ran: the runs it joins share every setting that identifies a run
(config/run_settings.py: run_params, read from each record by `recorded_params`), but those the
page varies within a point (the learning rates of a race, the seeds). `mixed` names, in one line,
the settings in which a point's runs differ; a page refuses such a mix (MixedSettingsError)
rather than fold a run of another vocabulary, budget, recipe or plugin key into a point.
"""

from collections.abc import Iterable
from typing import Any

import pandas as pd

from longterm.config.run_settings import recorded_params


class MixedSettingsError(ValueError):
    """Runs of other settings in one point of a page; the message is one line."""


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
