"""End-to-end runs through the real entry point, src/train.py."""

import os

import pytest
from helpers.presets import QUICK, TINY, quick
from helpers.results import read_json, sweep_results
from helpers.runs import train_py

from longterm.analysis.events import hparams_session, scalars


def test_one_run_writes_events_checkpoints_and_result(tmp_path):
    out = train_py(*QUICK, f"hydra.run.dir={tmp_path}", "pool=mean", "lr=3e-3")
    assert out.returncode == 0, out.stderr
    result = read_json(tmp_path / "result.json")
    assert result["status"] == "max_epochs"
    assert (result["task"], result["pool"], result["T0"], result["lr"]) == (
        "addition",
        "mean",
        50,
        3e-3,
    )
    assert result["n_params"] == 10_501
    assert result["epochs"] == 2 and result["updates"] == 40
    assert (
        len(result["val_acc_history"]) == 2 and result["final_acc"] == result["val_acc_history"][-1]
    )
    assert result["best_acc"] == max(result["val_acc_history"])
    assert result["wall_time_s"] > 0 and "git_commit" in result and result["config"]["lr"] == 3e-3
    tags = scalars(tmp_path)
    assert {"train/loss", "train/lr", "val/acc", "val/loss", "verdict/solved"} <= set(tags)
    assert {tag.split("/")[0] for tag in tags} == {"train", "val", "verdict"}  # no epoch, lr-Adam
    assert len(tags["val/acc"]) == 2 and tags["val/acc"][-1][1] == pytest.approx(
        result["final_acc"]
    )
    session = hparams_session(tmp_path)
    for name in (b"task", b"pool", b"T0", b"lr", b"seed", b"data", b"addition", b"mean"):
        assert name in session
    assert (tmp_path / "checkpoints" / "last.ckpt").exists()
    assert (tmp_path / "checkpoints" / "best.ckpt").exists()
    log = (tmp_path / "train.log").read_text()
    assert log.count("GPU available") == 1 and (out.stdout + out.stderr).count("GPU available") == 1
    assert f"max_epochs after 2 epochs (40 updates), best val/acc {result['best_acc']:.4f}" in log


