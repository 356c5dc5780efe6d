"""The MAD protocol as mad-lab trains it (data=mad, models/mad.py, conf/experiment/mad.yaml,
longterm.experiments.mad): the data module holds mad-lab's arrays, the macro accuracy is mad-lab's
metric, MAD's model shape around every built-in mixer has a step form equal to it, mad-lab's
weight-decay groups, the settings' checks, the contract of every MAD task, a tiny experiment=mad
multirun and its page, and the planner's commands."""

import shlex

import pytest
import torch
from helpers.configs import composed
from helpers.runs import multirun, src_py
from torchmetrics.classification import MulticlassAccuracy

from longterm.config.validate import ConfigError, validate
from longterm.experiments.mad import page, runs
from longterm.models.mad import MAD, SwiGLU
from longterm.models.state import run_steps, state_numbers
from longterm.tasks import NO_TARGET, mad
from longterm.training.mad_data import MadData
from longterm.training.module import MemoryTaskModule
from longterm.training.recipes import Recipe

TINY = ("data.n_train=40", "data.n_test=24", "data.batch_size=16")


def tiny_data(task: str = "in-context-recall", setting: str = "baseline") -> MadData:
    return MadData(f"longterm.tasks.mad.{task.replace('-', '_')}", setting, 40, 24,
                   mad.named_setting(task, setting)["steps"], seed=3, batch_size=16,
                   batches_per_epoch=3)  # fmt: skip


def test_the_data_are_mad_labs_arrays_with_its_targets():
    data = tiny_data()
    data.setup()
    expected = mad.dataset("in-context-recall", 3, 40, 24, **data.keys())
    epoch = [data.train[(0, i)] for i in range(len(data.train))]
    assert [len(b[0]) for b in epoch] == [16, 16, 8]  # the last batch smaller, as mad-lab's
    x = torch.cat([b[0] for b in epoch])
    y = torch.cat([b[1] for b in epoch])
    order = data.train.order_of(0)
    assert torch.equal(x, torch.from_numpy(expected["train"][0][order]))
    assert torch.equal(y, torch.from_numpy(expected["train"][1][order]))
    assert (y != NO_TARGET).float().mean() > 0.9  # training: the next token at (nearly) every step
    test_x = torch.cat([b[0] for b in data.validation])
    test_y = torch.cat([b[1] for b in data.validation])
    assert torch.equal(test_x, torch.from_numpy(expected["test"][0]))  # in order
    assert torch.equal(test_y, torch.from_numpy(expected["test"][1]))
    assert (test_y != NO_TARGET).float().mean() < 0.5  # test: the probed steps only
    assert not (data.train.order_of(1) == order).all()  # a new order each epoch
    assert all(b[2].all() for b in epoch)


def test_macro_accuracy_is_mad_labs_metric():
    """mad-lab's Accuracy: MulticlassAccuracy(num_classes, ignore_index=-100) at its default
    average over flattened logits and targets; the module's over the labelled rows only."""
    torch.manual_seed(0)
    logits, y = torch.randn(4, 30, 10), torch.randint(0, 10, (4, 30))
    y[torch.rand(4, 30) < 0.6] = NO_TARGET
    theirs = MulticlassAccuracy(num_classes=10, ignore_index=NO_TARGET)  # mad/metrics.py
    theirs.update(logits.view(-1, 10).argmax(-1), y.view(-1))
    module = MemoryTaskModule(torch.nn.Identity(), loss="cross_entropy", n_outputs=10,
                              per_step=True, accuracy="macro")  # fmt: skip
    at = y != NO_TARGET
    module.val_acc.update(logits[at], y[at])
    assert module.val_acc.compute() == pytest.approx(theirs.compute().item(), abs=1e-7)
    micro = (logits[at].argmax(-1) == y[at]).float().mean()
    assert module.val_acc.compute() != pytest.approx(micro.item())


MIXERS = {  # the built-in models' mixing layers, with their MAD conf files' keys
    "mad_attention": dict(head_dim=8),  # 4 heads of width 8 at D = 32
    "mad_mamba": dict(d_state=4, d_conv=4, expand=2, dt_rank=8),
    "mad_hyena": dict(
        order=2, short_kernel=3, filter_width=64, pos_bands=8, min_window=10, max_window=10_000
    ),  # fmt: skip
    "mad_gla": dict(heads=8, expand_k=1.0, decay="data"),
    "mad_deltanet": dict(heads=4, use_short_conv=True),
    "mad_s4d": dict(d_state=64, a_init="lin"),
}


@pytest.mark.parametrize("name", MIXERS)
def test_the_shape_around_each_mixer_has_its_step_form(name):
    cfg = composed(f"model={name}")
    torch.manual_seed(0)
    model = MAD(32, 32, cfg.model.mixer, **MIXERS[name]).double()
    kinds = [type(b.layer).__name__ for b in model.blocks]
    assert kinds[1::2] == ["SwiGLU", "SwiGLU"] and len(kinds) == 4
    assert all(isinstance(b.norm, torch.nn.RMSNorm) for b in model.blocks)
    x = torch.randn(2, 9, 32, dtype=torch.float64)
    steps, state = run_steps(model, x)
    torch.testing.assert_close(steps, model(x), rtol=1e-9, atol=1e-10)
    assert model.state_size(9) == state_numbers(state)


