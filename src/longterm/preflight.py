"""Check a command line before Hydra starts: compose the config of every job it would launch
(sweeps on the command line and in `hydra.sweeper.params` of an experiment) and validate each.

A bad override then fails in a second with one line naming the key, the value and what is
allowed, before any output directory exists or any job of a sweep has run. This sits beside
`run.py` as the second module that knows Hydra: it is command-line glue, not part of a run.
"""

import itertools
from pathlib import Path

from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import HydraException, MissingConfigException, OverrideParseException
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from longterm.config import ConfigError, validate

HYDRA_FLAGS = ("-m", "--multirun")  # other flags (--cfg, --help, ...) are left to Hydra


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


def check(argv: list[str], config_dir: Path, config_name: str = "train") -> None:
    """Raise ConfigError (one line) if any job that `argv` would launch has a bad config."""
    if any(a.startswith("-") and a not in HYDRA_FLAGS for a in argv):
        return
    overrides = [a for a in argv if a not in HYDRA_FLAGS]
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(str(config_dir.resolve()), version_base="1.3"):
            first = job_overrides(overrides, None)[0]
            cfg = compose(config_name, overrides=first, return_hydra_config=True)
            params = OmegaConf.select(cfg, "hydra.sweeper.params")
            for job in job_overrides(overrides, params):
                validate(compose(config_name, overrides=job))
    except (HydraException, OmegaConfBaseException) as e:
        raise ConfigError(explain(e, overrides)) from None
    finally:
        GlobalHydra.instance().clear()
