"""Check a composed config before any work is done: `validate(cfg)` raises `ConfigError` with one
line naming the key, the value and what is allowed. The keys and their rules are schema.py's.

This module imports no torch or Lightning, so a bad command line fails in about a second.
"""

from typing import Any

import numpy as np
from omegaconf import DictConfig, OmegaConf
from pydantic import ValidationError

from longterm.choices import impl_error, targets_error
from longterm.schema import FixedDataSection, OpenSection, TrainConfig
from longterm.tasks import generate


class ConfigError(ValueError):
    """A config value that is not allowed; the message is one line."""


# Sections chosen from a config group; pydantic puts the choice in an error's location.
TAGGED = ("model", "data", "launcher")


def plain(value: Any) -> Any:
    """A config value as Python data, resolved."""
    return OmegaConf.to_container(value, resolve=True) if OmegaConf.is_config(value) else value


def schema_fields(cfg: DictConfig) -> dict[str, Any]:
    """The parts of a config the schema checks, resolved: whole closed sections, and only the
    listed keys elsewhere (a run's output directory cannot be resolved before Hydra starts)."""
    picked: dict[str, Any] = {}
    for name, field in TrainConfig.model_fields.items():
        if name not in cfg:
            continue
        schema = field.annotation
        if isinstance(schema, type) and issubclass(schema, OpenSection):
            picked[name] = {k: plain(cfg[name][k]) for k in schema.model_fields if k in cfg[name]}
        else:
            picked[name] = plain(cfg[name])
    return picked


def location(loc: tuple[int | str, ...], fields: dict[str, Any]) -> str:
    """A dotted key from a pydantic error location, without a union's tag (`data.fixed.T0`)."""
    parts = [str(p) for p in loc]
    if len(parts) > 1 and parts[0] in TAGGED:
        section = fields.get(parts[0])
        if isinstance(section, dict) and parts[1] == str(section.get("name")):
            del parts[1]
    return ".".join(parts)


# Top-level keys a run reads that the schema does not check: where the run writes (resolved only
# once Hydra runs) and the experiment logger (a library's options, or none).
UNCHECKED = ("run_dir", "logger")


def check_keys(cfg: DictConfig) -> None:
    """Every top-level key is one a run reads: a misspelt key added with `+` is refused."""
    known = (*TrainConfig.model_fields, *UNCHECKED)
    for key in cfg:
        if key not in known:
            raise ConfigError(
                f"{key} is not a key of the config, and no part of a run reads it: remove it "
                f"(top-level keys: {', '.join(known)})"
            )


def validate(cfg: DictConfig | dict[str, Any]) -> TrainConfig:
    """Check a config; raise ConfigError on the first fault."""
    cfg = OmegaConf.create(cfg) if isinstance(cfg, dict) else cfg
    check_keys(cfg)
    fields = schema_fields(cfg)
    try:
        checked = TrainConfig.model_validate(fields)
    except ValidationError as e:
        err = e.errors()[0]
        key = location(err["loc"], fields)
        if err["type"] == "value_error":  # a rule across keys, from a model_validator
            raise ConfigError(f"{key}: {err['msg'].removeprefix('Value error, ')}") from None
        if err["type"] == "extra_forbidden":
            section = key.rpartition(".")[0]
            choice = fields.get(section, {}).get("name")
            raise ConfigError(
                f"{key} is not a key of {section}={choice}: "
                f"remove it or choose a {section} config that has it"
            ) from None
        raise ConfigError(f"{key}={err.get('input')!r} is invalid: {err['msg']}") from None
    check_task_params(checked)
    check_impl(checked)
    check_targets(checked)
    return checked


def check_impl(cfg: TrainConfig) -> None:
    """The model's implementation can build this model and pooling (choices.impl_error)."""
    error = impl_error(cfg.model.name, cfg.model.impl, cfg.pool.name)
    if error:
        raise ConfigError(error)


def check_targets(cfg: TrainConfig) -> None:
    """The readout gives the task's targets: one per step or one per sequence
    (choices.targets_error)."""
    error = targets_error(cfg.task.name, cfg.pool.name, cfg.model.name, cfg.task.loss)
    if error:
        raise ConfigError(error)


def check_task_params(cfg: TrainConfig) -> None:
    """The task's generator accepts `task.params` at the shortest length the data asks for
    (associative_recall: k pairs need 2k + 1 steps); one sequence is drawn to find out."""
    shortest = cfg.data.T0 if isinstance(cfg.data, FixedDataSection) else cfg.data.min_length
    try:
        generate(cfg.task.name, np.random.RandomState(0), shortest, 1, **cfg.task.params)
    except (ValueError, TypeError) as e:
        raise ConfigError(f"task.params={cfg.task.params} is invalid: {e}") from None
