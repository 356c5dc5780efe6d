"""Lightning's debugging keys and the debug group (config/debug.py, conf/debug/): typed without
`+`; a run with any of them records `status: debug`, is never counted as finished (a rerun in its
directory trains again, from the start; the collector leaves it out), goes under
outputs/debug/runs/ on its own and never into a real run's directory; packs run it alone;
`overfit_batches` trains on the same batches every epoch."""

import logging
from types import SimpleNamespace

import pytest
import torch
from helpers.configs import composed
from helpers.paths import CONF
from helpers.presets import QUICK, quick
from helpers.results import read_json
from helpers.runs import train_py

from longterm.analysis.runs import load_runs
from longterm.config.command_line import check
from longterm.config.debug import debug_keys
from longterm.config.validate import ConfigError
from longterm.store.records import DEBUG_STATUS, write_result


def test_fast_dev_run_and_debug_fast_record_debug_and_a_rerun_trains_again(tmp_path, caplog):
    """debug=fast from a fresh directory goes under outputs/debug/runs/; the same keys again in
    that directory train again; the collector leaves the run out."""
    out = train_py(*QUICK, "debug=fast", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    (run_dir,) = (tmp_path / "outputs" / "debug" / "runs").iterdir()
    result = read_json(run_dir / "result.json")
    assert result["status"] == DEBUG_STATUS and result["debug"] == {"fast_dev_run": True}
    assert result["debug_ended"] in ("max_epochs", "solved") and result["updates"] == 1
    again = train_py(*QUICK, "trainer.fast_dev_run=true", f"hydra.run.dir={run_dir}")
    assert again.returncode == 0, again.stderr
    assert "debug run (trainer.fast_dev_run=True), " in again.stdout + again.stderr
    assert "not trained again" not in again.stdout + again.stderr
    assert read_json(run_dir / "result.json")["started_at"] >= result["started_at"]
    with caplog.at_level(logging.WARNING, logger="longterm.analysis.collect"):
        assert load_runs([tmp_path / "outputs"]).empty
    assert "skipped, status debug" in caplog.text


def test_a_real_run_after_a_debug_run_trains_from_the_start(tmp_path):
    """trainer.limit_train_batches=10, typed without `+`, writes checkpoints; a real run in
    the same directory, of other settings too, resumes from none of them."""
    debug = train_py(*QUICK, "trainer.limit_train_batches=10", f"hydra.run.dir={tmp_path}")
    assert debug.returncode == 0, debug.stderr
    result = read_json(tmp_path / "result.json")
    assert result["status"] == DEBUG_STATUS and result["updates"] == 20  # 2 epochs of 10
    assert (tmp_path / "checkpoints" / "last.ckpt").exists()
    real = train_py(*quick("lr=3e-3"), f"hydra.run.dir={tmp_path}")
    assert real.returncode == 0, real.stderr
    assert "resuming from" not in real.stdout + real.stderr
    result = read_json(tmp_path / "result.json")
    assert result["status"] in ("max_epochs", "solved") and result["updates"] == 40
    assert "debug" not in result and result["resumed_at_update"] is None and result["lr"] == 3e-3


def test_a_debug_run_is_refused_in_a_real_runs_directory(tmp_path):
    write_result(tmp_path, {"status": "solved"})
    with pytest.raises(ConfigError) as err:
        check(["debug=limit", f"hydra.run.dir={tmp_path}"], CONF)
    assert str(err.value).startswith(f"{tmp_path} holds a run that is no debug run (status solved)")


@pytest.mark.parametrize(
    "args",
    [
        ["trainer.limit_train_batches=10"],
        ["trainer.limit_val_batches=0.5"],
        ["trainer.overfit_batches=1"],
        ["trainer.fast_dev_run=3"],
        ["debug=overfit"],
    ],
)
def test_the_debugging_keys_are_typed_without_plus(args, tmp_path):
    check([*args, f"hydra.run.dir={tmp_path / 'run'}"], CONF)


@pytest.mark.parametrize(
    "args, expected",
    [
        (["trainer.limit_train_batches=1.5"], "trainer.limit_train_batches=1.5 is invalid"),
        (["trainer.fast_dev_run=-1"], "trainer.fast_dev_run=-1 is invalid"),
        (["debug=slow"], "debug='slow' is invalid: choose one of fast, limit, overfit"),
        (["debug=null"], "debug=null is invalid: leave it out (none by default) or choose one"),
    ],
)
def test_a_bad_debugging_key_is_refused_in_one_line(args, expected):
    with pytest.raises(ConfigError) as err:
        check(args, CONF)
    assert str(err.value).startswith(expected) and "\n" not in str(err.value), err.value


def test_which_runs_are_debug_runs_and_packs_run_them_alone():
    from longterm.sweeps.pack import packable

    assert debug_keys(composed().trainer) == {}
    assert debug_keys(composed("trainer.limit_train_batches=1.0").trainer) == {}  # all batches
    assert debug_keys(composed("trainer.limit_train_batches=1").trainer) == {
        "limit_train_batches": 1
    }
    limit = composed("debug=limit")
    assert set(debug_keys(limit.trainer)) == {"limit_train_batches", "limit_val_batches"}
    assert packable(composed()) and not packable(limit)
    hydra = composed("debug=fast", with_hydra=True).hydra
    assert hydra.run.dir.startswith("outputs/debug/runs/")
    assert composed(with_hydra=True).hydra.run.dir.startswith("outputs/runs/")


def test_overfit_batches_trains_on_the_same_batches_every_epoch():
    cfg = composed(*quick("debug=overfit", "data.num_workers=0"))
    from longterm.training.parts import instantiate_named

    data = instantiate_named(cfg.data)
    cpu = SimpleNamespace(root_device=torch.device("cpu"))
    data.trainer = SimpleNamespace(overfit_batches=1, strategy=cpu)
    first = [next(iter(data.train_dataloader()))[0] for _ in range(2)]
    assert torch.equal(*first)
    data.trainer = SimpleNamespace(overfit_batches=0, strategy=cpu)
    loader = data.train_dataloader()
    loader.sampler.set_epoch(1)
    assert not torch.equal(next(iter(loader))[0], first[0])  # a new epoch, new batches
