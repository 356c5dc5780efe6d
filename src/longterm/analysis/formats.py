"""How numbers are written in generated text, the same way in every table and sentence."""

import pandas as pd


def pct(rate: float | None) -> str:
    """A rate as a percentage with one decimal (0.744 -> '74.4'); '' for a missing one."""
    return "" if rate is None or pd.isna(rate) else f"{100 * rate:.1f}"


def text(v: object) -> str:
    """A setting as the pages write it: `true`, `1,024`, `0.01`, or the value as it is."""
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, int) or (isinstance(v, float) and v.is_integer()):
        return f"{int(v):,}"
    return f"{v:g}" if isinstance(v, float) else str(v)


def joined(found: list) -> str:
    """Settings comma-separated: `32, 64`."""
    return ", ".join(map(text, found))
