"""The schema of every user-facing config key, checked before any work is done.

`validate(cfg)` raises `ConfigError` with one line naming the key, the value and what is allowed.
Sections also carry keys the schema does not list (`_target_`, trainer options); Hydra's struct
mode already refuses keys that do not exist.
"""

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from longterm.tasks import MIN_LENGTH, TASKS

# Allowed values of choice keys. This module imports no torch or Lightning, so a bad command line
# fails in about a second.
LENGTHS = ("per_sequence", "per_batch")  # data.lengths
INITS = ("paper", "torch")  # model.init


class ConfigError(ValueError):
    """A config value that is not allowed; the message is one line."""


class Section(BaseModel):
    model_config = ConfigDict(strict=True, extra="ignore")


class TaskSection(Section):
    name: Literal[TASKS]


class PoolSection(Section):
    name: str
    mask_padding: bool


class ModelSection(Section):
    name: str
    dim: int = Field(ge=1)
    hidden: int = Field(ge=1)
    negative_slope: float = Field(ge=0)
    init: Literal[INITS]


class DataSection(Section):
    name: Literal["fixed", "variable"]
    batch_size: int = Field(ge=1)
    batches_per_epoch: int = Field(ge=1)
    num_workers: int = Field(ge=0)
    lengths: Literal[LENGTHS] = "per_sequence"
    val_size: int = Field(default=1000, ge=1)
    min_length: int = Field(default=50, ge=MIN_LENGTH)
    max_length: int = Field(default=10000, ge=MIN_LENGTH)
    val_batches: int = Field(default=100, ge=1)
    val_batch_size: int = Field(default=10, ge=1)

    @model_validator(mode="after")
    def ordered_lengths(self) -> "DataSection":
        if self.min_length > self.max_length:
            raise ValueError(
                f"min_length={self.min_length} must be <= max_length={self.max_length}"
            )
        return self


class TrainerSection(Section):
    max_epochs: int = Field(ge=1)


class TrainConfig(Section):
    T0: int = Field(ge=MIN_LENGTH, description="shortest sequence length")
    lr: float = Field(gt=0)
    seed: int = Field(ge=0)
    task: TaskSection
    pool: PoolSection
    model: ModelSection
    data: DataSection
    trainer: TrainerSection


def schema_fields(node: Any, schema: type[BaseModel]) -> dict[str, Any]:
    """The values of a config node that `schema` checks, resolving only those (a run's output
    directory, say, cannot be resolved before Hydra has started)."""
    picked = {}
    for name, field in schema.model_fields.items():
        if name in node:
            value = node[name]
            sub = field.annotation
            is_section = isinstance(sub, type) and issubclass(sub, BaseModel)
            picked[name] = schema_fields(value, sub) if is_section else value
    return picked


def validate(cfg: Any) -> TrainConfig:
    """Check a config (a DictConfig or a plain dict); raise ConfigError on the first fault."""
    try:
        return TrainConfig.model_validate(schema_fields(cfg, TrainConfig))
    except ValidationError as e:
        err = e.errors()[0]
        key = ".".join(str(p) for p in err["loc"])
        if err["type"] == "value_error":  # a rule across keys, from a model_validator
            raise ConfigError(f"{key}: {err['msg'].removeprefix('Value error, ')}") from None
        raise ConfigError(f"{key}={err.get('input')!r} is invalid: {err['msg']}") from None
