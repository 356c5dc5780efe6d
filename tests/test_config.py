"""The schema on the project's real configs (conf/), composed as Hydra composes them."""

import pytest
from helpers.configs import composed
from helpers.paths import CONF
from omegaconf import OmegaConf

from longterm.config.validate import ConfigError, validate


@pytest.fixture(scope="module")
def base():
    return composed()


def with_(cfg, key, value):
    cfg = cfg.copy()
    OmegaConf.update(cfg, key, value, force_add=True)
    return cfg


def test_every_shipped_config_passes():
    for overrides in [
        (),
        ("pool=mean",),
        ("data=variable",),
        ("task=xor", "data.lengths=per_batch"),
        ("launcher=submitit_local",),
        ("launcher=slurm", "launcher.partition=gpu", "trainer.devices=[1]"),
        ("model.impl=auto", "pool=last", "data.num_workers=auto"),
        ("arch=transformer",),
        ("arch=all_attention", "model.n_persistent=0"),
        ("model=feedback", "model.share_kv=false", "pool=attention"),
    ]:
        assert validate(composed(*overrides)).T0 == 50


STEP_TASKS = sorted(
    p.stem for p in (CONF / "task").glob("*.yaml") if "labels: step" in p.read_text()
)
MODELS = sorted(p.stem for p in (CONF / "model").glob("*.yaml"))


# MAD's compression is read by mad-lab's bottleneck decoder (conf/task/mad_compression.yaml)
TASK_POOL = {"mad_compression": "mad_decoder"}


@pytest.mark.parametrize("task", STEP_TASKS)
def test_a_task_that_labels_steps_is_read_at_every_step_unless_pool_is_named(task):
    """The task's choice wins over a model's own (recurrent models choose pool=last); a pool
    named on the command line wins over both, and an arch names its pool."""
    own = TASK_POOL.get(task, "per_step")
    assert {composed(f"task={task}", f"model={m}").pool.name for m in MODELS} == {own}
    assert validate(composed(f"task={task}", "model=lstm")).pool.name == own
    assert composed(f"task={task}", "model=lstm", "pool=mean").pool.name == "mean"
    assert composed(f"task={task}", "arch=lstm").pool.name == "last"


@pytest.mark.parametrize(
    "key, value, expected",
    [
        ("T0", 1, "T0=1 is invalid: Input should be greater than or equal to 11"),
        ("T0", "abc", "T0='abc' is invalid: Input should be a valid integer"),
        ("T0", 50.5, "T0=50.5 is invalid: Input should be a valid integer"),
        ("lr", 0.0, "lr=0.0 is invalid: Input should be greater than 0"),
        ("lr", -1e-3, "lr=-0.001 is invalid: Input should be greater than 0"),
        ("lr", "fast", "lr='fast' is invalid: Input should be a valid number"),
        ("seed", -1, "seed=-1 is invalid: Input should be greater than or equal to 0"),
        (
            "task.generator",
            "longterm.tasks.marked.sum",
            "task.generator=longterm.tasks.marked.sum is invalid: module longterm.tasks.marked",
        ),
        (
            "data.batch_size",
            0,
            "data.batch_size=0 is invalid: Input should be greater than or equal to 1",
        ),
        (
            "data.lengths",
            "both",
            "data.lengths='both' is invalid: Input should be 'per_sequence' or",
        ),
        ("model.dim", 0, "model.dim=0 is invalid"),
        (
            "task.params.k",
            "many",
            "task.params.k='many' is invalid: Input should be a number or true/false",
        ),
        ("model.init", "xavier", "model.init='xavier' is invalid: Input should be 'paper', "),
        ("pool.mask_padding", "yes", "pool.mask_padding='yes' is invalid: Input should be a valid"),
        ("trainer.max_epochs", 0, "trainer.max_epochs=0 is invalid"),
        ("data.val_batches", 3, "data.val_batches is not a key of data=fixed"),
        ("pool.temperature", 2.0, "pool.temperature is not a key of pool=attention"),
        ("model.heads", 2, "model.heads is not a key of model=feedforward"),
    ],
)
def test_bad_values_fail_with_one_line(base, key, value, expected):
    with pytest.raises(ConfigError) as err:
        validate(with_(base, key, value))
    message = str(err.value)
    assert message.startswith(expected) and "\n" not in message


