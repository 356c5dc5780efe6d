"""Check a composed config before any work is done: `validate(cfg)` raises `ConfigError` with one
line naming the key, the value and what is allowed. The keys and their rules are config/schema.py's;
a model's own keys are its encoder's signature, a readout's its class's, and a task's generator is
run once to see that it gives what its section declares (longterm.plugins.resolve).

No Lightning is imported; torch only with the encoder's and the readout's modules, which are
built on PyTorch's `meta` device (shapes, no memory, no computation) to run their constructors'
own checks.
"""

import json
from functools import cache
from typing import Any

import numpy as np
from omegaconf import DictConfig, OmegaConf
from pydantic import ValidationError

from longterm.choices import (
    COMMON_MODEL_KEYS,
    COMMON_POOL_KEYS,
    head_error,
    impl_error,
    targets_error,
)
from longterm.config.mad_settings import setting_error
from longterm.config.run_settings import ABSENT, copies
from longterm.config.schema import (
    FixedDataSection,
    MadDataSection,
    OpenSection,
    TrainConfig,
)
from longterm.plugins.keys import encoder_keys, readout_keys, takes_impl
from longterm.plugins.resolve import (
    PluginError,
    class_path,
    encoder_class,
    generator,
    readout_class,
)
from longterm.tasks import NO_TARGET, default_width
from longterm.tasks.inputs import encoder_in_features


class ConfigError(ValueError):
    """A config value that is not allowed; the message is one line."""


# Sections chosen from a config group; pydantic puts the choice in an error's location.
TAGGED = ("data", "launcher")


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
    check_mad(cfg)
    fields = schema_fields(cfg)
    check_copies(fields)
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
            if choice is None or section == "optim":  # a section that is no choice (eval, optim)
                raise ConfigError(f"{key} is not a key of {section}: remove it") from None
            raise ConfigError(
                f"{key} is not a key of {section}={choice}: "
                f"remove it or choose a {section} config that has it"
            ) from None
        raise ConfigError(f"{key}={err.get('input')!r} is invalid: {err['msg']}") from None
    check_task(checked)
    check_warmup(checked)
    check_head(checked)
    check_positions(checked)
    causal = check_model(checked)
    readout = check_readout(checked)
    check_impl(checked, readout)
    check_targets(checked, causal, readout)
    return checked


def check_mad(cfg: DictConfig) -> None:
    """A MAD task's setting is one of its own, data=mad reads a MAD task at its setting's params
    (config/mad_settings.py); the setting's name is checked before any value it gives is read."""
    task = cfg.get("task")
    if not isinstance(task, DictConfig):
        return
    data = OmegaConf.select(cfg, "data.name")
    named = {k: task.get(k) for k in ("name", "generator", "setting")}
    error = setting_error({**named, "params": {}}, data)
    if error is None and data == "mad":
        error = setting_error({**named, "params": plain(task.get("params") or {})}, data)
    if error:
        raise ConfigError(error)


def check_copies(fields: dict[str, Any]) -> None:
    """A key that repeats another (data.T0 is T0: config/schema.py copy_of) has its value: a run
    is made and recorded by one value of each setting, never trained at data.T0=100 and
    recorded at T0=50."""
    for path, source in copies().items():
        value, given = dig(fields, path), dig(fields, source)
        if value is ABSENT or given is ABSENT or value == given:
            continue
        if isinstance(value, dict):
            hint = f"give {source}.KEY=VALUE"
        elif source == "task.generator":
            hint = "choose the task with task=NAME (a conf file of task/)"
        else:
            hint = f"give {source}={value}"
        raise ConfigError(f"{path}={value!r} is invalid: {path} is set by {source}: {hint}")


def dig(fields: dict[str, Any], path: str) -> Any:
    """The value at a dotted `path` of `fields`, or ABSENT."""
    for key in path.split("."):
        if not isinstance(fields, dict) or key not in fields:
            return ABSENT
        fields = fields[key]
    return fields


