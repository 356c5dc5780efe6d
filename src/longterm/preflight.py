"""Check a command line before Hydra starts: compose the config of every job it would launch
(sweeps on the command line and in `hydra.sweeper.params` of an experiment) and validate each.

A bad override then fails in a second with one line naming the key, the value and what is
allowed, before any output directory exists or any job of a sweep has run. This sits beside
`run.py` as the second module that knows Hydra: it is command-line glue, not part of a run.
Importing it registers the resolvers that name run directories (`longterm.naming`).
"""

import itertools
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import HydraException, MissingConfigException, OverrideParseException
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from longterm import naming  # noqa: F401  registers the resolvers that name run directories
from longterm.config import ConfigError, validate

HYDRA_FLAGS = ("-m", "--multirun")  # other flags (--cfg, --help, ...) are left to Hydra
OPTIONAL_GROUPS = ("arch", "experiment")  # null by default: a run needs no choice there


def job_overrides(overrides: list[str], sweeper_params: DictConfig | None) -> list[list[str]]:
    """Every job's override list, as Hydra's basic sweeper expands them (a cartesian product)."""
    parser = OverridesParser.create()
    parsed = parser.parse_overrides(overrides)
    on_command_line = {o.key_or_group for o in parsed}
    from_config = [
        f"{key}={value}"
        for key, value in (sweeper_params or {}).items()
        if key not in on_command_line
    ]
    axes = [
        [f"{o.get_key_element()}={v}" for v in o.sweep_string_iterator()]
        if o.is_sweep_override()
        else [o.input_line]
        for o in parsed + parser.parse_overrides(from_config)
    ]
    return [list(job) for job in itertools.product(*axes)]


def explain(error: Exception, overrides: list[str]) -> str:
    """One line from a Hydra or OmegaConf composition error."""
    if isinstance(error, OverrideParseException):
        parser = OverridesParser.create()
        for override in overrides:
            try:
                parser.parse_overrides([override])
            except OverrideParseException as e:
                return f"{override!r} is not a valid override: {str(e).splitlines()[0]}"
    if isinstance(error, MissingConfigException) and error.missing_cfg_file:
        group, _, value = error.missing_cfg_file.rpartition("/")
        options = ", ".join(error.options or [])
        return f"{group}={value!r} is invalid: choose one of {options}"
    lines = [line.strip().rstrip(".") for line in str(error).splitlines() if line.strip()]
    if lines and lines[0].startswith("Could not override") and error.__cause__ is not None:
        cause = str(error.__cause__).splitlines()[0]  # e.g. "Key 'val_size' is not in struct"
        return f"{lines[0]}: {cause}" + (f" ({lines[1]})" if len(lines) > 1 else "")
    return "; ".join(lines[:2]) if lines else type(error).__name__


def check_null_groups(overrides: list[str], config_dir: Path) -> None:
    """`group=null` (Hydra's way to drop a default) for a group every run needs."""
    for override in overrides:
        group, _, value = override.partition("=")
        options = sorted(p.stem for p in (config_dir / group).glob("*.yaml"))
        if value == "null" and options and group not in OPTIONAL_GROUPS:
            raise ConfigError(f"{group}=null is invalid: choose one of {', '.join(options)}")


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


def check(argv: list[str], config_dir: Path, config_name: str = "train") -> None:
    """Raise ConfigError (one line) if any job that `argv` would launch has a bad config, or its
    output directory cannot be made. Warn (one line) when a sweep sent to SLURM could wait for
    ever on a lost job (warn_without_accounting)."""
    if any(a.startswith("-") and a not in HYDRA_FLAGS for a in argv):
        return
    overrides = [a for a in argv if a not in HYDRA_FLAGS]
    check_null_groups(overrides, config_dir)
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(str(config_dir.resolve()), version_base="1.3"):
            first = job_overrides(overrides, None)[0]
            cfg = compose(config_name, overrides=first, return_hydra_config=True)
            params = OmegaConf.select(cfg, "hydra.sweeper.params")
            jobs = [compose(config_name, overrides=j) for j in job_overrides(overrides, params)]
            for job in jobs:
                validate(job)
            for job in jobs:
                check_accelerator(job)
            multirun = any(a in HYDRA_FLAGS for a in argv) or params is not None
            check_output_dir(cfg, multirun)
            if multirun:
                warn_without_accounting(jobs)
    except (HydraException, OmegaConfBaseException) as e:
        raise ConfigError(explain(e, overrides)) from None
    finally:
        GlobalHydra.instance().clear()
