"""Check a command line before Hydra starts: compose the config of every job it would launch
(sweeps on the command line and in `hydra.sweeper.params` of an experiment) and validate each.

A bad override then fails in a second with one line naming the key, the value and what is
allowed, before any output directory exists or any job of a sweep has run. The checks against
the machine are config/machine_checks.py's; Hydra's private API is reached through
config/hydra_internals.py. Importing it registers the resolvers that name run directories
(`longterm.config.run_names`).
"""

import difflib
import itertools
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from hydra import compose
from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import HydraException, MissingConfigException, OverrideParseException
from omegaconf import DictConfig, OmegaConf, open_dict
from omegaconf.errors import OmegaConfBaseException

from longterm.config import run_names  # noqa: F401  registers the resolvers naming run dirs
from longterm.config.builtins import builtin_path
from longterm.config.compositions import Compositions, with_job_section
from longterm.config.debug import debug_conflict
from longterm.config.hydra_internals import start_hydra
from longterm.config.machine_checks import (
    check_accelerator,
    check_logger,
    check_output_dir,
    check_trainer_keys,
    warn_without_accounting,
)
from longterm.config.run_settings import job_run_dir, other_settings
from longterm.config.validate import ConfigError, validate
from longterm.store.run_dir import RunDirError, holder, in_use

HYDRA_FLAGS = ("-m", "--multirun")
# Flags with a value that change what is composed; the others (--cfg, --help, ...) print
# something instead of running, and are left to Hydra.
CONFIG_DIR_FLAGS = ("--config-dir", "-cd")
CONFIG_NAME_FLAGS = ("--config-name", "-cn")
# A group whose conf files name a plugin, and the key holding its import path.
# Each plugin group's keys that name a class by import path, the one that makes it first (MAD's
# model shape takes its sequence mixer by import path too: models/mad.py).
PLUGIN_GROUPS = {"model": ("encoder", "mixer"), "pool": ("readout",), "task": ("generator",)}


@dataclass
class CommandLine:
    """What Hydra would compose from a command line."""

    overrides: list[str]
    multirun: bool = False
    config_dir: Path | None = None  # --config-dir: a user's conf files, before the built-ins
    config_name: str | None = None


def parse(argv: list[str]) -> CommandLine | None:
    """The overrides and the flags that change what is composed; None for a command line with a
    flag that Hydra answers itself (--help, --cfg job, ...)."""
    line, args, interrupting = CommandLine([]), list(argv), None
    while args:
        arg = args.pop(0)
        flag, _, value = arg.partition("=") if arg.startswith("-") else (arg, "", "")
        if arg.startswith("-") and line.overrides:
            interrupting = flag  # Hydra's parser takes the overrides in one run of arguments
        elif interrupting:
            raise ConfigError(
                f"{interrupting} is invalid between overrides: put the flags first "
                f"(python src/train.py {interrupting} ... key=value ...)"
            )
        if arg in HYDRA_FLAGS:
            line.multirun = True
        elif flag in CONFIG_DIR_FLAGS + CONFIG_NAME_FLAGS:
            if not value:
                if not args:
                    raise ConfigError(f"{flag} needs a value: {flag} DIR")
                value = args.pop(0)
            if flag in CONFIG_DIR_FLAGS:
                line.config_dir = Path(value)
            else:
                line.config_name = value
        elif arg.startswith("-"):
            return None
        else:
            line.overrides.append(arg)
    return line


@contextmanager
def composing(config_dir: Path, extra_dir: Path | None = None) -> Iterator[None]:
    """Hydra initialised as `src/train.py` runs it: the built-in conf files in `config_dir`, and
    a user's `--config-dir` before them, where Hydra's own command line puts it (hydra/_internal/
    utils.py: add_conf_dir; the public initialize_config_dir takes one directory only)."""
    if extra_dir is not None and not extra_dir.is_dir():
        raise ConfigError(f"--config-dir={extra_dir} is invalid: no such directory")
    GlobalHydra.instance().clear()
    start_hydra(config_dir, extra_dir)
    try:
        yield
    finally:
        GlobalHydra.instance().clear()


