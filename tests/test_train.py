"""End-to-end runs through the real entry point, src/train.py."""

import pytest
from conftest import QUICK, read_json, train_py

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
    assert {"train/loss", "val/acc", "val/loss", "lr-Adam"} <= set(tags)
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


def test_a_solved_run_stops_and_records_the_epoch(tmp_path):
    out = train_py(
        *QUICK,
        f"hydra.run.dir={tmp_path}",
        "trainer.max_epochs=5",
        "callbacks.stop_when_solved.threshold=0.0",
    )
    assert out.returncode == 0, out.stderr
    result = read_json(tmp_path / "result.json")
    assert result["status"] == "solved" and result["epoch_solved"] == 1
    assert result["epochs"] == 1 and result["updates"] == 20
    assert scalars(tmp_path)["epoch_solved"] == [(20, 1.0)]


def test_two_job_multirun_gets_one_directory_per_job(tmp_path):
    out = train_py(
        "-m",
        "task=addition,multiplication",
        *QUICK,
        "trainer.max_epochs=1",
        f"hydra.sweep.dir={tmp_path}",
    )
    assert out.returncode == 0, out.stderr
    jobs = sorted(p.parent for p in tmp_path.glob("*/result.json"))
    assert [j.name for j in jobs] == [
        f"data.batches_per_epoch=20,data.val_size=200,task={task},trainer.log_every_n_steps=10,trainer.max_epochs=1"
        for task in ("addition", "multiplication")
    ]
    assert [read_json(j / "result.json")["task"] for j in jobs] == ["addition", "multiplication"]


def test_submitit_local_launcher_runs_the_sweep(tmp_path):
    out = train_py(
        "-m",
        "launcher=submitit_local",
        "task=addition,multiplication",
        *QUICK,
        "trainer.max_epochs=1",
        f"hydra.sweep.dir={tmp_path}",
        timeout=600,
    )
    assert out.returncode == 0, out.stderr
    results = [read_json(p) for p in sorted(tmp_path.glob("*/result.json"))]
    assert [r["task"] for r in results] == ["addition", "multiplication"]
    assert all(r["status"] == "max_epochs" for r in results)
    assert any((tmp_path / ".submitit").iterdir())  # submitit's job folders


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
    quick = [a for a in QUICK if not a.startswith("data.val_size")]  # data=variable has none
    out = train_py(*quick, "trainer.max_epochs=1", f"hydra.run.dir={tmp_path}", *args)
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
        *QUICK,
        "trainer.max_epochs=1",
        f"hydra.sweep.dir={tmp_path}",
    )
    assert out.returncode == 0, out.stderr
    results = [read_json(p) for p in sorted(tmp_path.glob("*/result.json"))]
    assert [(r["task"], r["T0"], r["pool"], r["lr"]) for r in results] == [
        ("addition", 50, "mean", 1e-3),
        ("addition", 50, "mean", 3e-3),
    ]


