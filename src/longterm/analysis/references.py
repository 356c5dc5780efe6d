"""Reference accuracies of a run's validation set, regenerated from its config: the best constant
predictor (chance) and, for temporal order, the best order-blind predictor (one that sees only
how many X and Y there are, all that pooling over per-step features can see)."""

import numpy as np

from longterm.plugins.resolve import generator
from longterm.tasks import NO_TARGET
from longterm.tasks.order import X, temporal_order, temporal_order3
from longterm.training.batches import fixed_validation_set


def references(data: dict, loss: str) -> tuple[float | None, float | None]:
    """(chance, order-blind ceiling) on a run's validation set, regenerated from its config."""
    if loss != "cross_entropy" or data["name"] != "fixed":
        return None, None
    keys = ("task", "T0", "batch_size", "val_size", "seed", "lengths", "task_params")
    batches = fixed_validation_set(**{k: data[k] for k in keys})
    x = np.concatenate([b[0].numpy() for b in batches])
    y = np.concatenate([b[1].numpy().ravel() for b in batches]).astype(int)
    y = y[y != NO_TARGET]  # a task that labels steps: its labelled steps
    chance = np.bincount(y).max() / len(y)
    if generator(data["task"]) not in (temporal_order, temporal_order3):
        return chance, None
    n_y = x[:, :, X + 1].sum(1).astype(int)  # how many Y: all an order-blind model can tell
    ceiling = sum(np.bincount(y[n_y == c]).max() for c in np.unique(n_y)) / len(y)
    return chance, ceiling
