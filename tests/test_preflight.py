import pytest
from conftest import ROOT

from longterm.config import ConfigError
from longterm.preflight import check, job_overrides

CONF = ROOT / "conf"


def test_command_line_sweeps_expand_to_the_cartesian_product():
    jobs = job_overrides(["task=addition,multiplication", "lr=1e-3,3e-3", "T0=50"], None)
    assert len(jobs) == 4
    assert ["task=multiplication", "lr=0.003", "T0=50"] in jobs


def test_experiment_sweeps_join_and_the_command_line_wins():
    params = {"task": "addition,multiplication", "T0": "50,100,500", "pool": "attention,mean"}
    jobs = job_overrides(["T0=50"], params)
    assert len(jobs) == 4 and all("T0=50" in job for job in jobs)


def test_table1_is_the_papers_grid():
    check(["experiment=table1"], CONF)  # all 96 jobs compose and validate


def test_a_bad_job_anywhere_in_a_sweep_is_caught():
    with pytest.raises(ConfigError, match="^T0=5 is invalid"):
        check(["-m", "task=addition,xor", "T0=100,5"], CONF)


def test_other_hydra_flags_are_left_to_hydra():
    check(["--cfg", "job", "T0=1"], CONF)  # Hydra prints the config; nothing trains


def test_slurm_launcher_takes_its_settings_from_the_command_line():
    from hydra import compose, initialize_config_dir

    overrides = [
        "launcher=slurm",
        "launcher.partition=gpu",
        "launcher.gpus=1",
        "launcher.cpus=4",
        "launcher.time_min=240",
    ]
    check(["-m", *overrides], CONF)
    with initialize_config_dir(str(CONF), version_base="1.3"):
        launcher = compose("train", overrides=overrides, return_hydra_config=True).hydra.launcher
        assert (
            launcher._target_
            == "hydra_plugins.hydra_submitit_launcher.submitit_launcher.SlurmLauncher"
        )
        assert (launcher.partition, launcher.gpus_per_node, launcher.cpus_per_task) == ("gpu", 1, 4)
        assert launcher.timeout_min == 240