def test_logger_none_runs_without_tensorboard_and_no_srun_warning(tmp_path):
    """`logger=none`: result.json and checkpoints, no events. On a machine with SLURM's `srun`
    on the PATH (a cluster's login node; here an executable of that name that is never run), a
    local run says nothing about SLURM."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "srun").write_text("#!/bin/sh\nexit 1\n")
    (bin_dir / "srun").chmod(0o755)
    run_dir = tmp_path / "run"
    path = f"{bin_dir}:{os.environ['PATH']}"
    out = train_py(*QUICK, "logger=none", f"hydra.run.dir={run_dir}", env={"PATH": path})
    assert out.returncode == 0, out.stderr
    assert "srun" not in (out.stdout + out.stderr).replace(str(tmp_path), "")
    result = read_json(run_dir / "result.json")
    assert result["status"] == "max_epochs" and len(result["val_acc_history"]) == 2
    assert (run_dir / "checkpoints" / "last.ckpt").exists()
    assert not list(run_dir.glob("**/events.out.tfevents.*"))


def test_a_solved_run_stops_and_records_the_epoch(tmp_path):
    out = train_py(
        *quick("trainer.max_epochs=5", "callbacks.stop_when_solved.threshold=0.0"),
        f"hydra.run.dir={tmp_path}",
    )
    assert out.returncode == 0, out.stderr
    result = read_json(tmp_path / "result.json")
    assert result["status"] == "solved" and result["epoch_solved"] == 1
    assert result["epochs"] == 1 and result["updates"] == 20
    assert scalars(tmp_path)["verdict/epoch_solved"] == [(20, 1.0)]


def test_two_job_multirun_gets_one_directory_per_job(tmp_path):
    out = train_py(
        "-m",
        "task=addition,multiplication",
        *quick("trainer.max_epochs=1"),
        f"hydra.sweep.dir={tmp_path}",
    )
    assert out.returncode == 0, out.stderr
    jobs = sorted(p.parent for p in tmp_path.glob("*/result.json"))
    rest = (
        "data.batches_per_epoch=20,data.val_size=200,trainer.log_every_n_steps=10,"
        "trainer.max_epochs=1"
    )
    assert [j.name for j in jobs] == [
        f"{task}-attention-T50-lr1e-3-s0,{rest}" for task in ("addition", "multiplication")
    ]
    assert [read_json(j / "result.json")["task"] for j in jobs] == ["addition", "multiplication"]


@pytest.mark.parametrize(
    "args, expected",
    [
        (["task=xor"], {"task": "xor", "n_params": 10_602}),
        (
            ["task=multiplication", "data.lengths=per_batch", "pool.mask_padding=true"],
            {"lengths": "per_batch", "mask_padding": True},
        ),
        (
            ["data=variable", "data.min_length=40", "data.max_length=90", "data.val_batches=4"],
            {"data": "variable", "min_length": 40, "max_length": 90},
        ),
        (["pool=mean", "model.init=torch", "seed=3"], {"pool": "mean", "seed": 3}),
    ],
)
def test_other_tasks_data_and_options_run(tmp_path, args, expected):
    drop = ("data.val_size",) if "data=variable" in args else ()  # data=variable has none
    short = quick("trainer.max_epochs=1", drop=drop)
    out = train_py(*short, f"hydra.run.dir={tmp_path}", *args)
    assert out.returncode == 0, out.stderr
    result = read_json(tmp_path / "result.json")
    assert {k: result[k] for k in expected} == expected and result["updates"] == 20


def test_an_experiment_config_launches_its_sweep(tmp_path):
    """experiment=table1 is a multirun by itself; the command line narrows its grid."""
    out = train_py(
        "experiment=table1",
        "task=addition",
        "T0=50",
        "pool=mean",
        "lr=1e-3,3e-3",
        *quick("trainer.max_epochs=1"),
        f"hydra.sweep.dir={tmp_path}",
    )
    assert out.returncode == 0, out.stderr
    results = sweep_results(tmp_path)
    assert [(r["task"], r["T0"], r["pool"], r["lr"]) for r in results] == [
        ("addition", 50, "mean", 1e-3),
        ("addition", 50, "mean", 3e-3),
    ]


@pytest.mark.parametrize(
    "args, key",
    [
        (["task=sum"], "task='sum' is invalid: choose one of addition, algorithmic,"),
        (["lr=0"], "lr=0 is invalid: Input should be greater than 0"),
        (["-m", "T0=50,1"], "T0=1 is invalid"),
        (["lr=[1e-3"], "'lr=[1e-3' is not a valid override"),
        (["T1=50"], "Could not override 'T1'"),
        (["data.T0=100"], "data.T0=100 is invalid: data.T0 is set by T0: give T0=100"),
    ],
    ids=["group", "value", "sweep", "parse", "key", "copy"],
)
def test_bad_overrides_fail_before_training_with_one_line(tmp_path, args, key):
    """A bad command line ends at start-up: one line on stderr that begins with the key (or the
    override) and its value, nothing on stdout, a non-zero exit, and no run or sweep directory.
    test_command_line.py runs the other bad command lines through the same check in-process."""
    run, sweep = tmp_path / "run", tmp_path / "sweep"
    out = train_py(*args, f"hydra.run.dir={run}", f"hydra.sweep.dir={sweep}", cwd=tmp_path)
    assert out.returncode != 0
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {key}"), out.stderr
    assert out.stdout == ""
    assert not run.exists() and not sweep.exists() and not (tmp_path / "outputs").exists()


def test_a_run_s_width_is_one_of_its_settings(tmp_path):
    """`model.dim` identifies a run as T0 does (config/run_settings.py: identity): result.json,
    HPARAMS and the run-directory check carry it, so a run at another width is refused in the
    directory in one line naming the width it holds."""
    out = train_py(*TINY, "model.dim=32", f"hydra.run.dir={tmp_path}")
    assert out.returncode == 0, out.stderr
    result = read_json(tmp_path / "result.json")
    assert (result["dim"], result["T0"], result["config"]["data"]["T0"]) == (32, 20, 20)
    assert b"dim" in hparams_session(tmp_path)
    again = train_py(*TINY, "model.dim=64", f"hydra.run.dir={tmp_path}")
    lines = again.stderr.strip().splitlines()
    assert again.returncode != 0 and len(lines) == 1, again.stderr
    assert lines[0].startswith(f"error: {tmp_path} holds a finished run with other settings")
    assert "dim=32" in lines[0]


@pytest.mark.slow
def test_default_run_solves_addition(tmp_path):
    """`make train`: addition, attention pooling, T0=50, lr 1e-3 to 100% validation accuracy."""
    out = train_py("trainer.enable_progress_bar=false", f"hydra.run.dir={tmp_path}", timeout=1800)
    assert out.returncode == 0, out.stderr
    result = read_json(tmp_path / "result.json")
    assert result["status"] == "solved" and result["best_acc"] == 1.0