def test_swiglu_is_mad_labs_width_and_a_mixer_of_ones_own_comes_by_import_path():
    assert SwiGLU(128).w1.out_features == 352  # 16 * ceil(int(2 * 128 * 4 / 3) / 16)
    with pytest.raises(ValueError, match="head_dim=3 must divide dim=8"):
        MAD(8, 8, "longterm.models.mad.RotaryAttention", head_dim=3)
    with pytest.raises(ValueError, match="is not a key"):
        MAD(8, 8, "longterm.models.s4d.S4DMixer", d_state=4, a_init="lin", span=3)
    with pytest.raises(ValueError, match="no module named"):
        MAD(8, 8, "nolab.Mixer")


def test_mad_labs_decay_groups():
    cfg = composed("experiment=mad", "model=mad_mamba", "optim.weight_decay=0.1")
    model = MAD(16, 16, cfg.model.mixer, **MIXERS["mad_mamba"])
    names, params = zip(*model.named_parameters(), strict=True)
    groups = Recipe(name="adamw", weight_decay=0.1, decay_groups="mad").optimizer(
        params, 1e-3, names
    )
    by_id = {id(p): n for n, p in zip(names, params, strict=True)}
    spared = {by_id[id(p)] for p in groups.param_groups[1]["params"]}
    assert (
        groups.param_groups[0]["weight_decay"] == 0.1
        and groups.param_groups[1]["weight_decay"] == 0
    )
    assert {n for n in names if "bias" in n or "norm" in n or n.endswith(("A_log", ".D"))} == spared


@pytest.mark.parametrize(
    "overrides, message",
    [
        (["task.setting=vocab_size_33"], "task.setting=vocab_size_33 is invalid: in-context"),
        (["task=mqar"], "data=mad is invalid with task=mqar"),
        (["task.params.vocab_size=64"], "task.params.vocab_size=64 is invalid with data=mad"),
    ],
)
def test_a_setting_that_is_no_mad_run_is_refused_in_one_line(overrides, message):
    with pytest.raises(ConfigError, match=message):
        validate(composed("experiment=mad", *overrides))


def test_a_setting_gives_the_tasks_keys_and_the_datas_sizes():
    cfg = composed(
        "experiment=mad", "task=mad_noisy_in_context_recall", "task.setting=vocab_size_80"
    )
    assert cfg.task.vocab == cfg.task.n_outputs == cfg.task.params.vocab_size == 80
    assert (cfg.data.n_train, cfg.data.n_test, cfg.data.steps) == (12_800, 1_280, 127)
    assert cfg.data.batches_per_epoch == 100
    few = composed("experiment=mad", "task=mad_memorization")
    assert (few.data.n_train, few.data.batches_per_epoch, few.data.steps) == (256, 2, 32)


@pytest.mark.parametrize("task", mad.TASKS)
def test_the_contract_of_every_mad_task(task):
    pool = ["pool=per_step"] if task == "compression" else []  # the decoder reads every step
    out = src_py("contract.py", "experiment=mad", "model=mad_s4d", "model.dim=16",
                 f"task={runs.conf_task(task)}", *pool, timeout=240)  # fmt: skip
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.endswith("contract: every check passed\n"), out.stdout


def test_a_tiny_mad_multirun_trains_and_its_page(tmp_path):
    sweep = tmp_path / "mad"
    results = multirun(sweep, "experiment=mad", "model=mad_mamba", "task=mad_compression",
                       "trainer.max_epochs=2", "lr=1e-3", "optim.weight_decay=0.0,0.1",
                       "logger=csv", *TINY)  # fmt: skip
    assert [r["status"] for r in results] == ["max_epochs"] * 2
    first = results[0]
    assert (first["data"], first["setting"], first["accuracy"], first["pool"]) == (
        "mad",
        "baseline",
        "macro",
        "mad_decoder",
    )
    assert first["state_size"] is None  # the decoder reads the whole sequence: no step form
    assert first["updates"] == 2 * 3 and len(first["val_acc_history"]) == 2
    text = page.report(page.load([sweep]), [sweep])
    assert "| compression | baseline |" in text and "2 of 6" in text
    assert "not run: `python src/train.py -m experiment=mad model=mad_mamba" in text
    other = multirun(tmp_path / "other", "experiment=mad", "model=mad_mamba",
                     "task=mad_compression", "trainer.max_epochs=1", "lr=1e-3", "logger=none",
                     "data.n_train=32", "data.n_test=24", "data.batch_size=16")  # fmt: skip
    assert other[0]["n_train"] == 32
    with pytest.raises(page.MixedSettingsError, match="differ in .*n_train"):
        page.report(page.load([sweep, tmp_path / "other"]), [sweep])


def test_the_planner_lists_every_task_setting_and_the_grid():
    lines = runs.commands("mad_attention")
    assert len(lines) == sum(len(names) for names in mad.SETTING_NAMES.values()) == 66
    argv = shlex.split(lines[0])
    assert "task.setting=baseline" in argv and "lr=1e-4,5e-4,1e-3" in argv
    assert "optim.weight_decay=0.0,0.1" in argv and "experiment=mad" in argv
    for line in lines:  # every command composes to a valid config (one job of its grid)
        job = [a.split(",")[0] for a in shlex.split(line)[3:] if not a.startswith("hydra.")]
        if "task=mad_in_context_recall" in job:
            validate(composed(*job))
