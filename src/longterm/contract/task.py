"""The contract of a task generator (docs/plugins.md, "The contract check"), on a sample of
N_SEQUENCES sequences: the same rng gives the same batch; X, y and mask have the shapes and the
features the section declares, classes lie in 0..n_outputs - 1; padding is zero and comes after
the real steps; its chance level, the accuracy of the best constant prediction. numpy only.

    task_report(task section, min_length)   -> Report
"""

from collections.abc import Callable
from typing import Any

import numpy as np

from longterm.choices import TOLERANCE
from longterm.config.validate import task_error
from longterm.contract.report import Report
from longterm.plugins.resolve import generator
from longterm.tasks import NO_TARGET, default_width

N_SEQUENCES = 1000  # the task's sample, a validation set's size


def task_report(task: dict[str, Any], min_length: int, seed: int = 0) -> Report:
    """The contract of a task section (name, generator, labels, n_features, n_outputs, loss,
    params) at sequences of `min_length` steps and up."""
    report = Report(f"task {task['name']} ({task['generator']}, min_length={min_length})")
    draw: Callable[..., Any] = generator(task["generator"])
    params = dict(task.get("params") or {})
    try:
        X, y, mask = draw(np.random.RandomState(seed), min_length, N_SEQUENCES, None, **params)
    except Exception as e:
        report.add(False, f"draws a batch: {type(e).__name__}: {e}")
        return report
    again = draw(np.random.RandomState(seed), min_length, N_SEQUENCES, None, **params)
    report.add(
        all(np.array_equal(a, b) for a, b in zip((X, y, mask), again, strict=True)),
        f"the same batch from the same rng (RandomState({seed}))",
    )
    other = draw(np.random.RandomState(seed + 1), min_length, N_SEQUENCES, None, **params)
    report.add(not np.array_equal(X, other[0]), "another rng gives another batch")
    width = default_width(min_length)
    error = task_error(task, X[:2], np.asarray(y)[:2], mask[:2], width)
    tokens = task.get("inputs", "onehot") == "tokens"
    inputs = f"token ids in 0..{task['vocab'] - 1}" if tokens else f"{task['n_features']} features"
    report.add(
        error is None,
        f"X {X.shape} {X.dtype}, y {np.shape(y)}, mask {mask.shape} {mask.dtype}: "
        f"{inputs}, one target per {task['labels']}" + (f": {error}" if error else ""),
    )
    if error:
        return report
    lengths = mask.sum(1)
    prefix = np.array_equal(mask, np.arange(width)[None, :] < lengths[:, None])
    report.add(
        mask.dtype == bool and prefix and lengths.min() >= min_length,
        f"real steps first, then padding; lengths {lengths.min()}..{lengths.max()}",
    )
    report.add(not X[~mask].any(), f"X is zero on padding{' (token id 0)' if tokens else ''}")
    if tokens:
        report.facts["memory"] = memory_fact(X, y, mask, task["vocab"])
    labels = np.asarray(y)
    labels = labels[labels != NO_TARGET] if task["labels"] == "step" else labels
    if task["loss"] == "cross_entropy":
        found = np.unique(labels).astype(int)
        report.add(
            found.min() >= 0 and found.max() < task["n_outputs"],
            f"classes {found.min()}..{found.max()} within 0..{task['n_outputs'] - 1}",
        )
    else:
        report.add(np.isfinite(labels.astype(float)).all(), "finite targets")
    report.facts["chance"] = f"{chance(labels, task['loss']):.4f} ({chance_rule(task['loss'])})"
    return report


def memory_fact(X: np.ndarray, y: np.ndarray, mask: np.ndarray, vocab: int) -> str:
    """The bytes per sequence of a batch of token ids (X, y, mask), and of one-hot float32
    inputs over the same `vocab` instead."""
    n, width = mask.shape
    held = (X.nbytes + np.asarray(y).nbytes + mask.nbytes) / n
    one_hot = width * vocab * 4 + (np.asarray(y).nbytes + mask.nbytes) / n
    return f"{held:,.0f} bytes per sequence of {width} steps; one-hot inputs: {one_hot:,.0f}"


def chance(labels: np.ndarray, loss: str) -> float:
    """The accuracy of the best constant prediction: the most frequent class, or for a value the
    constant within TOLERANCE of the most targets (metrics.ToleranceAccuracy's rule)."""
    if loss == "cross_entropy":
        return float(np.bincount(labels.astype(int)).max() / len(labels))
    values = np.sort(labels.astype(float).ravel())
    # a window of width 2 * TOLERANCE starting at each target holds the targets it covers
    ends = np.searchsorted(values, values + 2 * TOLERANCE, side="left")
    return float((ends - np.arange(len(values))).max() / len(values))


def chance_rule(loss: str) -> str:
    if loss == "cross_entropy":
        return "the most frequent class"
    return f"the best constant c, |y - c| < {TOLERANCE}"
