"""What TensorBoard shows of a sweep, read back from the event files by TensorBoard itself: the
hparams plugin's own handlers (what the HPARAMS tab asks for) and its EventAccumulator. The
table's default columns, its filters, every run with every metric and its real status, the run
directory names, and the groups the Scalars tab opens on."""

import re
import shutil
from pathlib import Path

import pytest
from google.protobuf import struct_pb2
from helpers.configs import composed, conf_names
from helpers.paths import ROOT
from helpers.presets import FOUR_STEPS, quick
from helpers.results import read_json
from helpers.runs import train_py
from omegaconf import OmegaConf, open_dict
from tensorboard import context
from tensorboard.backend.event_processing import data_provider, plugin_event_multiplexer
from tensorboard.compat.proto.event_pb2 import Event
from tensorboard.plugins import base_plugin
from tensorboard.plugins.hparams import (
    api_pb2,
    backend_context,
    get_experiment,
    list_session_groups,
    metadata,
)

from longterm.analysis.events import scalars
from longterm.choices import (
    ACCURACIES,
    COMMON_MODEL_KEYS,
    DECAY_GROUPS,
    HEADS,
    INITS,
    LENGTHS,
    LIMITS,
    LOSSES,
    OPTIMIZERS,
    SCHEDULES,
)
from longterm.config import run_names
from longterm.store.archive import FINAL_MARK
from longterm.store.records import ENDS, end_of, write_result
from longterm.training.hparams import (
    FILE_VERSION,
    RECORDS,
    SCHEMA,
    close_session,
    experiment,
    open_session,
    records,
    restate_sweep,
    session_end,
    session_start,
    write_file,
)

# Four jobs: solved at once (threshold 0), unsolved after one epoch, and two that diverge.
SETTINGS = quick("trainer.max_epochs=1", base=FOUR_STEPS)
SWEEP = ["-m", "lr=1e-3,1e30", "callbacks.stop_when_solved.threshold=0.0,1.0", *SETTINGS]
REST = (
    "data.batches_per_epoch=4,data.val_size=100,model.impl=reference,"
    "trainer.log_every_n_steps=1,trainer.max_epochs=1"
)
NAMES = {  # (lr, threshold) -> directory
    (lr, t): f"addition-attention-T50-lr{short}-s0,callbacks.stop_when_solved.threshold={t},{REST}"
    for lr, short in ((1e-3, "1e-3"), (1e30, "1e30"))
    for t in (0.0, 1.0)
}
STATUS = {  # (lr, threshold) -> (result status, HPARAMS session status)
    (1e-3, 0.0): ("solved", api_pb2.STATUS_SUCCESS),
    (1e-3, 1.0): ("max_epochs", api_pb2.STATUS_FAILURE),
    (1e30, 0.0): ("diverged", api_pb2.STATUS_FAILURE),
    (1e30, 1.0): ("diverged", api_pb2.STATUS_FAILURE),
}


def own_model_keys() -> dict[str, object]:
    """Every built-in model's own keys (conf/model/*.yaml, less the keys every model has), each
    with its value in the first conf file that has it."""
    own: dict[str, object] = {}
    for path in sorted((ROOT / "conf" / "model").glob("*.yaml")):
        for key, value in OmegaConf.to_container(OmegaConf.load(path)).items():
            if key not in (*COMMON_MODEL_KEYS, "defaults"):
                own.setdefault(key, value)
    return own


METRICS = ["verdict/solved", "verdict/best_acc", "verdict/epochs"]
TASK_KEYS = ["k", "statements", "variables", "arity", "vocab"]  # the built-in tasks' own keys
TASK_KEYS += ["kv_pairs", "power_a", "random_non_queries", "data_tokens"]
# The built-in models' own keys (conf/model/*.yaml), columns of every run's table.
MODEL_OWN = own_model_keys()  # key -> a value of it, from the conf files
MODEL_KEYS = sorted(MODEL_OWN)
# shown as text (tensorboard.kind_of): `norm`, `decay`, `a_init`; `kernels`, a list
FREE_TEXT = {k for k, v in MODEL_OWN.items() if isinstance(v, str | list)}
ALL_STATUSES = [
    api_pb2.STATUS_UNKNOWN,
    api_pb2.STATUS_SUCCESS,
    api_pb2.STATUS_FAILURE,
    api_pb2.STATUS_RUNNING,
]