@pytest.mark.parametrize(
    "args, key",
    [
        (["task=sum"], "task='sum' is invalid: choose one of addition, associative_recall,"),
        (["pool=max"], "pool='max' is invalid: choose one of attention, last, mean"),
        (["data=streaming"], "data='streaming' is invalid: choose one of fixed, variable"),
        (["T0=1"], "T0=1 is invalid: Input should be greater than or equal to 11"),
        (["T0=abc"], "T0='abc' is invalid"),
        (["lr=0"], "lr=0 is invalid: Input should be greater than 0"),
        (["lr=-1e-3"], "lr=-0.001 is invalid"),
        (["lr=fast"], "lr='fast' is invalid"),
        (["-m", "T0=50,1"], "T0=1 is invalid"),
        (["experiment=table1", "lr=1e-3,0"], "lr=0 is invalid"),
        (["data=variable", "data.min_length=500", "data.max_length=100"], "data: min_length=500"),
        (["T1=50"], "Could not override 'T1'"),
        (
            ["experiment=table2"],
            "experiment='table2' is invalid: choose one of memory_comparison, order_battery, "
            "table1, variable_length",
        ),
        (
            ["data.batch_size=0"],
            "data.batch_size=0 is invalid: Input should be greater than or equal to 1",
        ),
        (["lr=[1e-3"], "'lr=[1e-3' is not a valid override"),
        (["data=variable", "+data.val_size=3"], "data.val_size is not a key of data=variable"),
        (["data.val_batches=3"], "Could not override 'data.val_batches': Key 'val_batches'"),
        (["T0=10"], "T0=10 is invalid: Input should be greater than or equal to 11"),
        (["seed=-1"], "seed=-1 is invalid: Input should be greater than or equal to 0"),
        (["model.hidden=0"], "model.hidden=0 is invalid: Input should be greater than or equal"),
        (["arch=all_attention", "model.n_persistent=-1"], "model.n_persistent=-1 is invalid"),
        (["arch=transformer", "model.norm=side"], "model.norm='side' is invalid"),
        (["model.dim=-5"], "model.dim=-5 is invalid"),
        (["model.init=xavier"], "model.init='xavier' is invalid: Input should be 'paper' or"),
        (["pool.mask_padding=maybe"], "pool.mask_padding='maybe' is invalid"),
        (["data.lengths=both"], "data.lengths='both' is invalid"),
        (["data=variable", "data.min_length=5"], "data.min_length=5 is invalid"),
        (["data.batch_size=1.5"], "data.batch_size=1.5 is invalid: Input should be a valid int"),
        (["optim.eps=0"], "optim.eps=0 is invalid: Input should be greater than 0"),
        (["optim.betas=[0.9,1.5]"], "optim.betas.1=1.5 is invalid: Input should be less than 1"),
        (["trainer.max_epochs=0"], "trainer.max_epochs=0 is invalid"),
        (["trainer.accelerator=quantum"], "trainer.accelerator='quantum' is invalid"),
        (["trainer.devices=0"], "trainer.devices=0 is invalid: Input should be a count >= 1"),
        (["trainer.deterministic=maybe"], "trainer.deterministic='maybe' is invalid"),
        (["trainer.log_every_n_steps=0"], "trainer.log_every_n_steps=0 is invalid"),
        (
            ["callbacks.stop_when_solved.threshold=1.5"],
            "callbacks.stop_when_solved.threshold=1.5 is invalid: Input should be less than or",
        ),
        (["launcher=cluster"], "launcher='cluster' is invalid: choose one of local, slurm"),
        (["-m", "launcher=slurm", "launcher.time_min=0"], "launcher.time_min=0 is invalid"),
        (["-m", "launcher=submitit_local", "launcher.cpus=0,2"], "launcher.cpus=0 is invalid"),
        (["-m", "launcher=slurm", "launcher.max_num_timeout=-1"], "launcher.max_num_timeout=-1"),
    ],
)
def test_bad_overrides_fail_before_training_with_one_line(tmp_path, args, key):
    """Each bad command line ends at start-up: one line that begins with the key (or the
    override) and its value, a non-zero exit, and no run or sweep directory."""
    run, sweep = tmp_path / "run", tmp_path / "sweep"
    out = train_py(*args, f"hydra.run.dir={run}", f"hydra.sweep.dir={sweep}", cwd=tmp_path)
    assert out.returncode != 0
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {key}"), out.stderr
    assert out.stdout == ""
    assert not run.exists() and not sweep.exists() and not (tmp_path / "outputs").exists()


@pytest.mark.slow
def test_default_run_solves_addition(tmp_path):
    """`make train`: addition, attention pooling, T0=50, lr 1e-3 to 100% validation accuracy."""
    out = train_py("trainer.enable_progress_bar=false", f"hydra.run.dir={tmp_path}", timeout=1800)
    assert out.returncode == 0, out.stderr
    result = read_json(tmp_path / "result.json")
    assert result["status"] == "solved" and result["best_acc"] == 1.0