@pytest.mark.parametrize(
    "model, key, value, expected",
    [
        ("transformer", "heads", 3, "model: heads=3 must divide dim=64"),
        ("all_attention", "heads", 0, "model.heads=0 is invalid: Input should be greater than"),
        ("all_attention", "n_persistent", -1, "model.n_persistent=-1 is invalid: Input should"),
        ("feedback", "layers", 0, "model.layers=0 is invalid: Input should be greater than"),
        ("transformer", "attn_span", 0, "model.attn_span=0 is invalid: Input should be greater"),
        ("transformer", "d_ff", 0, "model.d_ff=0 is invalid: Input should be greater than"),
        ("feedback", "share_kv", "yes", "model.share_kv='yes' is invalid: Input should be a"),
        ("transformer", "n_persistent", 4, "model.n_persistent is not a key of model=transformer"),
        ("all_attention", "impl", "fused", "model.impl=fused is invalid for model=all_attention"),
    ],
)
def test_bad_attention_model_values_fail_with_one_line(model, key, value, expected):
    with pytest.raises(ConfigError) as err:
        validate(with_(composed(f"arch={model}"), f"model.{key}", value))
    message = str(err.value)
    assert message.startswith(expected) and "\n" not in message


def test_variable_length_bounds_are_ordered():
    cfg = composed("data=variable", "data.min_length=500", "data.max_length=100")
    with pytest.raises(ConfigError, match="^data: min_length=500 must be <= max_length=100$"):
        validate(cfg)


def test_what_identifies_a_run_is_the_schema_s_marked_keys():
    """run_params holds every key the schema marks (config/marks.py: setting), each where the
    composed config has it: two runs that differ only in one of them (the width, the updates of an
    epoch) differ in their settings."""
    from longterm.config.run_settings import identity, run_params

    params = run_params(composed())
    assert {name for name, key in identity().items() if key.path.startswith("data.")} == {
        "data", "batch_size", "batches_per_epoch", "lengths", "min_length", "max_length",
        "n_train", "n_test",
    }  # fmt: skip
    others = {"min_length", "max_length", "n_train", "n_test"}  # data=variable's, data=mad's
    assert set(identity()) - set(params) == others
    for override, key, value in [("model.dim=32", "dim", 32), ("T0=100", "T0", 100)]:
        changed = run_params(composed(override))
        assert changed[key] == value != params[key]
        assert {k for k in params if changed[k] != params[k]} == {key}
    budget = run_params(composed("data.batches_per_epoch=20"))
    assert budget["batches_per_epoch"] == 20


def test_a_key_that_repeats_a_setting_cannot_differ_from_it(base):
    """data.T0 is T0, data.task the task's generator (config/marks.py: copy_of): set apart, the
    config is refused in one line; it never trains one value and records the other."""
    for key, value, line in [
        ("data.T0", 100, "data.T0=100 is invalid: data.T0 is set by T0: give T0=100"),
        ("data.seed", 4, "data.seed=4 is invalid: data.seed is set by seed: give seed=4"),
        ("data.task", "longterm.tasks.marked.multiplication", "data.task='longterm.tasks.marked"),
    ]:
        with pytest.raises(ConfigError) as err:
            validate(with_(base, key, value))
        assert str(err.value).startswith(line) and "\n" not in str(err.value)
    validate(with_(with_(base, "T0", 100), "data.T0", 100))  # the same value: the same key


def test_a_record_made_before_a_setting_reads_it_from_its_config(tmp_path):
    """A result.json without `dim` at its top level (made before the width was a setting) is
    compared by the width its config recorded."""
    import json

    from longterm.config.run_settings import other_settings, run_params

    cfg = with_(composed("model.dim=32"), "run_dir", str(tmp_path))
    old = {k: v for k, v in run_params(cfg).items() if k != "dim"}
    record = {**old, "status": "max_epochs", "config": OmegaConf.to_container(cfg, resolve=True)}
    (tmp_path / "result.json").write_text(json.dumps(record))
    assert other_settings(cfg, tmp_path) is None
    line = other_settings(composed("model.dim=64"), tmp_path)
    assert "dim=32" in line and "\n" not in line
