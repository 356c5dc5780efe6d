"""TensorBoard: all a run writes there besides the module's own metrics.

The Scalars tab: the logger (conf/logger/tensorboard.yaml) and `train/lr` (LogLearningRate), so
that the tab opens on `train/` and `val/`: tags without a group (Lightning's `epoch`,
LearningRateMonitor's `lr-Adam`) sort before them. The epochs a run trained are `verdict/epochs`
at its end.

The HPARAMS tab (`start_session`, `end_session`), written with TensorBoard's own protos (the
plugin's `summary` module needs TensorFlow; torch's `hparams()` takes its schema from one run and
marks no column as differing) through the logger's event writer (library_internals.add_summary):
- The experiment: one schema in every run (`SCHEMA`), every key `run_params` can give, and the
  model's size measured beside them (`MEASURED`: parameters, state size);
  each string key has its allowed values as a discrete domain, so `pool=mean` can be ticked as a
  filter. A model's, a readout's and a task's names are those of the conf files on the run's
  config search path (`experiment(names)`: the built-ins and a user's own, with the run's own
  name), so a sweep of a user's model or readout lists it beside the built-ins; so are the own
  keys of those models and readouts (`experiment(names, own)`: `layers`, `pool.bias`). `differs` is
  set on task, pool, model, T0 and lr (`COLUMNS`): TensorBoard lists the differing
  hyperparameters first, so the table opens on them.
- The session start, the run's settings: written once per run; a resumed run finds it on disk.
- At the end, in an event file of its own: the verdict scalars (`METRICS`), which every finished
  run has (parallel coordinates draw only the runs that have every ticked metric; `val/acc` is
  missing from a run that diverged before its first validation), and the session end with the
  real status: solved is a success, max_epochs, diverged and failed a failure. An
  interrupted run writes neither: the same command resumes it.
- Only with a TensorBoard logger (conf/logger/tensorboard.yaml, or a user's subclass of
  Lightning's), and not for a debug run (config/debug.py), which ends as no result: with another
  logger (logger=csv, a user's) a run writes hparams.yaml and no HPARAMS records, a debug run
  neither, and says so once.

The conf files on the search path (`ConfGroups`) are read from Hydra by the run's entry point
(src/train.py, the packed launcher: `on_search_path`) and handed to the run; nothing here reads
Hydra's global state.
"""

import logging
import math
import os
import socket
import time
import typing
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import pytorch_lightning as L
from google.protobuf import struct_pb2
from hydra.core.config_loader import ConfigLoader
from omegaconf import DictConfig, OmegaConf
from pytorch_lightning.loggers import Logger
from pytorch_lightning.loggers import TensorBoardLogger as LightningTensorBoardLogger
from tensorboard.backend.event_processing.event_file_loader import RawEventFileLoader
from tensorboard.compat.proto.event_pb2 import Event
from tensorboard.compat.proto.summary_pb2 import Summary
from tensorboard.plugins.hparams import api_pb2, metadata, plugin_data_pb2
from tensorboard.summary.writer.record_writer import RecordWriter

from longterm.config.debug import debug_keys, debug_line
from longterm.config.run_settings import (
    COMMON_KEYS,
    TASK_KEYS,
    identity,
    own_params,
    run_params,
    section_own,
)
from longterm.store.atomic import atomic_write
from longterm.store.run_dir import event_files
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


# Named by conf files, not listed: their values are given to `experiment` by the run.
NAMED = ("task", "pool", "model")


def column(types: tuple[Any, ...]) -> tuple[str, ...] | type:
    """A setting's HPARAMS column from its schema types (config/run_settings.py: Setting): a
    choice's values, bool, float for a number (absent: none), or () for a name (NAMED)."""
    kinds = [t for t in types if t is not type(None)]
    if all(typing.get_origin(t) is typing.Literal for t in kinds):
        return tuple(v for t in kinds for v in typing.get_args(t))
    if kinds == [bool]:
        return bool
    return () if kinds == [str] else float


