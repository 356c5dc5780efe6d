"""The schema of every user-facing config key, checked before any work is done.

`validate(cfg)` raises `ConfigError` with one line naming the key, the value and what is allowed.
The project's own sections (task, pool, model, data) are closed: every key is listed, so a key
added with `+` is refused. Library sections (trainer) are open: only the listed keys are checked.
"""

from typing import Annotated, Any, Literal

import numpy as np
from omegaconf import DictConfig, OmegaConf
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from longterm.tasks import MIN_LENGTH, TASKS, generate

# Allowed values of choice keys. This module imports no torch or Lightning, so a bad command line
# fails in about a second.
LENGTHS = ("per_sequence", "per_batch")  # data.lengths
INITS = ("paper", "torch")  # model.init
MODELS = ("feedforward", "rnn", "lstm", "linear_memory")  # model.name
POOLS = ("attention", "mean", "last")  # pool.name
LOSSES = ("mse", "cross_entropy")  # task.loss
IMPLS = ("reference", "fused")  # model.impl


class ConfigError(ValueError):
    """A config value that is not allowed; the message is one line."""


class Section(BaseModel):
    """A section whose every key the schema lists: a key added with `+` is refused."""

    model_config = ConfigDict(strict=True, extra="forbid", populate_by_name=True)
    target: str | None = Field(default=None, alias="_target_")


class TaskSection(Section):
    name: Literal[TASKS]
    n_features: int = Field(ge=1)
    n_outputs: int = Field(ge=1)
    loss: Literal[LOSSES]
    params: dict[str, int]  # the generator's own keys (associative_recall: k)

    @model_validator(mode="after")
    def outputs_fit_the_loss(self) -> "TaskSection":
        if (self.loss == "mse") != (self.n_outputs == 1):
            raise ValueError(
                f"loss={self.loss} needs n_outputs {'= 1' if self.loss == 'mse' else '>= 2'},"
                f" got {self.n_outputs}"
            )
        return self


class PoolSection(Section):
    name: Literal[POOLS]
    mask_padding: bool


class ModelSection(Section):
    name: Literal[MODELS]
    dim: int = Field(ge=1)
    hidden: int = Field(ge=1)
    negative_slope: float = Field(ge=0)
    init: Literal[INITS]
    impl: Literal[IMPLS]


class DataSection(Section):
    task: str
    seed: int
    batch_size: int = Field(ge=1)
    batches_per_epoch: int = Field(ge=1)
    num_workers: int = Field(ge=0)
    task_params: dict[str, int]


class FixedDataSection(DataSection):
    name: Literal["fixed"]
    T0: int
    lengths: Literal[LENGTHS]
    val_size: int = Field(ge=1)


class VariableDataSection(DataSection):
    name: Literal["variable"]
    min_length: int = Field(ge=MIN_LENGTH)
    max_length: int = Field(ge=MIN_LENGTH)
    val_batches: int = Field(ge=1)
    val_batch_size: int = Field(ge=1)

    @model_validator(mode="after")
    def ordered_lengths(self) -> "VariableDataSection":
        if self.min_length > self.max_length:
            raise ValueError(
                f"min_length={self.min_length} must be <= max_length={self.max_length}"
            )
        return self


class OpenSection(BaseModel):
    """A section of library options (Lightning's Trainer): only the listed keys are checked."""

    model_config = ConfigDict(strict=True, extra="ignore")


class TrainerSection(OpenSection):
    max_epochs: int = Field(ge=1)


class TrainConfig(OpenSection):
    T0: int = Field(ge=MIN_LENGTH, description="shortest sequence length")
    lr: float = Field(gt=0)
    seed: int = Field(ge=0)
    task: TaskSection
    pool: PoolSection
    model: ModelSection
    data: Annotated[FixedDataSection | VariableDataSection, Field(discriminator="name")]
    trainer: TrainerSection


def schema_fields(cfg: DictConfig) -> dict[str, Any]:
    """The parts of a config the schema checks, resolved: whole closed sections, and only the
    listed keys elsewhere (a run's output directory cannot be resolved before Hydra starts)."""
    picked: dict[str, Any] = {}
    for name, field in TrainConfig.model_fields.items():
        if name not in cfg:
            continue
        schema = field.annotation
        if isinstance(schema, type) and issubclass(schema, OpenSection):
            picked[name] = {k: cfg[name][k] for k in schema.model_fields if k in cfg[name]}
        elif OmegaConf.is_config(cfg[name]):
            picked[name] = OmegaConf.to_container(cfg[name], resolve=True)
        else:
            picked[name] = cfg[name]
    return picked


def location(loc: tuple[int | str, ...], data: dict[str, Any]) -> str:
    """A dotted key from a pydantic error location, without the union's tag (`data.fixed.T0`)."""
    parts = [str(p) for p in loc]
    if len(parts) > 1 and parts[0] == "data" and parts[1] == str(data.get("name")):
        del parts[1]
    return ".".join(parts)


def validate(cfg: DictConfig | dict[str, Any]) -> TrainConfig:
    """Check a config; raise ConfigError on the first fault."""
    cfg = OmegaConf.create(cfg) if isinstance(cfg, dict) else cfg
    fields = schema_fields(cfg)
    try:
        checked = TrainConfig.model_validate(fields)
    except ValidationError as e:
        err = e.errors()[0]
        key = location(err["loc"], fields.get("data") or {})
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
    return checked


def check_impl(cfg: TrainConfig) -> None:
    """model.impl=fused is the feedforward model with attention or mean pooling."""
    if cfg.model.impl == "fused" and cfg.model.name != "feedforward":
        raise ConfigError(
            f"model.impl=fused is invalid for model={cfg.model.name}: use model.impl=reference"
        )
    if cfg.model.impl == "fused" and cfg.pool.name not in ("attention", "mean"):
        raise ConfigError(
            f"model.impl=fused is invalid with pool={cfg.pool.name}: "
            "use pool=attention|mean or model.impl=reference"
        )


def check_task_params(cfg: TrainConfig) -> None:
    """The task's generator accepts `task.params` at the shortest length the data asks for
    (associative_recall: k pairs need 2k + 1 steps); one sequence is drawn to find out."""
    shortest = cfg.data.T0 if isinstance(cfg.data, FixedDataSection) else cfg.data.min_length
    try:
        generate(cfg.task.name, np.random.RandomState(0), shortest, 1, **cfg.task.params)
    except (ValueError, TypeError) as e:
        raise ConfigError(f"task.params={cfg.task.params} is invalid: {e}") from None
