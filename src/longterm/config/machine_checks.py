"""Checks of a command line against the machine it runs on, before any job starts: the
accelerator it names exists, every trainer key is an argument of Lightning's Trainer, the logger
is a Lightning logger that takes its keys, the output directory can be made, and a sweep sent to
SLURM is warned when accounting cannot follow its jobs. Lightning (and a user's logger) is
imported only when a check needs it."""

import difflib
import functools
import inspect
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from longterm.config.builtins import CONF
from longterm.config.schema import TrainerSection
from longterm.config.validate import ConfigError
from longterm.plugins.resolve import PluginError, resolve


def check_accelerator(cfg: DictConfig) -> None:
    """An accelerator asked for by name is one this machine has (Lightning's own test)."""
    name = OmegaConf.select(cfg, "trainer.accelerator")
    if name in (None, "auto", "cpu"):
        return
    from pytorch_lightning.accelerators import AcceleratorRegistry  # only when one is named

    kind = "cuda" if name == "gpu" else name
    if not AcceleratorRegistry.get(kind).is_available():
        raise ConfigError(
            f"trainer.accelerator={name} is invalid: this machine has no {name} "
            "(trainer.accelerator=auto uses one when there is one)"
        )


# Trainer keys the project's own conf files set (conf/trainer/default.yaml, conf/launcher/
# slurm.yaml) that the schema does not check: no need to ask Lightning about them.
CONF_SET = ("_target_", "default_root_dir", "plugins")


def check_trainer_keys(cfg: DictConfig) -> None:
    """Every key of the trainer section is an argument of Lightning's Trainer (the schema checks
    only the options it lists); Lightning is imported only when there is another key."""
    trainer = cfg.get("trainer") or {}
    others = [k for k in trainer if k not in TrainerSection.model_fields and k not in CONF_SET]
    if not others:
        return
    from pytorch_lightning import Trainer

    allowed = [name for name in inspect.signature(Trainer.__init__).parameters if name != "self"]
    for key in others:
        if key not in allowed:
            close = difflib.get_close_matches(key, allowed, n=1)
            hint = f"did you mean trainer.{close[0]}?" if close else "see Trainer's arguments"
            raise ConfigError(f"trainer.{key} is not an argument of Lightning's Trainer: {hint}")


@functools.cache  # the package's own conf files: read once per process, not once per job
def builtin_loggers() -> dict[str, set[str]]:
    """The built-in loggers (conf/logger/*.yaml): each one's import path and its keys."""
    confs = (OmegaConf.load(path) for path in sorted((CONF / "logger").glob("*.yaml")))
    return {
        str(c["_target_"]): set(c) for c in confs if isinstance(c, DictConfig) and "_target_" in c
    }


LOGGER_HOWTO = "a logger of your own: docs/running.md, Loggers"


def check_logger(cfg: DictConfig) -> None:
    """The logger section is none (logger=none) or a Lightning logger by import path whose
    `__init__` takes its keys and is given those it needs; the class is imported (and Lightning
    with it) only when it is not a built-in's (conf/logger/*.yaml) with a built-in's keys."""
    logger = cfg.get("logger")
    if not logger:
        return
    if not isinstance(logger, DictConfig) or "_target_" not in logger:
        raise ConfigError(
            f"logger={logger} is invalid: choose a logger= of conf/logger/, or give "
            f"logger._target_ ({LOGGER_HOWTO})"
        )
    path, keys = str(logger["_target_"]), [k for k in logger if k != "_target_"]
    if set(keys) | {"_target_"} <= builtin_loggers().get(path, set()):
        return
    try:
        cls = resolve(path, "logger._target_")
    except PluginError as e:
        raise ConfigError(str(e)) from None
    from pytorch_lightning.loggers import Logger

    if not (isinstance(cls, type) and issubclass(cls, Logger)):
        raise ConfigError(
            f"logger._target_={path} is invalid: not a Lightning logger (a subclass of "
            "pytorch_lightning.loggers.Logger)"
        )
    params = inspect.signature(cls).parameters
    any_key = any(p.kind is p.VAR_KEYWORD for p in params.values())
    for key in keys:
        if key not in params and not any_key:
            raise ConfigError(
                f"logger.{key} is not an argument of {path}: remove it (~logger.{key}) or give "
                f"the logger a conf file of its own ({LOGGER_HOWTO})"
            )
    for name, p in params.items():
        needed = p.default is p.empty and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
        if needed and name not in keys:
            raise ConfigError(f"logger.{name} is missing: {path} needs it (+logger.{name}=...)")


def check_output_dir(cfg: DictConfig, multirun: bool) -> None:
    """The run's (or the sweep's) directory can be made: its nearest existing folder takes a new
    folder (tried with a temporary one, removed at once)."""
    key = "hydra.sweep.dir" if multirun else "hydra.run.dir"
    path = Path(OmegaConf.select(cfg, key)).absolute()
    existing = next(p for p in (path, *path.parents) if p.exists())
    try:
        if not existing.is_dir():
            raise NotADirectoryError(f"{existing} is a file")
        if existing != path or not os.access(path, os.W_OK | os.X_OK):
            os.rmdir(tempfile.mkdtemp(dir=existing, prefix=".preflight-"))
    except OSError as e:
        reason = e.strerror or str(e)
        raise ConfigError(f"{key}={path} is invalid: cannot create it ({reason})") from None


# Jobs of this user since now: an empty answer from a cluster whose accounting works.
SACCT = ["sacct", "--noheader", "--allocations", "--starttime", "now"]


def accounting_problem() -> str | None:
    """Why `sacct` cannot report job states on this machine; None when it can, or when SLURM's
    commands are not here at all (submitit then refuses the sweep itself)."""
    if shutil.which("sbatch") is None:
        return None
    try:
        out = subprocess.run(SACCT, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"{SACCT[0]}: {e}"
    if out.returncode == 0:
        return None
    lines = [line.strip() for line in (out.stderr + out.stdout).splitlines() if line.strip()]
    return lines[-1] if lines else f"sacct exited with {out.returncode}"


def warn_without_accounting(jobs: list[DictConfig]) -> None:
    """A sweep sent to SLURM without accounting: say on one line that a job that dies without
    its result would leave the sweep waiting (submitit learns a job's end from `sacct`)."""
    if not any(OmegaConf.select(job, "launcher.name") == "slurm" for job in jobs):
        return
    problem = accounting_problem()
    if problem:
        print(
            f"warning: launcher=slurm: sacct cannot report job states here ({problem}); "
            "submitit follows jobs with it, so a job that ends without its result (scancel, out "
            "of memory, a lost node) leaves this command waiting: docs/reliability.md, SLURM",
            file=sys.stderr,
        )
