"""A run's TensorBoard events read back with TensorBoard's own EventAccumulator: every scalar
curve and the HPARAMS session (the collector's learning curves, the tests)."""

import logging
from pathlib import Path

import pandas as pd

# TensorBoard logs a line per event file it opens, and warns of every resumed run ("out of order
# event.step ... a TensorFlow restart") when it drops the steps after the resume point that the
# earlier process had logged: that is how a resumed run's curve is meant to read. Errors only.
logging.getLogger("tensorboard").setLevel(logging.ERROR)


def accumulator(run_dir: str | Path):
    """Every event of a run (its event files, in the run directory), loaded in full (no sampling
    of long curves)."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(run_dir), size_guidance={"scalars": 0})
    events.Reload()
    return events


def scalars(run_dir: str | Path) -> dict[str, list[tuple[int, float]]]:
    """Each scalar tag's curve as (step, value) points."""
    events = accumulator(run_dir)
    return {
        tag: [(p.step, p.value) for p in events.Scalars(tag)] for tag in events.Tags()["scalars"]
    }


def curve(run_dir: str | Path, tag: str) -> pd.Series:
    """One scalar curve, values indexed by step; empty when the run never logged `tag`."""
    points = scalars(run_dir).get(tag, [])
    return pd.Series([v for _, v in points], index=[s for s, _ in points], dtype=float)


def hparams_session(run_dir: str | Path) -> bytes:
    """The serialised HPARAMS session-start record (names and values of the run's settings)."""
    return accumulator(run_dir).PluginTagToContent("hparams")["_hparams_/session_start_info"]
