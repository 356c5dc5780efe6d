import pytest

from longterm.config import ConfigError, validate

GOOD = {
    "T0": 50,
    "lr": 1e-3,
    "seed": 0,
    "task": {"name": "addition"},
    "pool": {"name": "attention", "mask_padding": True},
    "model": {
        "name": "feedforward",
        "dim": 100,
        "hidden": 100,
        "negative_slope": 0.01,
        "init": "paper",
    },
    "data": {
        "name": "fixed",
        "batch_size": 100,
        "batches_per_epoch": 1000,
        "num_workers": 0,
        "lengths": "per_batch",
    },
    "trainer": {"max_epochs": 100},
}


def with_(key, value):
    cfg = {k: dict(v) if isinstance(v, dict) else v for k, v in GOOD.items()}
    section, _, leaf = key.rpartition(".")
    (cfg[section] if section else cfg)[leaf] = value
    return cfg


def test_good_config_passes():
    assert validate(GOOD).T0 == 50


@pytest.mark.parametrize(
    "key, value, expected",
    [
        ("T0", 1, "T0=1 is invalid: Input should be greater than or equal to 11"),
        ("T0", "abc", "T0='abc' is invalid: Input should be a valid integer"),
        ("T0", 50.5, "T0=50.5 is invalid: Input should be a valid integer"),
        ("lr", 0.0, "lr=0.0 is invalid: Input should be greater than 0"),
        ("lr", -1e-3, "lr=-0.001 is invalid: Input should be greater than 0"),
        ("lr", "fast", "lr='fast' is invalid: Input should be a valid number"),
        ("seed", -1, "seed=-1 is invalid"),
        ("task.name", "sum", "task.name='sum' is invalid: Input should be 'addition'"),
        ("data.batch_size", 0, "data.batch_size=0 is invalid"),
        (
            "data.lengths",
            "both",
            "data.lengths='both' is invalid: Input should be 'per_sequence' or",
        ),
        ("model.dim", 0, "model.dim=0 is invalid"),
        ("model.init", "xavier", "model.init='xavier' is invalid"),
        ("pool.mask_padding", "yes", "pool.mask_padding='yes' is invalid: Input should be a valid"),
        ("trainer.max_epochs", 0, "trainer.max_epochs=0 is invalid"),
    ],
)
def test_bad_values_fail_with_one_line(key, value, expected):
    with pytest.raises(ConfigError) as err:
        validate(with_(key, value))
    message = str(err.value)
    assert message.startswith(expected) and "\n" not in message


def test_variable_length_bounds_are_ordered():
    cfg = with_("data.min_length", 500)
    cfg["data"]["max_length"] = 100
    with pytest.raises(ConfigError, match="min_length=500 must be <= max_length=100"):
        validate(cfg)