def check_warmup(cfg: TrainConfig) -> None:
    """optim.warmup leaves updates to the cosine of warmup_cosine: fewer than the run's
    trainer.max_epochs x data.batches_per_epoch."""
    updates = cfg.trainer.max_epochs * cfg.data.batches_per_epoch
    if cfg.optim.warmup >= updates:
        raise ConfigError(
            f"optim.warmup={cfg.optim.warmup} is invalid: the run has {updates} updates "
            f"(trainer.max_epochs x data.batches_per_epoch); warm up over fewer"
        )


def check_model(cfg: TrainConfig) -> bool:
    """The encoder imports, takes the model's keys, and builds; return whether it is causal."""
    model = cfg.model.model_dump()
    try:
        cls = encoder_class(cfg.model.encoder)
        keys = encoder_keys(cls, model, COMMON_MODEL_KEYS)
    except PluginError as e:
        raise ConfigError(str(e)) from None
    args = (encoder_in_features(cfg.task.model_dump(), cfg.model.dim), cfg.model.dim)
    built("model", "encoder", cfg.model.encoder, cls, args, json.dumps(keys, sort_keys=True))
    return cls.causal


def check_head(cfg: TrainConfig) -> None:
    """The head can give the task's outputs (choices.head_error)."""
    task = cfg.task
    error = head_error(cfg.model.head, task.inputs, task.n_outputs, task.vocab)
    if error:
        raise ConfigError(error)


def check_positions(cfg: TrainConfig) -> None:
    """A model defined for at most `max_positions` steps (models/bounded.py) takes the run's
    sequences: T0 (data.max_length for data=variable) and every length of eval.lengths."""
    limit = (cfg.model.model_extra or {}).get("max_positions")
    if not isinstance(limit, int):
        return
    longest = cfg.data.T0 if isinstance(cfg.data, FixedDataSection) else cfg.data.max_length
    key = "T0" if isinstance(cfg.data, FixedDataSection) else "data.max_length"
    if isinstance(cfg.data, MadDataSection):
        longest, key = cfg.data.steps, "task.setting"
    for where, length in ((key, longest), *(("eval.lengths", t) for t in cfg.eval.lengths)):
        if length > limit:
            raise ConfigError(
                f"{where}={length} is invalid with model.max_positions={limit}: the model is "
                "defined for sequences of at most max_positions steps; raise model.max_positions"
            )


def check_readout(cfg: TrainConfig) -> type:
    """The readout imports, takes the pool section's keys, and builds; return its class."""
    try:
        cls = readout_class(cfg.pool.readout)
        keys = readout_keys(cls, cfg.pool.model_dump(), COMMON_POOL_KEYS, cfg.model.model_dump())
    except PluginError as e:
        raise ConfigError(str(e)) from None
    args = (cfg.model.dim, cfg.pool.mask_padding)
    built("pool", "readout", cfg.pool.readout, cls, args, json.dumps(keys, sort_keys=True))
    return cls


@cache
def built(section: str, key: str, path: str, cls: type, args: tuple, keys: str) -> None:
    """ConfigError unless `cls` (at `path`, the `section.key` of the config) builds with these
    arguments (`keys` as JSON), on PyTorch's meta device (no memory); once per process for each,
    since a sweep's jobs share most."""
    import torch  # the plugin's module has imported it already

    try:
        with torch.device("meta"):
            cls(*args, **json.loads(keys))
    except (ValueError, TypeError) as e:  # the constructor's own checks
        raise ConfigError(f"{section}: {e}") from None
    except Exception as e:
        raise ConfigError(
            f"{section}.{key}={path} fails to build: {type(e).__name__}: {e}"
        ) from None


def check_impl(cfg: TrainConfig, readout: type) -> None:
    """The model's implementation can build this model and readout (choices.impl_error)."""
    model = cfg.model
    own_impl = takes_impl(encoder_class(model.encoder))
    error = impl_error(
        model.encoder, model.name, model.impl, class_path(readout), cfg.pool.name, own_impl
    )
    if error:
        raise ConfigError(error)


def check_targets(cfg: TrainConfig, causal: bool, readout: type) -> None:
    """The readout gives the task's targets: one per step or one per sequence
    (choices.targets_error)."""
    task, pool = cfg.task, cfg.pool.name
    error = targets_error(
        task.name,
        task.labels,
        pool,
        class_path(readout),
        readout.per_step,
        cfg.model.name,
        causal,
        task.loss,
    )
    if error:
        raise ConfigError(error)


