"""What identifies a run (`run_params`, derived from the composed config) and the run-directory
settings check.

A run directory belongs to one set of settings. A command whose job would run in a directory
that holds a run of other settings is refused, in one line, before anything is written there:
the command-line check (config/command_line.py) runs before Hydra, which writes a job's `.hydra/`
before the job starts, and `run.train` checks again once it holds the directory.

The settings compared are those that identify a run (`run_params`: task, model, pooling, lengths,
lr, seed, epoch limit, the training recipe, ...), as the run recorded them: its result.json,
whatever its status, or, for a run stopped before it wrote one, its `.hydra/config.yaml`; a
record made before a setting existed reads as the run was made (store/upgrade.py).
"""

import types
import typing
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException
from pydantic import BaseModel

from longterm.choices import COMMON_MODEL_KEYS, COMMON_POOL_KEYS
from longterm.config.marks import COPY_OF, SETTING
from longterm.config.schema import TrainConfig
from longterm.store.records import FINAL_STATUSES
from longterm.store.run_dir import debug_run, run_record
from longterm.store.upgrade import ADDED_SETTINGS, current_paths, current_pool, current_settings

HYDRA_CONFIG = ".hydra/config.yaml"
DEFAULT_RUN_DIR = "${hydra:runtime.output_dir}"  # conf/train.yaml: run_dir


@dataclass(frozen=True)
class Setting:
    """A key that identifies a run (config/schema.py: `setting`): its flat name, where it is in
    the composed config, and its schema types (a union's members, a choice's values)."""

    name: str
    path: str
    types: tuple[Any, ...]


def schema_keys(model: type[BaseModel], mark: str, prefix: str = "") -> dict[str, tuple]:
    """The keys of `model` and its sections that carry `mark` (SETTING, COPY_OF): path ->
    (the mark's value, the key's schema type). A section that is a union (data) gives its
    members' keys, each path once."""
    found: dict[str, tuple] = {}
    for key, field in model.model_fields.items():
        path = f"{prefix}{field.alias or key}"
        sections = [t for t in members(field.annotation) if is_section(t)]
        for section in sections:
            for inner, marked in schema_keys(section, mark, f"{path}.").items():
                found.setdefault(inner, (marked[0], []))[1].extend(marked[1])
        extra = field.json_schema_extra
        if isinstance(extra, dict) and mark in extra:
            found.setdefault(path, (extra[mark] or key, []))[1].append(field.annotation)
    return found