@pytest.fixture(scope="module")
def sweep(tmp_path_factory) -> Path:
    sweep_dir = tmp_path_factory.mktemp("tensorboard") / "sweep"
    out = train_py(*SWEEP, f"hydra.sweep.dir={sweep_dir}")
    assert out.returncode == 0, out.stderr
    return sweep_dir


@pytest.fixture(scope="module")
def board(sweep):
    return board_of(sweep)


def board_of(sweep: Path):
    """The hparams plugin's backend over the sweep, as `tensorboard --logdir <sweep>` builds it."""
    mux = plugin_event_multiplexer.EventMultiplexer()
    mux.AddRunsFromDirectory(str(sweep))
    mux.Reload()
    provider = data_provider.MultiplexerDataProvider(mux, str(sweep))
    tb_context = base_plugin.TBContext(data_provider=provider, multiplexer=mux, logdir=str(sweep))
    return backend_context.Context(tb_context), context.RequestContext()


def get_experiment_of(board) -> api_pb2.Experiment:
    backend, request = board
    return get_experiment.Handler(request, backend, "", api_pb2.GetExperimentRequest()).run()


def sessions(board, *col_params: api_pb2.ColParams) -> dict[str, api_pb2.Session]:
    """The HPARAMS table's rows (every status), by run name."""
    backend, request = board
    query = api_pb2.ListSessionGroupsRequest(
        allowed_statuses=ALL_STATUSES, col_params=col_params, start_index=0, slice_size=100
    )
    groups = list_session_groups.Handler(request, backend, "", query).run().session_groups
    return {s.name: s for g in groups for s in g.sessions}


def test_the_table_opens_on_the_columns_that_matter(board):
    """TensorBoard sorts the hyperparameters that differ first, then by name; the rest follow."""
    infos = get_experiment_of(board).hparam_infos
    first = ["T0", "end", "lr", "model", "pool"]  # hparams.COLUMNS: the five TensorBoard shows
    assert [h.name for h in infos[:5]] == first
    assert {h.name for h in infos if h.differs} == set(first)
    assert [h.name for h in infos[5:]] == sorted(
        ["batch_size", "data", "lengths", "loss", "mask_padding"]
        + ["max_epochs", "max_length", "min_length", "seed"]
        + ["clip", "optim", "schedule", "warmup", "weight_decay"]  # the recipe (optim.*)
        + ["min_lr", "decay_groups"]
        + ["head", "stop_at", "stop_strict"]  # model.head, the stop rule
        + ["accuracy", "setting"]  # task.accuracy, task.setting
        + ["n_train", "n_test", "pool.norm"]  # data=mad's; pool=mad_decoder's
        + ["dim", "hidden", "negative_slope", "init", "task"]  # the model's keys every model has
        + ["limit"]  # what the epoch limit is (hparams.ENDING, with `end`)
        + ["batches_per_epoch"]  # with max_epochs, the budget
        + TASK_KEYS
        + ["n_params", "state_size"]  # measured on the model (tensorboard.MEASURED)
        + MODEL_KEYS
    )


def test_every_string_key_has_its_allowed_values_to_filter_by(board):
    """Each string key but a model's own (free text: `norm`, `decay`, ...) lists its values, the
    names of the conf files for task, pool and model."""
    infos = {h.name: h for h in get_experiment_of(board).hparam_infos}
    names = {group: tuple(conf_names(group)) for group in ("task", "pool", "model")}
    allowed = dict(**names, data=("fixed", "variable", "mad"), loss=LOSSES, lengths=LENGTHS)
    allowed |= dict(optim=OPTIMIZERS, schedule=SCHEDULES, head=HEADS, init=INITS)
    allowed |= dict(limit=LIMITS, end=ENDS)
    allowed |= dict(accuracy=ACCURACIES, decay_groups=DECAY_GROUPS)
    strings = {n for n, h in infos.items() if h.type == api_pb2.DATA_TYPE_STRING}
    free = {"setting", "pool.norm"}  # a task's named setting, a readout's own key
    assert strings == {*allowed, *FREE_TEXT, *free}
    assert not any(infos[k].domain_discrete.values for k in FREE_TEXT)
    for name, values in allowed.items():
        assert [v.string_value for v in infos[name].domain_discrete.values] == list(values)
    assert [v.bool_value for v in infos["mask_padding"].domain_discrete.values] == [False, True]

    def pool_is(value: str) -> api_pb2.ColParams:
        ticked = struct_pb2.ListValue(values=[struct_pb2.Value(string_value=value)])
        return api_pb2.ColParams(hparam="pool", filter_discrete=ticked)

    assert len(sessions(board, pool_is("attention"))) == 4 and not sessions(board, pool_is("mean"))


