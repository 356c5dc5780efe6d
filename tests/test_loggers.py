"""Loggers besides TensorBoard's (training/loggers.py, conf/logger/): `logger=csv`, a user's own
Lightning logger by import path (tests/plugins/lines.py), each training with no traceback and
HPARAMS records left to TensorBoard; a resumed CSV run keeps its earlier rows; a logger that
cannot be built is refused before training in one line (config/machine_checks.py)."""

import csv
import json

import pytest
from helpers.paths import CONF, PLUGINS
from helpers.presets import QUICK
from helpers.results import read_json
from helpers.runs import train_py

from longterm.config.command_line import check
from longterm.config.validate import ConfigError
from longterm.store.records import FINAL_STATUSES

NOT_HPARAMS = "HPARAMS records are TensorBoard's: not written with"


def rows(path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_logger_csv_trains_and_writes_result_and_metrics(tmp_path):
    out = train_py(*QUICK, "logger=csv", f"hydra.run.dir={tmp_path}")
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr
    result = read_json(tmp_path / "result.json")
    assert result["status"] in FINAL_STATUSES and len(result["val_acc_history"]) == 2
    metrics = rows(tmp_path / "csv" / "metrics.csv")
    assert [float(r["val/acc"]) for r in metrics if r["val/acc"]] == result["val_acc_history"]
    assert any(r["train/loss"] for r in metrics) and (tmp_path / "csv" / "hparams.yaml").exists()
    assert not list(tmp_path.glob("events.out.tfevents.*"))  # TensorBoard's, not written
    assert (out.stdout + out.stderr).count(f"{NOT_HPARAMS} CSVLogger") == 1


def test_a_users_logger_by_import_path_trains(tmp_path):
    """`logger._target_` on the command line, as a model comes in by `model.encoder`, and a conf
    file of the user's own on the search path (`--config-dir`, logger=lines)."""
    given = ["logger=none", "+logger._target_=lines.JSONLines", "+logger.save_dir=${run_dir}"]
    for run_dir, args in (
        (tmp_path / "path", given),
        (tmp_path / "conf", ["--config-dir", str(PLUGINS / "conf"), "logger=lines"]),
    ):
        out = train_py(*args, *QUICK, f"hydra.run.dir={run_dir}", env={"PYTHONPATH": str(PLUGINS)})
        assert out.returncode == 0, out.stderr
        result = read_json(run_dir / "result.json")
        lines = (run_dir / "metrics.jsonl").read_text().splitlines()
        logged = [json.loads(line)["val/acc"] for line in lines if "val/acc" in line]
        assert logged == pytest.approx(result["val_acc_history"])
        assert json.loads((run_dir / "params.json").read_text())["T0"] == 50
        assert f"{NOT_HPARAMS} JSONLines" in out.stdout + out.stderr


def test_a_resumed_csv_run_keeps_the_rows_before_it(tmp_path):
    """Lightning's CSVLogger deletes metrics.csv when its directory holds one; a resumed run's
    (purge_step: the update it resumes at) keeps the rows logged before that update."""
    from longterm.training.loggers import CSVLogger

    first = CSVLogger(str(tmp_path))
    for step in range(0, 40, 10):
        first.log_metrics({"train/loss": 1.0 / (step + 1)}, step)
    first.save()
    resumed = CSVLogger(str(tmp_path), purge_step=20)
    resumed.log_metrics({"train/loss": 0.5, "val/acc": 0.25}, 20)
    resumed.save()
    kept = rows(tmp_path / "csv" / "metrics.csv")
    assert [int(r["step"]) for r in kept] == [0, 10, 20]
    assert kept[-1]["val/acc"] == "0.25" and kept[0]["val/acc"] == ""


@pytest.mark.parametrize(
    "args, expected",
    [
        (["logger=false"], "logger=false is invalid: choose one of csv, none, tensorboard"),
        (["logger=csvv"], "logger='csvv' is invalid: choose one of csv, none, tensorboard"),
        (["logger._target_=lines.JSONLines"], "logger.name is not an argument of lines.JSONLines"),
        (["logger=csv", "+logger.foo=1"], "logger.foo is not an argument of longterm.training."),
        (["logger=none", "+logger._target_=json.dumps"], "logger._target_=json.dumps is invalid"),
        (["logger=none", "+logger._target_=lines.JSONLines"], "logger.save_dir is missing"),
        (["logger._target_=nowhere.Logger"], "logger._target_=nowhere.Logger is invalid"),
    ],
)
def test_a_logger_that_cannot_be_built_is_refused_in_one_line(args, expected, monkeypatch):
    monkeypatch.syspath_prepend(str(PLUGINS))
    with pytest.raises(ConfigError) as err:
        check(args, CONF)
    assert str(err.value).startswith(expected) and "\n" not in str(err.value), err.value