OPTIONAL_GROUPS = ("arch", "experiment", "debug")  # null by default: a run needs no choice there


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
        options = list(error.options or [])
        close = difflib.get_close_matches(value, options, n=1)
        hint = f"; did you mean {close[0]}?" if close else ""
        return f"{group}={value!r} is invalid: choose one of {', '.join(options)}{hint}"
    lines = [line.strip().rstrip(".") for line in str(error).splitlines() if line.strip()]
    if lines and lines[0].startswith("Could not override") and error.__cause__ is not None:
        cause = str(error.__cause__).splitlines()[0]  # e.g. "Key 'val_size' is not in struct"
        return f"{lines[0]}: {cause}" + (f" ({lines[1]})" if len(lines) > 1 else "")
    return "; ".join(lines[:2]) if lines else type(error).__name__


def check_null_groups(overrides: list[str], config_dir: Path) -> None:
    """`group=null`, which this Hydra refuses with a traceback (`~group` drops a default), and
    `group=true|false`, which names no conf file (`logger=false`: logger=none is the choice)."""
    for override in overrides:
        group, _, value = override.partition("=")
        options = sorted(p.stem for p in (config_dir / group).glob("*.yaml"))
        if not options or value.lower() not in ("null", "true", "false"):
            continue
        none = "leave it out (none by default) or " if group in OPTIONAL_GROUPS else ""
        raise ConfigError(f"{group}={value} is invalid: {none}choose one of {', '.join(options)}")


def check_names(
    cfg: DictConfig, overrides: list[str], checked: set[tuple[str, str]] | None = None
) -> None:
    """A model, readout or task is recorded under its own name: the name of its conf file, or
    one given on the command line that no conf file on the search path has. A model whose encoder
    (a readout whose class, a task whose generator) is replaced on the command line needs a name
    of its own, so that it is never recorded as the conf file it replaced; and a built-in's name
    (conf/<group>/<name>.yaml) names the built-in's class only, also in a user's conf file of
    that name. `checked`: the (group, choice) pairs whose conf files a sweep's earlier jobs
    showed to name one class (check_one_class), not read again."""
    loader = GlobalHydra.instance().config_loader()
    given = {o.split("=", 1)[0].lstrip("+~") for o in overrides}
    for group, path_keys in PLUGIN_GROUPS.items():
        name, choice = cfg[group].name, cfg.hydra.runtime.choices[group]
        if name != choice and name in loader.get_group_options(group):
            raise ConfigError(
                f"{group}.name={name} is invalid with {group}={choice}: {name} is the name of "
                f"another conf file ({group}/{name}.yaml); give this {group} a name of its own"
            )
        for path_key in (k for k in path_keys if k in cfg[group]):
            check_path(group, path_key, cfg[group][path_key], str(name), choice, given)
        if checked is None or (group, choice) not in checked:
            check_one_class(group, choice, path_keys[0])
        if checked is not None:
            checked.add((group, choice))


def check_path(group: str, key: str, path: str, name: str, choice: str, given: set[str]) -> None:
    """A class by import path (`group.key`) that replaces its conf file's comes with a name of its
    own, and a built-in's name names the built-in's class."""
    if f"{group}.{key}" in given and f"{group}.name" not in given:
        raise ConfigError(
            f"{group}.{key}={path} needs a name of its own: give "
            f"{group}.name=... too, or it would be recorded as {group}={choice}"
        )
    builtin = builtin_path(group, name, key)
    if builtin is not None and path != builtin:
        raise ConfigError(
            f"{group}.{key}={path} is invalid with {group}.name={name}: {name} is the "
            f"built-in {builtin} ({group}/{name}.yaml); give this {group} a name of its own"
        )


def check_one_class(group: str, choice: str, path_key: str) -> None:
    """Every conf file `group/choice.yaml` on the search path names one class: Hydra reads the
    first, and a user's of a built-in's name would be passed over (conf/ comes first)."""
    found = {}  # the class each conf file names -> its directory
    for source in GlobalHydra.instance().config_loader().get_sources():
        if source.is_config(f"{group}/{choice}"):
            conf = source.load_config(f"{group}/{choice}").config
            found.setdefault(str(OmegaConf.select(conf, path_key)), source.path)
    if len(found) > 1:
        (first, where), (other, there) = list(found.items())[:2]
        raise ConfigError(
            f"{group}={choice} is invalid: {there}/{group}/{choice}.yaml names {other}, and "
            f"{group}/{choice}.yaml in {where}, which Hydra reads, names {first}; give yours a "
            "name of its own"
        )