def test_every_run_is_in_the_table_with_every_metric_and_its_status(board, sweep):
    assert [m.name.tag for m in get_experiment_of(board).metric_infos] == METRICS
    rows = sessions(board)
    assert sorted(rows) == sorted(NAMES.values())
    for key, name in NAMES.items():
        result, row = read_json(sweep / name / "result.json"), rows[name]
        assert (result["status"], row.status) == STATUS[key]
        values = {m.name.tag: m.value for m in row.metric_values}
        assert list(values) == METRICS
        assert values["verdict/solved"] == (result["status"] == "solved")
        assert values["verdict/best_acc"] == pytest.approx(result["best_acc"] or 0.0)
        assert values["verdict/epochs"] == result["epochs"]
        assert {m.training_step for m in row.metric_values} == {result["updates"]}


def groups_of(board) -> list[api_pb2.SessionGroup]:
    """The HPARAMS table's groups (every status): a group's `hparams` are its columns."""
    backend, request = board
    query = api_pb2.ListSessionGroupsRequest(
        allowed_statuses=ALL_STATUSES, start_index=0, slice_size=100
    )
    return list(list_session_groups.Handler(request, backend, "", query).run().session_groups)


def test_each_run_s_end_and_limit_are_columns(board, sweep):
    """`end` says how each run ended (records.end_of): here solved, max_epochs (the default
    limit, `stop`: the run was to train until solved) and diverged."""
    for group in groups_of(board):
        result = read_json(sweep / group.sessions[0].name / "result.json")
        assert result["limit"] == group.hparams["limit"].string_value == "stop"
        assert group.hparams["end"].string_value == end_of(result) == result["status"]


def test_every_run_shows_the_size_of_its_model(board, sweep):
    """Beside its settings, each run's row holds its parameter count and its state size (the
    paper's network with attention pooling carries the running weighted sum of its D = 100
    states, the normaliser and the maximum), as its result.json does."""
    backend, request = board
    query = api_pb2.ListSessionGroupsRequest(
        allowed_statuses=ALL_STATUSES, start_index=0, slice_size=100
    )
    groups = list_session_groups.Handler(request, backend, "", query).run().session_groups
    assert sorted(s.name for g in groups for s in g.sessions) == sorted(NAMES.values())
    for group in groups:
        result = read_json(sweep / group.sessions[0].name / "result.json")
        assert result["state_size"] == 100 + 2
        for key in ("n_params", "state_size"):
            assert group.hparams[key].number_value == result[key]


def test_the_scalars_tab_opens_on_train_and_val(sweep):
    tags = scalars(sweep / NAMES[1e-3, 1.0])
    assert sorted(tags) == [
        "train/loss",
        "train/lr",
        "val/acc",
        "val/loss",
        "verdict/best_acc",
        "verdict/epochs",
        "verdict/solved",
    ]
    assert tags["train/lr"] == [(0, pytest.approx(1e-3))]
    assert "verdict/epoch_solved" in scalars(sweep / NAMES[1e-3, 0.0])


def test_a_rerun_of_the_sweep_finds_every_job_in_its_directory(sweep):
    before = sorted(p.name for p in sweep.iterdir())
    out = train_py(*SWEEP, f"hydra.sweep.dir={sweep}")
    assert out.returncode == 0, out.stderr
    assert sorted(p.name for p in sweep.iterdir()) == before
    for name in NAMES.values():
        assert "not trained again" in (sweep / name / "train.log").read_text()


def job_dir(*overrides: str, sweep_dir: Path | None = None) -> str:
    """The directory name Hydra gives a sweep's job with these overrides."""
    cfg = composed(*overrides, with_hydra=True)
    if sweep_dir is not None:
        with open_dict(cfg):
            cfg.hydra.sweep.dir = str(sweep_dir)
    return OmegaConf.select(cfg, "hydra.sweep.subdir")


