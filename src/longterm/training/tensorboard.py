"""TensorBoard: all a run writes there besides the module's own metrics.

The Scalars tab: the logger (conf/logger/tensorboard.yaml) and `train/lr` (LogLearningRate), so
that the tab opens on `train/` and `val/`: tags without a group (Lightning's `epoch`,
LearningRateMonitor's `lr-Adam`) sort before them. The epochs a run trained are `verdict/epochs`
at its end.

The HPARAMS tab (`start_session`, `end_session`): the records of training/hparams.py, written
through the logger's event writer (library_internals.add_summary) as the run starts and in a file
of their own at its end. A model's, a readout's and a task's names are those of the conf files on
the run's config search path (`experiment(names)`: the built-ins and a user's own, with the run's
own name), so a sweep of a user's model or readout lists it beside the built-ins; so are the own
keys of those models and readouts (`experiment(names, own)`: `layers`, `pool.bias`). An
interrupted run writes no end: the same command resumes it. Only with a TensorBoard logger
(conf/logger/tensorboard.yaml, or a user's subclass of Lightning's), and not for a debug run
(config/debug.py), which ends as no result: with another logger (logger=csv, a user's) a run
writes hparams.yaml and no HPARAMS records, a debug run neither, and says so once.

The conf files on the search path (`ConfGroups`) are read from Hydra by the run's entry point
(src/train.py, the packed launcher: `on_search_path`) and handed to the run; nothing here reads
Hydra's global state.
"""

import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import pytorch_lightning as L
from hydra.core.config_loader import ConfigLoader
from omegaconf import DictConfig, OmegaConf
from pytorch_lightning.loggers import Logger
from pytorch_lightning.loggers import TensorBoardLogger as LightningTensorBoardLogger

from longterm.config.debug import debug_keys, debug_line
from longterm.config.run_settings import COMMON_KEYS, own_params, run_params, section_own
from longterm.training.hparams import MEASURED, NAMED, close_session, kind_of, open_session
from longterm.training.library_internals import add_summary

log = logging.getLogger(__name__)


class TensorBoardLogger(LightningTensorBoardLogger):
    """Lightning's, without the `epoch` scalar Lightning adds to every metric of `self.log`."""

    def log_metrics(self, metrics: Mapping[str, float], step: int | None = None) -> None:
        super().log_metrics({k: v for k, v in metrics.items() if k != "epoch"}, step)


class LogLearningRate(L.Callback):
    """`train/lr`, the optimiser's learning rate, at the start of every epoch (where Lightning's
    LearningRateMonitor logs `lr-Adam`): the scheduled one (optim.schedule), the epoch's under
    `cosine`, that of the epoch's first update under `warmup_cosine`. Does nothing without a
    logger."""

    def on_train_epoch_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if trainer.logger is not None and trainer.optimizers:
            lr = trainer.optimizers[0].param_groups[0]["lr"]
            trainer.logger.log_metrics({"train/lr": lr}, trainer.global_step)


@dataclass(frozen=True)
class ConfGroups:
    """The conf files on a run's config search path (the built-ins' and a user's, `--config-dir`
    or `hydra.searchpath`) that HPARAMS lists: the names of each NAMED group's, and each model's
    and readout's (COMMON_KEYS) as written, the first of a name as Hydra picks it. Empty for a
    run started without Hydra (tests, benchmarks): HPARAMS then lists the run's own."""

    names: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    configs: Mapping[str, tuple[dict[str, Any], ...]] = field(default_factory=dict)


def on_search_path(loader: ConfigLoader) -> ConfGroups:
    """The ConfGroups that Hydra's `loader` finds, for the entry point to hand to the run."""
    names = {group: tuple(loader.get_group_options(group)) for group in NAMED}
    return ConfGroups(names, {group: tuple(group_configs(loader, group)) for group in COMMON_KEYS})


def group_configs(loader: ConfigLoader, group: str) -> Iterator[dict[str, Any]]:
    """Each conf file of a config group on `loader`'s search path, as written (the first of a
    name, as Hydra picks it)."""
    for name in loader.get_group_options(group):
        path = f"{group}/{name}"
        source = next((s for s in loader.get_sources() if s.is_config(path)), None)
        if source is not None:
            yield OmegaConf.to_container(source.load_config(path).config)


@cache  # once per process: a local sweep's jobs share it
def say_once(line: str) -> None:
    log.info(line)


def start_session(
    logger: Logger | bool, cfg: DictConfig, record: Mapping[str, Any], groups: ConfGroups
) -> None:
    """hparams.yaml, and the HPARAMS experiment and session start once per run (`open_session`):
    the run's settings (config/run_settings.py: run_params) and its model's size (MEASURED) as
    `record`, its result.json before training, has them. Nothing without a logger or for a
    debug run (config/debug.py), hparams.yaml alone with a logger that is not TensorBoard's.

    Lightning's `log_hyperparams` only writes the session with metric values it logs at step 0,
    which would put a false point on the val/acc curve, so the records are written here.
    """
    if not logger:
        return
    keys = debug_keys(cfg.trainer)
    if keys:
        return say_once(f"HPARAMS records are not written for a debug run ({debug_line(keys)})")
    params = {**run_params(cfg), **{key: record[key] for key in ("limit", *MEASURED)}}
    logger.log_hyperparams(params)  # hparams.yaml
    if not isinstance(logger, LightningTensorBoardLogger):
        name = type(logger).__name__
        return say_once(f"HPARAMS records are TensorBoard's: not written with {name}")
    names = {key: tuple(sorted({*groups.names.get(key, ()), params[key]})) for key in NAMED}
    own = own_kinds(cfg, groups)
    open_session(Path(logger.log_dir), lambda s: add_summary(logger, s), params, names, own)


def own_kinds(cfg: DictConfig, groups: ConfGroups) -> dict[str, type]:
    """The own keys (named as run_params names them) of this run's model and readout and of
    every model and readout on its search path, with their HPARAMS column types: a sweep of
    several models shows each one's keys, whichever run TensorBoard takes the table from."""
    kinds = {key: kind_of(value) for key, value in own_params(cfg).items()}
    for section in COMMON_KEYS:
        for conf in groups.configs.get(section, ()):
            for key, value in section_own(section, conf).items():
                kinds.setdefault(key, kind_of(value))
    return kinds


def end_session(logger: Logger | bool, result: Mapping[str, Any]) -> None:
    """The verdict scalars and the session end of a run that has ended (`close_session`; not of
    an interrupted one, which resumes, nor of a debug run), with a TensorBoard logger, whose
    event file is closed first (Lightning's own end of fit closes it too; a failed run's may not
    have): close_session rewrites the run's files."""
    tensorboard = isinstance(logger, LightningTensorBoardLogger)
    if tensorboard and result["status"] != "interrupted" and not result.get("debug"):
        logger.finalize(result["status"])
        close_session(Path(logger.log_dir), result)