def members(annotation: Any) -> tuple[Any, ...]:
    """The members of a union, or the annotation itself."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return typing.get_args(annotation)
    return (annotation,)


def is_section(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


@cache
def identity() -> dict[str, Setting]:
    """What identifies a run, by flat name, from the schema's marks (config/schema.py: setting),
    in the schema's order. A run's flat settings (`run_params`) are these, the task's own keys
    and its model's and readout's own keys."""
    found: dict[str, Setting] = {}
    for path, (name, annotations) in schema_keys(TrainConfig, SETTING).items():
        kinds = tuple(m for a in annotations for m in members(a))
        found[name] = Setting(name, path, tuple(dict.fromkeys(kinds)))
    return found


@cache
def copies() -> dict[str, str]:
    """Keys that repeat a setting given elsewhere (config/schema.py: copy_of): path -> the path
    of the key it repeats (`data.T0` -> `T0`)."""
    return {path: source for path, (source, _) in schema_keys(TrainConfig, COPY_OF).items()}


# The built-in tasks' own keys (task.params), a run's settings under their own names (so a
# model's own key of one of these names is recorded as `model.<key>`), with their HPARAMS types.
TASK_KEYS: dict[str, type] = {
    "k": float,  # associative_recall
    "statements": float,  # algorithmic
    "variables": float,  # algorithmic
    "arity": float,  # fixed_knowledge
    "vocab": float,  # fixed_knowledge, mqar, selective_copying, induction_heads
    "kv_pairs": float,  # mqar
    "power_a": float,  # mqar
    "random_non_queries": bool,  # mqar
    "data_tokens": float,  # selective_copying
}
ABSENT = object()


def run_params(cfg: DictConfig) -> dict[str, Any]:
    """The flat settings that identify a run (result.json's top level, the run-directory check,
    HPARAMS, the collector): every key the schema marks (`identity`), then the task's own keys
    (`k`) and the model's (its encoder's: `layers`; `model.<key>` where a setting has the name)
    and the readout's (`pool.<key>`). A key a config made before it existed lacks reads as the
    run was made (store/upgrade.py: ADDED_SETTINGS); a key of the other data choice is left out."""
    params: dict[str, Any] = {}
    for name, key in identity().items():
        value = OmegaConf.select(cfg, key.path, default=ABSENT)
        if value is ABSENT and name in ADDED_SETTINGS:
            value = ADDED_SETTINGS[name]
        if value is not ABSENT:
            params[name] = value
    params.update(OmegaConf.select(cfg, "task.params", default={}))  # the task's (k)
    params.update(own_params(cfg))
    return params


# The training recipe's settings (conf/train.yaml: optim; training/recipes.py) by their names.
RECIPE = tuple(name for name, key in identity().items() if key.path.startswith("optim."))


def recorded_params(record: dict[str, Any]) -> dict[str, Any]:
    """The settings of a result record (run_params' keys of the config it recorded) as it
    recorded them, and those it predates as the run had them: from its config (`model.dim`,
    before it was a setting), else as store/upgrade.py says. A record without a config this code
    can read: the whole record, settings read as store/upgrade.py says."""
    settings = current_settings(record)
    config = record.get("config")
    if not isinstance(config, dict):
        return settings
    try:
        derived = run_params(OmegaConf.create(current_pool(current_paths(config))))
    except (OmegaConfBaseException, AttributeError, KeyError):  # a config this code cannot read
        return settings
    return {key: settings.get(key, value) for key, value in derived.items()}


# The keys every model section and every pool section has: the others are the plugin's own.
COMMON_KEYS = {"model": COMMON_MODEL_KEYS, "pool": COMMON_POOL_KEYS}


def own_params(cfg: DictConfig) -> dict[str, Any]:
    """The model's and the readout's own keys, as run_params names them."""
    own: dict[str, Any] = {}
    for section in COMMON_KEYS:
        if section in cfg:  # a record's config may lack one (tests' records)
            own |= section_own(section, OmegaConf.to_container(cfg[section], resolve=True))
    return own


def section_own(section: str, values: dict[str, Any]) -> dict[str, Any]:
    """The own keys among the `values` of a model or pool section (a run's, or a conf file's),
    as run_params names them."""
    common = (*COMMON_KEYS[section], "defaults")  # a conf file's defaults list is no key
    return {param_name(section, k): v for k, v in values.items() if k not in common}


def param_name(section: str, key: str) -> str:
    """A model's own key by its name, `model.<key>` where a setting of every run has the name; a
    readout's as `pool.<key>`."""
    taken = section != "model" or key in identity() or key in TASK_KEYS
    return f"{section}.{key}" if taken else key


def job_run_dir(cfg: DictConfig, multirun: bool) -> Path:
    """The directory the job of `cfg` (composed with Hydra's section, its overrides in
    `hydra.overrides.task`) runs in, as Hydra names it."""
    given = OmegaConf.to_container(OmegaConf.masked_copy(cfg, ["run_dir"]))["run_dir"]
    if given != DEFAULT_RUN_DIR:
        return Path(cfg.run_dir)
    hydra = cfg.hydra
    return Path(hydra.sweep.dir) / hydra.sweep.subdir if multirun else Path(hydra.run.dir)


def recorded(run_dir: Path) -> tuple[str, dict[str, Any]] | None:
    """(status, settings) of the run in `run_dir` as it recorded them; the status is `unfinished`
    for a run without result.json. None when the directory holds no run it can read; RunDirError
    for a result.json that cannot be read."""
    result = run_record(run_dir)
    if result is not None:
        return str(result.get("status")), recorded_params(result)
    if (run_dir / HYDRA_CONFIG).is_file():
        try:
            return "unfinished", run_params(OmegaConf.load(run_dir / HYDRA_CONFIG))
        except OmegaConfBaseException:  # a config this code can no longer read
            return None
    return None


def other_settings(cfg: DictConfig, run_dir: Path) -> str | None:
    """Why a run of `cfg` may not run in `run_dir` (one line), or None when it may: the run the
    directory holds has other settings. A debug run's directory takes any run, which starts over
    there (store/run_dir.py: clear_debug_run)."""
    found = recorded(run_dir)
    if found is None or debug_run(run_record(run_dir)):
        return None
    status, theirs = found  # a key a record of older code lacks is not held against it
    differ = [f"{k}={theirs[k]!r}" for k, v in run_params(cfg).items() if theirs.get(k, v) != v]
    if not differ:
        return None
    settings = f"run with other settings ({', '.join(differ)})"
    if status in FINAL_STATUSES:
        return f"{run_dir} holds a finished {settings}: give this run another directory"
    held = {"interrupted": "an interrupted", "failed": "a failed"}.get(status, "an unfinished")
    return (
        f"{run_dir} holds {held} {settings}: rerun it with its own settings to resume it, or "
        "give this run another directory"
    )