def test_names_put_the_settings_that_differ_first():
    assert job_dir("seed=1", "lr=3e-3") == "addition-attention-T50-lr3e-3-s1"
    assert job_dir("arch=lstm", "task=temporal_order", "T0=100", "trainer.max_epochs=20") == (
        "temporal_order-lstm-last-T100-lr1e-3-s0,trainer.max_epochs=20"
    )
    assert job_dir("data=variable", "pool=mean", "T0=100", "launcher=submitit_local") == (
        "addition-mean-var50-10000-lr1e-3-s0,T0=100"  # where a job runs is no part of its name
    )
    assert job_dir("task=associative_recall", "task.params.k=8", "model.impl=reference") == (
        "associative_recall-attention-T50-lr1e-3-s0,model.impl=reference,task.params.k=8"
    )
    run_dir = OmegaConf.select(composed("lr=1e-2", with_hydra=True), "hydra.run.dir")
    time = r"\d{4}-\d\d-\d\d_\d\d-\d\d-\d\d\.\d{6}"
    assert re.fullmatch(f"outputs/runs/{time}-addition-attention-T50-lr1e-2-s0", run_dir)
    assert [run_names.number(x) for x in (1e-3, 3e-4, 1.5e-3, 1e30, 0.1)] == [
        "1e-3",
        "3e-4",
        "1.5e-3",
        "1e30",
        "1e-1",
    ]


def test_names_stay_unique_and_short_enough():
    """Overrides too long for a file name are replaced by a digest of them."""
    names = [job_dir(f"callbacks.checkpoint.filename={'b' * 200}{end}") for end in "12"]
    assert names[0] != names[1] and all(len(n) <= run_names.MAX_NAME for n in names)
    assert all(n.startswith("addition-attention-T50-lr1e-3-s0,overrides-") for n in names)


def test_a_sweep_named_the_old_way_keeps_its_directories(tmp_path):
    old = tmp_path / "lr=3e-3,seed=1"
    old.mkdir()
    assert job_dir("lr=3e-3", "seed=1", sweep_dir=tmp_path) == "lr=3e-3,seed=1"
    assert job_dir("lr=3e-3", "seed=2", sweep_dir=tmp_path) == "addition-attention-T50-lr3e-3-s2"


def test_the_schema_holds_every_key_a_run_can_have():
    from longterm.config.run_settings import run_params

    configs = (
        [],
        ["data=variable"],
        ["task=associative_recall"],
        ["task=algorithmic", "pool=per_step"],
        ["task=fixed_knowledge", "pool=per_step"],
        ["task=mqar", "pool=per_step"],
        ["task=selective_copying", "pool=per_step"],
    )
    mad = run_params(composed("data=mad", "task=mad_selective_copying"))
    assert {"n_train", "n_test"} <= set(mad)  # data=mad's
    union = set().union(*(run_params(composed(*c)) for c in configs))
    assert union | {"n_train", "n_test"} == set(SCHEMA)


def test_a_model_s_own_keys_are_among_the_run_s_parameters():
    """An encoder's own keys (the transformer's) by their names, as the task's are."""
    from longterm.config.run_settings import run_params

    params = run_params(composed("arch=transformer", "model.layers=3"))
    own = {k: params[k] for k in ("heads", "layers", "attn_span", "d_ff", "norm")}
    assert own == {"heads": 4, "layers": 3, "attn_span": 64, "d_ff": 64, "norm": "post"}
    others = {"min_length", "max_length", "n_train", "n_test", *TASK_KEYS}  # other data's, tasks'
    assert set(params) == set(SCHEMA) - others | set(own)


@pytest.mark.parametrize(
    "status, code",
    [
        ("solved", api_pb2.STATUS_SUCCESS),
        ("max_epochs", api_pb2.STATUS_FAILURE),
        ("diverged", api_pb2.STATUS_FAILURE),
        ("failed", api_pb2.STATUS_FAILURE),
    ],
)
def test_session_end_status(status, code):
    content = session_end(status).value[0].metadata.plugin_data.content
    assert metadata.parse_session_end_info_plugin_data(content).status == code