# Every key of config/run_settings.py run_params: a string key's allowed values, or its type;
# from the schema (run_settings.identity), and the built-in tasks' own keys.
SCHEMA: dict[str, tuple[str, ...] | type] = {
    **{name: column(key.types) for name, key in identity().items()},
    **TASK_KEYS,
}
# Measured on the run's model (training/result.py: measured): its parameters, and the numbers its
# step form carries per sequence after the training width (absent: no step form).
MEASURED: dict[str, type] = {"n_params": float, "state_size": float}
COLUMNS = ("task", "pool", "model", "T0", "lr")  # marked as differing: the table's first columns
# Logged by every finished run at its last update; the HPARAMS metrics.
METRICS = {
    "verdict/solved": "1 if val/acc reached the stop threshold, else 0",
    "verdict/best_acc": "the best val/acc (0 if the run never measured one)",
    "verdict/epochs": "epochs trained",
}
# A run that solved its task is a success; every other end (max_epochs: not solved within the
# limit; diverged; failed) a failure, so solved runs stand apart at a glance.
SUCCESS = ("solved",)
RECORDS = (
    metadata.EXPERIMENT_TAG,
    metadata.SESSION_START_INFO_TAG,
    metadata.SESSION_END_INFO_TAG,
)
FILE_VERSION = "brain.Event:2"


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
    params = {**run_params(cfg), **{key: record[key] for key in MEASURED}}
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
    an interrupted one, which resumes, nor of a debug run), with a TensorBoard logger."""
    tensorboard = isinstance(logger, LightningTensorBoardLogger)
    if tensorboard and result["status"] != "interrupted" and not result.get("debug"):
        close_session(Path(logger.log_dir), result)


def summary(tag: str, data: plugin_data_pb2.HParamsPluginData) -> Summary:
    """One HPARAMS record, as TensorBoard's own summary ops write it."""
    value = Summary.Value(
        tag=tag, metadata=metadata.create_summary_metadata(data), tensor=metadata.NULL_TENSOR
    )
    return Summary(value=[value])


def hparam_info(name: str, kind: tuple[str, ...] | type) -> api_pb2.HParamInfo:
    """A hyperparameter's column: a bool, a number, a string of one of the values `kind` lists,
    or (`kind` str) any string."""
    info = api_pb2.HParamInfo(name=name, differs=name in COLUMNS)
    if kind is bool:
        info.type = api_pb2.DATA_TYPE_BOOL
        info.domain_discrete.values.extend(struct_pb2.Value(bool_value=b) for b in (False, True))
    elif kind is float:
        info.type = api_pb2.DATA_TYPE_FLOAT64
    elif kind is str:
        info.type = api_pb2.DATA_TYPE_STRING
    else:
        info.type = api_pb2.DATA_TYPE_STRING
        info.domain_discrete.values.extend(struct_pb2.Value(string_value=s) for s in kind)
    return info


def kind_of(value: Any) -> type:
    """The column type of a value: bool, float for a number, str for anything else."""
    if isinstance(value, bool):
        return bool
    return float if isinstance(value, int | float) else str


def experiment(
    names: Mapping[str, tuple[str, ...]], own: Mapping[str, type] | None = None
) -> Summary:
    """The schema of the HPARAMS table: hyperparameters and metrics; `names` gives the values of
    the NAMED keys (task, pool, model), `own` the models' and readouts' own keys with their
    column types (kind_of)."""
    metrics = [
        api_pb2.MetricInfo(name=api_pb2.MetricName(tag=tag), description=text)
        for tag, text in METRICS.items()
    ]
    schema = {**SCHEMA, **MEASURED, **{key: tuple(names[key]) for key in NAMED}}
    schema |= {key: kind for key, kind in (own or {}).items() if key not in schema}
    infos = [hparam_info(name, kind) for name, kind in schema.items()]
    exp = api_pb2.Experiment(hparam_infos=infos, metric_infos=metrics)
    return summary(metadata.EXPERIMENT_TAG, plugin_data_pb2.HParamsPluginData(experiment=exp))


def start_info(params: Mapping[str, Any]) -> plugin_data_pb2.SessionStartInfo:
    info = plugin_data_pb2.SessionStartInfo(start_time_secs=time.time())
    for key, value in params.items():
        if isinstance(value, bool):
            info.hparams[key].bool_value = value
        elif isinstance(value, int | float):
            info.hparams[key].number_value = value
        elif value is not None:
            info.hparams[key].string_value = str(value)
    return info


def session_start(params: Mapping[str, Any]) -> Summary:
    data = plugin_data_pb2.HParamsPluginData(session_start_info=start_info(params))
    return summary(metadata.SESSION_START_INFO_TAG, data)


