"""The configs of a sweep's jobs, composed as Hydra composes them, with one composition per set
of config-group choices instead of one per job.

Hydra composes a config in two steps (ConfigLoaderImpl._load_configuration_impl): the defaults
list, from the overrides that choose a config group's option (and those that add, delete or set
Hydra's own keys), then the other overrides applied as values to the result, by its own function
ConfigLoaderImpl._apply_overrides_to_config. The first step is the slow one (about a quarter of
a second on 2 cores); jobs that differ only in values (lr, seed, T0) share it. Here it runs once
per set of such overrides, and the second step is Hydra's function applied to a copy. Used by
the command-line check (longterm.config.command_line) and by every launcher through the sweeper
(hydra_plugins/longterm_launcher/sweeper.py); tests/test_compositions.py holds the result equal
to Hydra's own composition, Hydra's section included.

A job's `hydra.job.override_dirname` is written here (overrides_dirname), as Hydra 1.3 writes it
(hydra/_internal/config_loader_impl.py: get_overrides_dirname, which Hydra's main branch removed
with the eager key itself); the test holds the two equal while Hydra 1.3 is installed.
"""

import re
from collections.abc import Callable, Iterable, Sequence

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import Override, OverrideType
from omegaconf import DictConfig

from longterm.config.hydra_internals import apply_values


class Compositions:
    """`compositions(overrides)`: the config `compose(overrides)` would give, composing only the
    overrides that are not plain values (`compose` sees them in their order) once for all jobs
    that share them. `is_group(key)`: whether `key` names a config group."""

    def __init__(
        self, compose: Callable[[list[str]], DictConfig], is_group: Callable[[str], bool]
    ) -> None:
        self.compose = compose
        self.is_group = is_group
        self.parser = OverridesParser.create()
        self.by_choices: dict[tuple[str, ...], DictConfig] = {}
        self.groups: dict[str, bool] = {}

    def is_value(self, override: Override) -> bool:
        """A plain `key=value` of the app's config, applied after composition."""
        if override.type != OverrideType.CHANGE or override.package is not None:
            return False
        if override.is_hydra_override():
            return False
        key = override.key_or_group
        if key not in self.groups:
            self.groups[key] = self.is_group(key)
        return not self.groups[key]

    def parse(self, overrides: Sequence[str]) -> list[Override]:
        return self.parser.parse_overrides(list(overrides))

    def __call__(self, overrides: Sequence[str]) -> DictConfig:
        return self.composed(self.parse(overrides))

    def composed(self, parsed: list[Override]) -> DictConfig:
        """The config of overrides already parsed (`parse`)."""
        values = [o for o in parsed if self.is_value(o)]
        choices = tuple(o.input_line for o in parsed if o not in values)
        if choices not in self.by_choices:
            self.by_choices[choices] = self.compose(list(choices))
        cfg = self.by_choices[choices].copy()  # a deep copy (DictConfig.__copy__)
        apply_values(values, cfg)
        return cfg


def overrides_dirname(
    overrides: Iterable[Override], exclude_keys: Iterable[str], item_sep: str, kv_sep: str
) -> str:
    """The name Hydra gives a job's overrides (`hydra.job.override_dirname`): each override as
    typed, but those of `exclude_keys`, sorted, joined by `item_sep`, with every `=` in it
    (a value's too) made `kv_sep` (a replacement string of `re.sub`, as in Hydra). `b=x=y` and
    `a=1` with kv_sep `:`: `a:1,b:x:y`."""
    excluded = set(exclude_keys)
    lines = sorted(o.input_line for o in overrides if o.key_or_group not in excluded)
    assert None not in lines  # every override parsed from a command line has its line
    return re.sub("[=]", kv_sep, item_sep.join(lines))


def with_job_section(cfg: DictConfig, parsed: list[Override]) -> DictConfig:
    """`cfg` (composed from the overrides `parsed`) with the part of Hydra's section that a
    launcher writes for the job, as Hydra writes it: `hydra.overrides.task` and
    `hydra.job.override_dirname`, from which the job's directory is named."""
    app = [o for o in parsed if not o.is_hydra_override()]
    dirname = cfg.hydra.job.config.override_dirname
    cfg.hydra.overrides.task = [o.input_line for o in app]
    cfg.hydra.job.override_dirname = overrides_dirname(
        overrides=app,
        exclude_keys=list(dirname.exclude_keys),
        item_sep=dirname.item_sep,
        kv_sep=dirname.kv_sep,
    )
    return cfg