def test_a_run_keeps_one_start_record_and_an_earlier_end_is_dropped(tmp_path):
    """A resumed run writes no second start; a rerun after a failure, or with other settings,
    drops the earlier records and writes its own."""
    params = {"task": "addition", "lr": 1e-3, "max_epochs": 2}
    names = {"task": ("addition",), "pool": ("attention",), "model": ("feedforward",)}
    first = Event(file_version=FILE_VERSION).SerializeToString()
    written = [first] + [
        Event(step=0, summary=s).SerializeToString()
        for s in (experiment(names), session_start(params))
    ]
    write_file(tmp_path / "events.out.tfevents.1.host.1.0", written)
    added = []
    open_session(tmp_path, added.append, params, names)  # resumed: the start record is there
    assert added == []
    failed = {"status": "failed", "best_acc": None, "epochs": 1, "updates": 3}
    close_session(tmp_path, failed)
    assert len(records(tmp_path)[metadata.SESSION_END_INFO_TAG]) == 1
    open_session(tmp_path, added.append, params, names)  # the rerun of a failed run
    assert [s.value[0].tag for s in added] == [
        metadata.EXPERIMENT_TAG,
        metadata.SESSION_START_INFO_TAG,
    ]
    assert set(records(tmp_path)) == set()  # the failure is gone; the new records are `added`
    assert scalars(tmp_path)["verdict/epochs"] == [(3, 1.0)]  # other events stay


@pytest.mark.parametrize(
    "limit, end, code",
    [
        ("stop", "max_epochs", api_pb2.STATUS_FAILURE),
        ("budget", "budget", api_pb2.STATUS_SUCCESS),
        ("capped", "capped", api_pb2.STATUS_SUCCESS),
    ],
)
def test_a_run_at_its_budget_or_a_race_cap_ended_as_designed(tmp_path, limit, end, code):
    """Unsolved at its epoch limit, a run of a fixed-budget experiment or a race's capped rival
    is a success with its `end`; a run that was to train until solved is a failure. The start
    record is written again with the end, and the run keeps one of each record."""
    params = {"task": "addition", "lr": 1e-3, "max_epochs": 2, "limit": limit}
    names = {"task": ("addition",), "pool": ("attention",), "model": ("feedforward",)}
    written = [Event(file_version=FILE_VERSION).SerializeToString()] + [
        Event(step=0, summary=s).SerializeToString()
        for s in (experiment(names), session_start(params))
    ]
    write_file(tmp_path / "events.out.tfevents.1.host.1.0", written)
    ended = {"status": "max_epochs", "limit": limit, "best_acc": 0.5, "epochs": 2, "updates": 8}
    close_session(tmp_path, ended)
    found = records(tmp_path)
    assert {tag: len(contents) for tag, contents in found.items()} == dict.fromkeys(RECORDS, 1)
    start = metadata.parse_session_start_info_plugin_data(found[RECORDS[1]][0])
    assert (start.hparams["end"].string_value, start.hparams["limit"].string_value) == (end, limit)
    assert start.hparams["lr"].number_value == 1e-3
    assert metadata.parse_session_end_info_plugin_data(found[RECORDS[2]][0]).status == code
    assert scalars(tmp_path)["verdict/epochs"] == [(8, 2.0)]


def test_archived_runs_get_their_end_again(sweep, tmp_path):
    """`python -m longterm.training.hparams` writes a finished run's records again from its
    result.json: a run of a final sweep that records no limit (made before it existed) ended at
    its budget; the records stay one of each, the scalars are not written twice."""
    copy = tmp_path / "sweep"
    shutil.copytree(sweep, copy)
    (copy / FINAL_MARK).touch()
    for name in NAMES.values():
        result = read_json(copy / name / "result.json")
        del result["limit"]
        write_result(copy / name, result)
    assert dict(restate_sweep(copy, None)) == {
        copy / NAMES[key]: end
        for key, end in zip(NAMES, ("solved", "budget", "diverged", "diverged"), strict=True)
    }
    for group in groups_of(board_of(copy)):
        run_dir = copy / group.sessions[0].name
        assert read_json(run_dir / "result.json")["limit"] == "budget"
        assert group.hparams["end"].string_value == end_of(read_json(run_dir / "result.json"))
        assert group.sessions[0].status != api_pb2.STATUS_UNKNOWN
        assert {tag: len(c) for tag, c in records(run_dir).items()} == dict.fromkeys(RECORDS, 1)
        assert len(scalars(run_dir)["verdict/epochs"]) == 1
    rows = sessions(board_of(copy))
    assert rows[NAMES[1e-3, 1.0]].status == api_pb2.STATUS_SUCCESS  # at its budget
    files = list(copy.glob("*/events.out.tfevents.*"))
    assert dict(restate_sweep(copy, None))  # again: the same records, no file more
    assert len(list(copy.glob("*/events.out.tfevents.*"))) == len(files)
