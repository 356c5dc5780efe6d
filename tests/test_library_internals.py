"""What an update costs around its kernels (docs/performance_runs.md): the cuts keep Lightning's
behaviour where a user asks for it (a profiler) and in what the loop reads (steps' signatures)."""

import pytest
import torch
from helpers.paths import CONF
from helpers.presets import QUICK
from helpers.runs import train_py
from hydra import compose, initialize_config_dir
from pytorch_lightning.profilers import PassThroughProfiler, SimpleProfiler
from pytorch_lightning.utilities.signature_utils import is_param_in_hook_signature

from longterm.training.library_internals import NoProfiler
from longterm.training.module import MemoryTaskModule
from longterm.training.parts import run_trainer


def trainer_of(*overrides: str):
    with initialize_config_dir(str(CONF), version_base="1.3"):
        cfg = compose("train", overrides=["run_dir=unused", *overrides])
    return run_trainer(cfg, [], False)


def test_no_profiler_unless_one_is_asked_for():
    profiler = trainer_of().profiler
    assert isinstance(profiler, NoProfiler) and isinstance(profiler, PassThroughProfiler)
    with profiler.profile("[Callback]x.on_train_batch_end"):
        pass
    assert isinstance(trainer_of("+trainer.profiler=simple").profiler, SimpleProfiler)


def test_a_profiler_asked_for_on_the_command_line_reports(tmp_path):
    out = train_py(*QUICK, f"hydra.run.dir={tmp_path}", "+trainer.profiler=simple")
    assert out.returncode == 0, out.stderr
    assert "run_training_batch" in out.stdout + out.stderr + (tmp_path / "train.log").read_text()


class WithoutIndex(MemoryTaskModule):
    def training_step(self, batch):  # no batch_idx: Lightning passes none
        return super().training_step(batch, 0)


class WithIndex(WithoutIndex):
    def training_step(self, batch, batch_idx, *rest):
        return super().training_step(batch)


@pytest.mark.parametrize(
    "module, has_index",
    [(MemoryTaskModule, True), (WithoutIndex, False), (WithIndex, True)],
)
def test_lightning_reads_each_steps_own_signature(module, has_index):
    net = torch.nn.Linear(1, 1)
    step = module(net).training_step
    assert "__signature__" in vars(module.training_step)
    assert is_param_in_hook_signature(step, "batch_idx", min_args=2) == has_index


def test_the_hook_name_lightning_sets_is_a_plain_attribute():
    module = MemoryTaskModule(torch.nn.Linear(1, 1))
    module._current_fx_name = "training_step"
    assert vars(module)["_current_fx_name"] == "training_step"
    module.extra = torch.nn.Linear(1, 1)  # every other name: nn.Module's own rules
    assert "extra" in module._modules and "extra" not in vars(module)
