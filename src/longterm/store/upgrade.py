"""The upgrade map: a run's recorded config and settings as the package reads them today. The one
place that maps the import paths of classes that moved, and the settings a record predates.

A run records its composed config (result.json's `config`, `.hydra/config.yaml`) with the
`_target_` of its data module, readout, logger and callbacks. When the package was split into
subpackages those classes moved (`longterm.callbacks.StopWhenSolved` is now
`longterm.training.callbacks.StopWhenSolved`); a run made before, in a user's `outputs/`, is
evaluated and continued through this map. The archive `runs/` was rewritten once to today's
paths, so it needs none of it; its pool sections name their class by `_target_`, which readouts
have since left for `readout` (current_pool). A record made before a setting that identifies a
run existed reads as the run was made (current_settings).
"""

from pathlib import Path
from typing import Any

from longterm.store.records import read_result

# module of a class before the subpackages -> its module now (only modules that held a class a
# config names by `_target_`)
MOVED = {
    "longterm.callbacks": "longterm.training.callbacks",
    "longterm.logger": "longterm.training.tensorboard",
    "longterm.data": "longterm.training.data",
    "longterm.pooling": "longterm.models.readouts",
}


def current_path(path: str) -> str:
    """`path` (`package.module.Class`) with a moved module replaced by where it is now."""
    module, _, name = path.rpartition(".")
    return f"{MOVED[module]}.{name}" if module in MOVED else path


def current_paths(config: Any) -> Any:
    """`config` (a recorded config, as plain containers) with every `_target_` current."""
    if isinstance(config, dict):
        return {
            k: current_path(v) if k == "_target_" and isinstance(v, str) else current_paths(v)
            for k, v in config.items()
        }
    if isinstance(config, list):
        return [current_paths(v) for v in config]
    return config


def current_pool(config: dict[str, Any]) -> dict[str, Any]:
    """`config` with its pool section's class under `readout`: a run made before readouts came
    by import path (longterm.plugins.resolve) recorded it as `_target_`."""
    pool = config.get("pool")
    if not isinstance(pool, dict) or "_target_" not in pool:
        return config
    return {**config, "pool": {("readout" if k == "_target_" else k): v for k, v in pool.items()}}


# Settings that identify a run (config/run_settings.py run_params) added after runs were recorded,
# and what a run recorded without them trained with: the paper's constant Adam, unclipped
# (conf/train.yaml's optim before it had these keys), the paper's head and its stop at 100%.
# Not the schema's defaults, which may change: what those runs did.
ADDED_SETTINGS: dict[str, Any] = {
    "optim": "adam",  # optim.name
    "weight_decay": 0.0,
    "schedule": "none",
    "warmup": 0,
    "clip": None,
    "min_lr": 0.0,  # optim.min_lr
    "decay_groups": "all",  # optim.decay_groups
    "accuracy": "micro",  # task.accuracy
    "setting": None,  # task.setting
    "head": "mlp",  # model.head
    "stop_at": 1.0,  # callbacks.stop_when_solved.threshold: the paper's 100%
    "stop_strict": False,  # callbacks.stop_when_solved.strict: at or above stop_at
}
# A model's own keys added after its runs were recorded, as those runs had them (GLA's and
# DeltaNet's short convolutions). A key no model of a record has is never compared with it.
ADDED_MODEL_KEYS: dict[str, Any] = {"use_short_conv": False}


def current_settings(record: dict[str, Any]) -> dict[str, Any]:
    """A result record (or its settings) with the settings it predates as the run had them."""
    return {**ADDED_SETTINGS, **ADDED_MODEL_KEYS, **record}


def recorded_config(run_dir: str | Path) -> dict[str, Any]:
    """The config the run in `run_dir` recorded in result.json, as read today: today's import
    paths, and the readout's class under `readout`."""
    return current_pool(current_paths(read_result(run_dir)["config"]))