def check_task(cfg: TrainConfig) -> None:
    """The task's generator imports, accepts `task.params` at the shortest length the data asks
    for (associative_recall: k pairs need 2k + 1 steps) and at every length of eval.lengths, and
    gives what the task section declares (task_error); two sequences are drawn to find out."""
    task = cfg.task
    if isinstance(cfg.data, MadDataSection):  # the setting's length
        shortest = cfg.data.steps
    else:
        shortest = cfg.data.T0 if isinstance(cfg.data, FixedDataSection) else cfg.data.min_length
    try:
        draw = generator(task.generator)
    except PluginError as e:
        raise ConfigError(str(e)) from None
    for length in (shortest, *cfg.eval.lengths):
        try:
            X, y, mask = draw(np.random.RandomState(0), length, 2, None, **task.params)
        except (ValueError, TypeError) as e:
            key = "task.params" if length == shortest else "eval.lengths"
            value = task.params if length == shortest else cfg.eval.lengths
            raise ConfigError(f"{key}={value} is invalid: {e}") from None
        except Exception as e:
            raise ConfigError(
                f"task.generator={task.generator} fails: {type(e).__name__}: {e}"
            ) from None
        error = task_error(task.model_dump(), X, y, mask, default_width(length))
        if error:
            raise ConfigError(error)


def task_error(
    task: dict[str, Any], X: np.ndarray, y: np.ndarray, mask: np.ndarray, width: int
) -> str | None:
    """Why a generator's batch (X, y, mask) of 2 sequences at the paper's `width` does not match
    its task section, in one line; None if it does."""
    name, n = task["name"], len(X)
    gives = f"task={name}'s generator gives"
    tokens = task.get("inputs", "onehot") == "tokens"
    shape = (n, width) if tokens else (n, width, np.shape(X)[-1])
    if np.shape(X) != shape or np.shape(mask) != (n, width):
        return (
            f"task.generator={task['generator']} is invalid: {gives} X {np.shape(X)} and mask "
            f"{np.shape(mask)}; a batch of {n} at min_length {width} pads to "
            f"({n}, {width}{'' if tokens else ', F'}) and ({n}, {width})"
        )
    if tokens:
        return token_error(task, X) or labels_error(task, y, n, width, gives)
    if X.shape[-1] != task["n_features"]:
        return (
            f"task.n_features={task['n_features']} is invalid: {gives} {X.shape[-1]} features "
            "per step"
        )
    return labels_error(task, y, n, width, gives)


def token_error(task: dict[str, Any], X: np.ndarray) -> str | None:
    """Why token ids X (n, width) do not fit a section of `inputs: tokens`; None if they do."""
    if not np.issubdtype(X.dtype, np.integer):
        return (
            f"task.inputs=tokens is invalid: task={task['name']}'s generator gives X of {X.dtype}"
        )
    if X.size and (X.min() < 0 or X.max() >= task["vocab"]):
        return (
            f"task.vocab={task['vocab']} is invalid: task={task['name']}'s generator gives token "
            f"ids {X.min()}..{X.max()}; ids must be 0..vocab - 1"
        )
    return None


def labels_error(task: dict[str, Any], y: np.ndarray, n: int, width: int, gives: str) -> str | None:
    """Why targets y do not fit the section's labels, n_outputs and loss; None if they do."""
    per_step = np.ndim(y) == 2
    if np.shape(y) not in ((n,), (n, width)):
        return f"task.generator={task['generator']} is invalid: {gives} y of shape {np.shape(y)}"
    if per_step != (task["labels"] == "step"):
        kind = "step" if per_step else "sequence"
        return f"task.labels={task['labels']} is invalid: {gives} one target per {kind}; use {kind}"
    if task["loss"] == "cross_entropy":
        labels = np.asarray(y)[np.asarray(y) != NO_TARGET] if per_step else np.asarray(y)
        if labels.size and (
            not np.all(labels == np.round(labels))
            or labels.min() < 0
            or labels.max() >= task["n_outputs"]
        ):
            return (
                f"task.n_outputs={task['n_outputs']} is invalid: {gives} labels "
                f"{labels.min()}..{labels.max()}; classes must be 0..n_outputs - 1"
            )
    return None
