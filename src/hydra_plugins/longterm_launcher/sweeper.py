"""`hydra/sweeper=longterm` (conf/train.yaml's default): Hydra's BasicSweeper, whose launcher
composes each job's config once per set of config-group choices instead of once per job.

Under BasicSweeper a multirun composes every job's config twice: the sweeper checks each before
the launch (Sweeper.validate_batch_is_legal), then the launcher composes it again to run it
(`config_loader.load_sweep_config`), a quarter of a second each on 2 cores: 4 s of an 8-job
sweep's start-up. This sweeper hands itself and its launcher (local, parallel, packed, SLURM) a
config loader whose load_sweep_config composes through longterm.config.compositions: Hydra's own
composition for each set of choices, its own function for the values, and Hydra's section
(`hydra.overrides.task`, `hydra.job.override_dirname`) as Hydra writes it for the job.
tests/test_compositions.py holds every job's config equal to Hydra's.
"""

from dataclasses import dataclass, replace
from typing import Any

from hydra.core.config_loader import ConfigLoader
from hydra.core.config_store import ConfigStore
from hydra.types import HydraContext, RunMode, TaskFunction
from omegaconf import DictConfig, OmegaConf

from longterm.config.compositions import Compositions, with_job_section
from longterm.config.hydra_internals import basic_sweeper

# read when Hydra's plugin scan executes this module: the classes the scan has just made
BasicSweeper, BasicSweeperConf = basic_sweeper.BasicSweeper, basic_sweeper.BasicSweeperConf


class SharedCompositions(ConfigLoader):
    """Hydra's config loader (`loader`) with load_sweep_config composed through
    longterm.config.compositions; everything else is the loader's own."""

    def __init__(self, loader: ConfigLoader) -> None:
        self.loader = loader
        self.by_name: dict[str, Compositions] = {}

    def __getstate__(self) -> dict[str, Any]:
        """Pickled to a worker or a cluster job without the configs composed here."""
        return {"loader": self.loader, "by_name": {}}

    def compositions(self, config_name: str) -> Compositions:
        if config_name not in self.by_name:
            self.by_name[config_name] = Compositions(
                lambda overrides: self.loader.load_configuration(
                    config_name=config_name, overrides=overrides, run_mode=RunMode.RUN
                ),
                lambda key: bool(self.loader.get_group_options(key)),
            )
        return self.by_name[config_name]

    def load_sweep_config(
        self, master_config: DictConfig, sweep_overrides: list[str]
    ) -> DictConfig:
        """As ConfigLoaderImpl.load_sweep_config: Hydra's overrides of the sweep, then the job's."""
        compositions = self.compositions(master_config.hydra.job.config_name)
        overrides = [*OmegaConf.to_container(master_config.hydra.overrides.hydra), *sweep_overrides]
        parsed = compositions.parse(overrides)
        cfg = with_job_section(compositions.composed(parsed), parsed)
        OmegaConf.copy_cache(from_config=master_config, to_config=cfg)
        return cfg

    # The rest of ConfigLoader's interface is the loader's.
    def load_configuration(self, *args: Any, **kwargs: Any) -> DictConfig:
        return self.loader.load_configuration(*args, **kwargs)

    def get_search_path(self) -> Any:
        return self.loader.get_search_path()

    def get_sources(self) -> Any:
        return self.loader.get_sources()

    def list_groups(self, parent_name: str) -> list[str]:
        return self.loader.list_groups(parent_name)

    def get_group_options(self, *args: Any, **kwargs: Any) -> list[str]:
        return self.loader.get_group_options(*args, **kwargs)

    def compute_defaults_list(self, *args: Any, **kwargs: Any) -> Any:
        return self.loader.compute_defaults_list(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        """Attributes of ConfigLoaderImpl that some Hydra code reads directly (`repository`)."""
        if name in ("loader", "by_name"):  # not set yet: unpickling
            raise AttributeError(name)
        return getattr(self.loader, name)


class LongtermSweeper(BasicSweeper):
    """BasicSweeper (its `params` and `max_batch_size`), with SharedCompositions for itself and
    its launcher."""

    def setup(
        self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig
    ) -> None:
        # the context's other fields kept as they are (Hydra's main branch adds a third)
        shared = replace(
            hydra_context, config_loader=SharedCompositions(hydra_context.config_loader)
        )
        super().setup(hydra_context=shared, task_function=task_function, config=config)


@dataclass
class LongtermSweeperConf(BasicSweeperConf):
    _target_: str = "hydra_plugins.longterm_launcher.sweeper.LongtermSweeper"


ConfigStore.instance().store(
    group="hydra/sweeper", name="longterm", node=LongtermSweeperConf, provider="longterm"
)
