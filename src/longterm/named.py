"""A model or task of the package by its name: its conf file (conf/model/<name>.yaml's `encoder`,
conf/task/<name>.yaml's `generator` and `labels`) gives the import paths, as in every run
(longterm.plugins). Configs recorded before models and tasks were named by import path hold only
names; `upgrade` gives them the paths, so the archived runs (runs/) are evaluated and collected as
new ones.
"""

import copy
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

CONF = Path(__file__).resolve().parents[2] / "conf"


def conf_file(group: str, name: str) -> DictConfig:
    return OmegaConf.load(CONF / group / f"{name}.yaml")


def encoder_of(name: str) -> str:
    """The import path of a built-in model's encoder, e.g. `lstm`."""
    return str(conf_file("model", name).encoder)


def generator_of(ref: str) -> str:
    """A generator's import path: a path as it is, a built-in task's name through its conf
    file."""
    return ref if "." in ref else str(conf_file("task", ref).generator)


def upgrade(config: dict[str, Any]) -> dict[str, Any]:
    """A run's recorded config with the import paths a config has now; a new one unchanged."""
    cfg = copy.deepcopy(config)
    model, task = cfg["model"], cfg["task"]
    if "encoder" not in model:
        model.pop("_target_", None)  # the constructor, now always models/build.py's
        model["encoder"] = encoder_of(model["name"])
    if "generator" not in task:
        task["generator"] = generator_of(task["name"])
        task["labels"] = str(conf_file("task", task["name"]).labels)
        cfg["data"]["task"] = task["generator"]
    return cfg
