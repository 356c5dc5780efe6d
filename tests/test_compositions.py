"""The sweeper's shared compositions (hydra_plugins/longterm_launcher/sweeper.py,
longterm/config/compositions.py): every job's config, Hydra's section included, equal to the one
Hydra composes for it, with one composition per set of config-group choices."""

from pathlib import Path

import pytest
from hydra.core.global_hydra import GlobalHydra
from hydra.types import RunMode
from omegaconf import OmegaConf

from hydra_plugins.longterm_launcher.sweeper import SharedCompositions
from longterm.config.command_line import composing

CONF = Path(__file__).resolve().parents[1] / "conf"

# A sweep's Hydra overrides (the same for every job), then jobs that differ in values only, in
# group choices, in keys added or deleted, in Hydra's excluded keys and in the order given.
SWEEP = ["hydra.sweep.dir=/tmp/compositions", "hydra.job.chdir=false"]
JOBS = [
    ["task=addition", "T0=100", "lr=0.001", "seed=1"],
    ["task=addition", "T0=100", "lr=0.01", "seed=2"],
    ["task=addition", "lr=0.003", "T0=50", "seed=1"],
    ["task=multiplication", "pool=mean", "T0=100", "lr=0.001", "seed=1"],
    ["task=addition", "launcher=packed", "launcher.jobs=2", "lr=0.001", "seed=3"],
    ["task=xor", "+trainer.max_time=00:00:05:00", "lr=0.001", "seed=1"],
    ["task=addition", "~logger", "T0=100", "lr=0.001", "seed=1"],
    ["experiment=variable_length", "lr=0.001", "seed=2"],
    ["task=addition", "data.batches_per_epoch=100", "model.dim=8", "lr=0.001", "seed=1"],
]


def as_yaml(cfg) -> str:
    return OmegaConf.to_yaml(cfg)


@pytest.fixture(scope="module")
def loader():
    with composing(CONF):
        yield GlobalHydra.instance().config_loader()


def test_every_job_config_is_hydras_own(loader) -> None:
    master = loader.load_configuration("train", overrides=SWEEP, run_mode=RunMode.MULTIRUN)
    shared = SharedCompositions(loader)
    for job in JOBS:
        mine = shared.load_sweep_config(master, job)
        hydras = loader.load_sweep_config(master, job)
        assert as_yaml(mine) == as_yaml(hydras), job
        assert mine.hydra.job.override_dirname == hydras.hydra.job.override_dirname
    # One composition per set of choices: the jobs above that differ only in values share one.
    choices = [
        tuple(o.input_line for o in shared.compositions("train").parse([*SWEEP, *job]))
        for job in JOBS
    ]
    assert len(shared.by_name["train"].by_choices) < len(set(choices))


def test_a_composed_config_is_not_changed_by_a_later_job(loader) -> None:
    """Each job gets a copy: a value set for one job never reaches another's config."""
    master = loader.load_configuration("train", overrides=SWEEP, run_mode=RunMode.MULTIRUN)
    shared = SharedCompositions(loader)
    first = shared.load_sweep_config(master, ["task=addition", "lr=0.001"])
    shared.load_sweep_config(master, ["task=addition", "lr=0.01"])
    again = shared.load_sweep_config(master, ["task=addition", "T0=100"])
    assert first.lr == 0.001 and again.lr == master.lr and again.T0 == 100


def test_a_bad_value_fails_as_under_hydra(loader) -> None:
    master = loader.load_configuration("train", overrides=SWEEP, run_mode=RunMode.MULTIRUN)
    shared = SharedCompositions(loader)
    with pytest.raises(Exception) as mine:
        shared.load_sweep_config(master, ["task=addition", "trainer.max_epoch=5"])
    with pytest.raises(Exception) as hydras:
        loader.load_sweep_config(master, ["task=addition", "trainer.max_epoch=5"])
    assert type(mine.value) is type(hydras.value)
    assert str(mine.value) == str(hydras.value)
