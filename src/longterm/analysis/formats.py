"""How numbers are written in generated text, the same way in every table and sentence."""

import pandas as pd


def pct(rate: float | None) -> str:
    """A rate as a percentage with one decimal (0.744 -> '74.4'); '' for a missing one."""
    return "" if rate is None or pd.isna(rate) else f"{100 * rate:.1f}"
