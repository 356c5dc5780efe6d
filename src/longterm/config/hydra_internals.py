"""Every import from Hydra's private `hydra._internal`, in one module, so that an upgrade of Hydra
(pinned: hydra-core 1.3.8 in pyproject.toml) touches one file.

- `start_hydra`: Hydra initialised with a user's `--config-dir` before the built-in conf files,
  where Hydra's own command line puts it (hydra/_internal/utils.py: add_conf_dir; the public
  `initialize_config_dir` takes one directory only); the command-line check uses it.
- `apply_values`: Hydra's second step of composition, the plain `key=value` overrides applied to
  a composed config (config/compositions.py).
- The basic sweeper, which the project's sweeper extends
  (src/hydra_plugins/longterm_launcher/sweeper.py). Its module is given, not its classes:
  Hydra's plugin scan executes `hydra._internal.core_plugins` again in place, so a class bound
  here before the scan would be an older one than the class Hydra instantiates with.

What each is, whether Hydra's main branch still has it and what to check at an upgrade:
docs/development.md, "Library internals". A job's override_dirname, which Hydra's main branch
no longer writes, is the project's own (config/compositions.py: overrides_dirname).
"""

from pathlib import Path

from hydra._internal.config_loader_impl import ConfigLoaderImpl
from hydra._internal.core_plugins import basic_sweeper
from hydra._internal.hydra import Hydra
from hydra._internal.utils import create_config_search_path
from hydra.core.config_search_path import SearchPathQuery
from hydra.core.override_parser.types import Override
from omegaconf import DictConfig

__all__ = ["apply_values", "basic_sweeper", "start_hydra"]


def start_hydra(config_dir: Path, extra_dir: Path | None = None) -> None:
    """Initialise Hydra's global state with the conf files of `config_dir`, and `extra_dir`'s
    before them, as `src/train.py --config-dir extra_dir` would."""
    search_path = create_config_search_path(str(config_dir.resolve()))
    if extra_dir is not None:
        search_path.prepend(
            provider="command-line",
            path=f"file://{extra_dir.resolve()}",
            anchor=SearchPathQuery(provider="schema"),
        )
    Hydra.create_main_hydra2(task_name="train", config_search_path=search_path)


def apply_values(values: list[Override], cfg: DictConfig) -> None:
    """Apply the value overrides `values` to `cfg` in place, as Hydra's composition does."""
    ConfigLoaderImpl._apply_overrides_to_config(values, cfg)