def session_end(status: str) -> Summary:
    code = api_pb2.STATUS_SUCCESS if status in SUCCESS else api_pb2.STATUS_FAILURE
    info = plugin_data_pb2.SessionEndInfo(status=code, end_time_secs=time.time())
    data = plugin_data_pb2.HParamsPluginData(session_end_info=info)
    return summary(metadata.SESSION_END_INFO_TAG, data)


def verdict(result: Mapping[str, Any]) -> dict[str, float]:
    """The METRICS of a finished run, from its result record."""
    best = result["best_acc"]
    return {
        "verdict/solved": float(result["status"] == "solved"),
        "verdict/best_acc": best if best is not None and math.isfinite(best) else 0.0,
        "verdict/epochs": float(result["epochs"]),
    }


def events(path: Path) -> Iterator[tuple[bytes, Event]]:
    """Every event in one event file, serialised and parsed."""
    for record in RawEventFileLoader(str(path)).Load():
        yield record, Event.FromString(record)


def record_tags(event: Event) -> set[str]:
    return {v.tag for v in event.summary.value if v.tag in RECORDS}


def records(run_dir: Path) -> dict[str, list[bytes]]:
    """The HPARAMS records in a run's event files: each tag's plugin contents, oldest first."""
    found: dict[str, list[bytes]] = {}
    for path in event_files(run_dir):
        for _, event in events(path):
            for value in event.summary.value:
                if value.tag in RECORDS:
                    found.setdefault(value.tag, []).append(value.metadata.plugin_data.content)
    return found


def write_file(path: Path, serialised: list[bytes]) -> None:
    """An event file with these events, in place at once (renamed over `path`)."""
    # no "tfevents" in the temporary name: TensorBoard would read the half-written file
    with atomic_write(path, "wb", prefix="." + path.name.replace("tfevents", "partial")) as f:
        writer = RecordWriter(f)
        for record in serialised:
            writer.write(record)


def forget_session(run_dir: Path) -> None:
    """Remove the HPARAMS records from a run's event files; every other event stays."""
    for path in event_files(run_dir):
        parsed = list(events(path))
        if any(record_tags(event) for _, event in parsed):
            write_file(path, [record for record, event in parsed if not record_tags(event)])


def open_session(
    run_dir: Path,
    add_summary: Callable[[Summary], None],
    params: Mapping[str, Any],
    names: Mapping[str, tuple[str, ...]],
    own: Mapping[str, type] | None = None,
) -> None:
    """Write the experiment (`names`, `own`: see `experiment`) and the session start through
    `add_summary` (the run's own event writer), unless `run_dir`'s event files hold exactly this
    run's start record already.

    A resumed run finds the start record of its first process and writes none, so the run keeps
    one. A session end left by an earlier process (a failed run rerun; a finished run continued
    to a larger epoch limit, longterm.store.continue_run), or a start record of other settings, is
    removed first, and the start is written again.
    """
    found = records(run_dir)
    starts = found.get(metadata.SESSION_START_INFO_TAG, [])
    wanted = dict(start_info(params).hparams)
    same = len(starts) == 1 and (
        dict(metadata.parse_session_start_info_plugin_data(starts[0]).hparams) == wanted
    )
    if same and metadata.SESSION_END_INFO_TAG not in found:
        return
    if found:
        forget_session(run_dir)
    add_summary(experiment(names, own))
    add_summary(session_start(params))


def close_session(run_dir: Path, result: Mapping[str, Any]) -> Path:
    """Write the verdict scalars and the session end at the run's last update, in a new event
    file named to sort after the run's others (TensorBoard reads a run's files in name order)."""
    now, step = time.time(), result["updates"]
    scalars = [
        Summary(value=[Summary.Value(tag=t, simple_value=v)]) for t, v in verdict(result).items()
    ]
    written = [Event(wall_time=now, file_version=FILE_VERSION)] + [
        Event(wall_time=now, step=step, summary=s)
        for s in (*scalars, session_end(result["status"]))
    ]
    name = f"events.out.tfevents.{int(now):010d}.{socket.gethostname()}.{os.getpid()}.end"
    write_file(run_dir / name, [e.SerializeToString() for e in written])
    return run_dir / name
