"""A built-in model, readout or task by its name: the import path its conf file gives
(conf/model/<name>.yaml's `encoder`, conf/pool/<name>.yaml's `readout`, conf/task/<name>.yaml's
`generator`), as a run reads it."""

import functools
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

CONF = Path(__file__).resolve().parents[3] / "conf"


def conf_file(group: str, name: str) -> DictConfig:
    return OmegaConf.load(CONF / group / f"{name}.yaml")


def encoder_of(name: str) -> str:
    """The import path of a built-in model's encoder, e.g. `lstm`."""
    return str(conf_file("model", name).encoder)


def generator_of(ref: str) -> str:
    """A generator's import path: a path as it is, a built-in task's name through its conf
    file."""
    return ref if "." in ref else str(conf_file("task", ref).generator)


@functools.cache  # the package's own conf files: read once per process, not once per job
def builtin_path(group: str, name: str, key: str) -> str | None:
    """The import path under `key` of the built-in conf file `group/name.yaml`; None when no
    built-in has that name, or it has no such key."""
    path = CONF / group / f"{name}.yaml"
    value = OmegaConf.load(path).get(key) if path.is_file() else None
    return None if value is None else str(value)
