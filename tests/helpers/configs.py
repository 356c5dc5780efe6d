"""The project's real configs (conf/), composed in-process as Hydra composes them, and the
built-in conf files of a group."""

from hydra import compose, initialize_config_dir
from omegaconf import DictConfig, OmegaConf

from helpers.paths import CONF


def composed(*overrides: str, with_hydra: bool = False) -> DictConfig:
    """conf/train.yaml with these overrides, composed in-process as Hydra composes it (with its
    `hydra` node when `with_hydra`)."""
    with initialize_config_dir(str(CONF), version_base="1.3"):
        return compose("train", overrides=list(overrides), return_hydra_config=with_hydra)


def conf_names(group: str, **keys: str) -> list[str]:
    """The built-in conf files of `group` (model, task) by name, those whose `keys` have these
    values; the conf files are the registry (longterm.plugins.resolve), so no list is kept here."""
    return [
        path.stem
        for path in sorted((CONF / group).glob("*.yaml"))
        if all(str(OmegaConf.load(path).get(k)) == v for k, v in keys.items())
    ]
