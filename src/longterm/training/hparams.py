"""TensorBoard's HPARAMS records of a run, written with TensorBoard's own protos (the plugin's
`summary` module needs TensorFlow; torch's `hparams()` takes its schema from one run and marks no
column as differing) and read back from a run's event files; no Lightning here.

- The experiment: one schema in every run (`experiment`): every key `run_params` can give
  (SCHEMA), the model's size measured beside them (MEASURED: parameters, state size), and what
  the run's epoch limit is and how it ended (ENDING: `limit`, `end`: store/records.py, end_of);
  each string key has its allowed values as a discrete domain, so `pool=mean` or `end=budget`
  can be ticked as a filter. `differs` is set on COLUMNS: TensorBoard lists the differing
  hyperparameters first, so the table opens on them.
- The session start, the run's settings: written once per run as it starts (`open_session`); a
  resumed run finds it on disk.
- At the end (`close_session`), in an event file of its own: the verdict scalars (METRICS), which
  every finished run has (parallel coordinates draw only the runs that have every ticked metric),
  the start record again with the run's `end`, and the session end: a run that ended as designed
  (solved, at its experiment's budget, or capped by a learning-rate race: records.
  ENDED_AS_DESIGNED) is a success; one unsolved at the limit of a run meant to train until solved,
  diverged or failed a failure. TensorBoard takes a tag's record from the first event that has it,
  so the records of the run's other files are removed then (`forget_session`).

`python -m longterm.training.hparams DIR... [--limit budget]` writes the records of finished runs
again from their result.json, for runs made before `end` existed (runs/).
"""

import argparse
import math
import os
import socket
import time
import typing
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from google.protobuf import struct_pb2
from tensorboard.backend.event_processing.event_file_loader import RawEventFileLoader
from tensorboard.compat.proto.event_pb2 import Event
from tensorboard.compat.proto.summary_pb2 import Summary
from tensorboard.plugins.hparams import api_pb2, metadata, plugin_data_pb2
from tensorboard.summary.writer.record_writer import RecordWriter

from longterm.choices import LIMITS
from longterm.config.run_settings import TASK_KEYS, identity
from longterm.store.archive import FINAL_MARK, cell, run_dirs
from longterm.store.atomic import atomic_write
from longterm.store.records import (
    ENDED_AS_DESIGNED,
    ENDS,
    FINAL_STATUSES,
    capped,
    end_of,
    read_result,
    write_result,
)
from longterm.store.run_dir import event_files

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
# What the run's epoch limit is (conf/train.yaml: limit) and how the run ended (records.end_of).
ENDING: dict[str, tuple[str, ...]] = {"limit": LIMITS, "end": ENDS}
# Marked as differing: the table's first columns, the five TensorBoard shows before any is ticked
# (its HPARAMS pane displays the first five hyperparameters; the task is the first word of a run's
# name, the width and the others a tick away).
COLUMNS = ("pool", "model", "T0", "lr", "end")
# Logged by every finished run at its last update; the HPARAMS metrics.
METRICS = {
    "verdict/solved": "1 if val/acc reached the stop threshold, else 0",
    "verdict/best_acc": "the best val/acc (0 if the run never measured one)",
    "verdict/epochs": "epochs trained",
}
RECORDS = (
    metadata.EXPERIMENT_TAG,
    metadata.SESSION_START_INFO_TAG,
    metadata.SESSION_END_INFO_TAG,
)
FILE_VERSION = "brain.Event:2"


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
    schema = {**SCHEMA, **MEASURED, **ENDING, **{key: tuple(names[key]) for key in NAMED}}
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


def session_end(end: str) -> Summary:
    """The session end of a run that ended so (records.ENDS)."""
    code = api_pb2.STATUS_SUCCESS if end in ENDED_AS_DESIGNED else api_pb2.STATUS_FAILURE
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


def forget_session(run_dir: Path, keep: Path | None = None) -> None:
    """Remove the HPARAMS records from a run's event files (but `keep`); every other event
    stays, and a file left with none is removed."""
    for path in event_files(run_dir):
        if path == keep:
            continue
        parsed = list(events(path))
        if any(record_tags(event) for _, event in parsed):
            kept = [(record, event) for record, event in parsed if not record_tags(event)]
            if all(event.HasField("file_version") for _, event in kept):
                path.unlink()  # records alone (an earlier `close_session(..., scalars=False)`)
            else:
                write_file(path, [record for record, _ in kept])


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