def job_config(
    config_name: str,
    overrides: list[str],
    composed: DictConfig | None = None,
    checked: set[tuple[str, str]] | None = None,
) -> DictConfig:
    """One job's config, its names checked (check_names, sharing `checked` across a sweep's
    jobs), without Hydra's own section; from `composed` (the same overrides composed with
    Hydra's section) when given."""
    if composed is None:
        composed = compose(config_name, overrides=overrides, return_hydra_config=True)
    cfg = composed.copy()
    check_names(cfg, overrides, checked)
    with open_dict(cfg):
        del cfg["hydra"]
    return cfg


def compositions(config_name: str) -> Compositions:
    """Every job's config of a sweep with Hydra's section, as `compose` gives it, with a
    composition per set of config-group choices, not per job (longterm.config.compositions)."""
    loader = GlobalHydra.instance().config_loader()
    return Compositions(
        lambda overrides: compose(config_name, overrides=overrides, return_hydra_config=True),
        lambda key: bool(loader.get_group_options(key)),
    )


def job_composed(composing: Compositions, overrides: list[str]) -> DictConfig:
    """A job's config with Hydra's section as a launcher gives it to the job (its overrides, by
    which its directory is named)."""
    parsed = composing.parse(overrides)
    return with_job_section(composing.composed(parsed), parsed)


def check_run_dir(job: DictConfig, run_dir: Path) -> None:
    """ConfigError when `run_dir` is in use by a live process (store/run_dir.py: its lock), or
    holds a run of other settings than `job`'s (config/run_settings.py), or a real run where
    `job` is a debug run (config/debug.py), before Hydra writes anything there."""
    who = holder(run_dir)
    if who is not None:
        raise ConfigError(in_use(run_dir, who))
    try:
        conflict = other_settings(job, run_dir) or debug_conflict(job, run_dir)
    except RunDirError as e:
        raise ConfigError(str(e)) from None
    if conflict is not None:
        raise ConfigError(conflict)


def check(argv: list[str], config_dir: Path, config_name: str = "train") -> None:
    """Raise ConfigError (one line) if any job that `argv` would launch has a bad config, its
    output directory cannot be made, or its run directory is in use or holds a run of other
    settings. Warn (one line) when a sweep sent to SLURM could wait for ever on a lost job
    (warn_without_accounting). `--config-dir` and `--config-name` are read as Hydra reads them;
    a command line with another flag (--help, --cfg) is left to Hydra."""
    line = parse(argv)
    if line is None:
        return
    overrides, config_name = line.overrides, line.config_name or config_name
    check_null_groups(overrides, config_dir)
    try:
        with composing(config_dir, line.config_dir):
            first = job_overrides(overrides, None)[0]
            cfg = compose(config_name, overrides=first, return_hydra_config=True)
            params = OmegaConf.select(cfg, "hydra.sweeper.params")
            multirun = line.multirun or params is not None
            check_output_dir(cfg, multirun)  # before composing every job of a large grid
            composing_jobs = compositions(config_name)
            every = job_overrides(overrides, params)
            with_hydra = [cfg if j == first else job_composed(composing_jobs, j) for j in every]
            checked: set[tuple[str, str]] = set()
            jobs = [
                job_config(config_name, j, c, checked)
                for j, c in zip(every, with_hydra, strict=True)
            ]
            for job in jobs:
                validate(job)
            for job in jobs:
                check_trainer_keys(job)
                check_logger(job)
                check_accelerator(job)
            for job, full in zip(jobs, with_hydra, strict=True):
                check_run_dir(job, job_run_dir(full, multirun))
            if multirun:
                warn_without_accounting(jobs)
    except (HydraException, OmegaConfBaseException) as e:
        raise ConfigError(explain(e, overrides)) from None


def composed(argv: list[str], config_dir: Path, config_name: str = "train") -> DictConfig:
    """The config of the one run `argv` describes, composed and checked as src/train.py does
    (ConfigError, one line); for commands that read a config without training (src/contract.py)."""
    line = parse(argv)
    if line is None or line.multirun:
        raise ConfigError("give the overrides of one run: no -m and no other Hydra flag")
    with composing(config_dir, line.config_dir):
        try:
            cfg = job_config(line.config_name or config_name, line.overrides)
        except (HydraException, OmegaConfBaseException) as e:
            raise ConfigError(explain(e, line.overrides)) from None
    validate(cfg)
    return cfg
