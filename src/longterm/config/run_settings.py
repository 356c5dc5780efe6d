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

from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from longterm.choices import COMMON_MODEL_KEYS, COMMON_POOL_KEYS
from longterm.store.records import FINAL_STATUSES
from longterm.store.run_dir import debug_run, run_record
from longterm.store.upgrade import ADDED_SETTINGS, current_settings

HYDRA_CONFIG = ".hydra/config.yaml"
DEFAULT_RUN_DIR = "${hydra:runtime.output_dir}"  # conf/train.yaml: run_dir


# The settings every run has and the built-in tasks' own keys (run_params); a model's own key of
# one of these names is recorded as `model.<key>`.
SETTINGS = (
    *("task", "loss", "pool", "model", "data", "T0", "lr", "seed", "mask_padding"),
    *("batch_size", "max_epochs", "lengths", "min_length", "max_length"),
    *("optim", "weight_decay", "schedule", "warmup", "clip", "head", "stop_at", "stop_strict"),
    *("k", "statements", "variables", "arity", "vocab"),
    *("kv_pairs", "power_a", "random_non_queries", "data_tokens"),
)


def run_params(cfg: DictConfig) -> dict[str, Any]:
    """The flat hyperparameters that identify a run (HPARAMS view, result.json): the settings
    every run has, the task's own keys (`k`), the model's (its encoder's: `layers`; `model.<key>`
    where a setting has the name) and the readout's (`pool.<key>`)."""
    params = {
        "task": cfg.task.name,
        "loss": cfg.task.loss,
        "pool": cfg.pool.name,
        "model": cfg.model.name,
        "data": cfg.data.name,
        "T0": cfg.T0,
        "lr": cfg.lr,
        "seed": cfg.seed,
        "mask_padding": cfg.pool.mask_padding,
        "batch_size": cfg.data.batch_size,
        "max_epochs": cfg.trainer.max_epochs,
        **recipe_params(cfg),
        "head": OmegaConf.select(cfg, "model.head", default=ADDED_SETTINGS["head"]),
        **{
            param: OmegaConf.select(
                cfg, f"callbacks.stop_when_solved.{key}", default=ADDED_SETTINGS[param]
            )
            for param, key in STOP.items()
        },
    }
    for key in ("lengths", "min_length", "max_length"):
        if key in cfg.data:
            params[key] = cfg.data[key]
    params.update(cfg.task.params)  # the task's own keys (associative_recall: k)
    params.update(own_params(cfg))
    return params


# The training recipe's settings (conf/train.yaml: optim; training/recipes.py) as run_params names
# them: optim.<key>, and the optimizer's name as `optim`. A config made before a key existed
# reads as the run was made (store/upgrade.py: ADDED_SETTINGS).
RECIPE = {"optim": "name", "weight_decay": "weight_decay", "schedule": "schedule"}
RECIPE |= {"warmup": "warmup", "clip": "clip"}
# The accuracy at which a run stops (callbacks.stop_when_solved): at or above `threshold`, or
# above it where `strict` (zoology's rule).
STOP = {"stop_at": "threshold", "stop_strict": "strict"}


def recipe_params(cfg: DictConfig) -> dict[str, Any]:
    """The recipe's settings of `cfg` as run_params names them."""
    return {
        param: OmegaConf.select(cfg, f"optim.{key}", default=ADDED_SETTINGS[param])
        for param, key in RECIPE.items()
    }


# The keys every model section and every pool section has: the others are the plugin's own.
COMMON_KEYS = {"model": COMMON_MODEL_KEYS, "pool": COMMON_POOL_KEYS}


def own_params(cfg: DictConfig) -> dict[str, Any]:
    """The model's and the readout's own keys, as run_params names them."""
    own: dict[str, Any] = {}
    for section in COMMON_KEYS:
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
    return key if section == "model" and key not in SETTINGS else f"{section}.{key}"


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
        return str(result.get("status")), current_settings(result)
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