def close_session(run_dir: Path, result: Mapping[str, Any], scalars: bool = True) -> Path:
    """Write, at the run's last update, in a new event file named to sort after the run's others
    (TensorBoard reads a run's files in name order): the verdict scalars (not with `scalars`
    False: a run whose records are written again), its experiment and start records again with
    the run's `limit` and `end` (`restated`), and the session end; then remove the records of
    its other files, so that each is the run's only one. The run's logger has closed its file."""
    now, step = time.time(), result["updates"]
    end = end_of(dict(result))
    written = [
        Summary(value=[Summary.Value(tag=t, simple_value=v)]) for t, v in verdict(result).items()
    ]
    events_ = [Event(wall_time=now, file_version=FILE_VERSION)] + [
        Event(wall_time=now, step=step, summary=s)
        for s in (*(written if scalars else []), *restated(run_dir, result, end), session_end(end))
    ]
    name = f"events.out.tfevents.{int(now):010d}.{socket.gethostname()}.{os.getpid()}.end"
    write_file(run_dir / name, [e.SerializeToString() for e in events_])
    forget_session(run_dir, keep=run_dir / name)
    return run_dir / name


def restated(run_dir: Path, result: Mapping[str, Any], end: str) -> list[Summary]:
    """The run's experiment and start records with the ENDING columns, and its `limit` and `end`
    (none where the run wrote no start record)."""
    found = records(run_dir)
    experiments, starts = (found.get(tag) for tag in RECORDS[:2])
    if not experiments or not starts:
        return []
    exp = metadata.parse_experiment_plugin_data(experiments[0])
    have = {info.name for info in exp.hparam_infos}
    today = {**SCHEMA, **MEASURED, **ENDING}  # the columns of a run made before some existed
    exp.hparam_infos.extend(hparam_info(k, v) for k, v in today.items() if k not in have)
    for info in exp.hparam_infos:
        info.differs = info.name in COLUMNS
    start = metadata.parse_session_start_info_plugin_data(starts[0])
    start.hparams["limit"].string_value = result.get("limit", "stop")
    start.hparams["end"].string_value = end
    return [
        summary(RECORDS[0], plugin_data_pb2.HParamsPluginData(experiment=exp)),
        summary(RECORDS[1], plugin_data_pb2.HParamsPluginData(session_start_info=start)),
    ]


def restate_sweep(sweep: Path, limit: str | None) -> Iterator[tuple[Path, str]]:
    """Write the records of each finished run under `sweep` again (`close_session` without the
    scalars), its `limit` read from its record, else `capped` for a race's capped run (records.
    capped, its race the runs of its cell: store/archive.py), else
    `budget` in a final sweep (store/archive.py: FINAL_MARK), else `limit` or `stop`; the limit is
    added to a result.json without one. Yields each run and its end."""
    dirs = run_dirs(sweep)
    results = {d: read_result(d) for d in dirs}
    final = (sweep / FINAL_MARK).exists()
    for run_dir, result in results.items():
        if result.get("status") not in FINAL_STATUSES or not records(run_dir):
            continue
        if "limit" not in result:
            race = [r for r in results.values() if cell(r) == cell(result)]
            cap = result["status"] == "max_epochs" and capped(result, race)
            result["limit"] = "capped" if cap else "budget" if final else limit or "stop"
            write_result(run_dir, result)
        close_session(run_dir, result, scalars=False)
        yield run_dir, end_of(result)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("sweeps", nargs="+", type=Path, help="sweep or run directories")
    p.add_argument(
        "--limit", choices=LIMITS, help="the limit of a run that records none (default: stop)"
    )
    args = p.parse_args(argv)
    ends: dict[str, int] = {}
    for sweep in args.sweeps:
        for _, end in restate_sweep(sweep, args.limit):
            ends[end] = ends.get(end, 0) + 1
    print(", ".join(f"{n} {end}" for end, n in sorted(ends.items())) or "no finished run")


if __name__ == "__main__":
    main()
