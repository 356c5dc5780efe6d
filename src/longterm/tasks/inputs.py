"""A task section's input format (`inputs`, choices.INPUTS): one-hot features per step
(`n_features`), or token ids (`inputs: tokens`, `vocab`) that an embedding of the model's width
turns into features; and the features per step the encoder reads for either."""

from collections.abc import Mapping
from typing import Any


def encoder_in_features(task: Mapping[str, Any], dim: int) -> int:
    """The features per step the encoder reads for a task section: its one-hot `n_features`, or
    with token inputs the embedding's width, the model's `dim`."""
    return dim if task.get("inputs", "onehot") == "tokens" else task["n_features"]
