"""The training recipe (conf/train.yaml: optim; training/recipes.py): each key checked in one line,
the optimizer, the schedule and the clipping as torch's own written out by hand, under the plain
loop and Lightning's automatic optimization alike, a run resumed equal to one not interrupted,
the keys recorded, old records read as the paper's recipe, and a pack's member equal to its run
alone."""

import copy
import json
import math

import pytest
import pytorch_lightning as L
import torch
from helpers.configs import composed
from helpers.paths import CONF
from helpers.presets import quick
from helpers.results import metrics, read_json
from helpers.runs import train_py
from test_packed import assert_same_runs, job_dirs

from longterm.analysis.events import scalars
from longterm.config.command_line import check
from longterm.config.run_settings import RECIPE, other_settings, run_params
from longterm.config.validate import ConfigError
from longterm.store.continue_run import ContinueError, continue_run
from longterm.store.upgrade import ADDED_SETTINGS
from longterm.training.parts import build_model
from longterm.training.recipes import Recipe
from longterm.training.run import train

ZOOLOGY = ("optim.name=adamw", "optim.weight_decay=0.1", "optim.schedule=cosine")
# five updates an epoch, three epochs, on the reference model (nothing compiled)
SHORT = quick(
    "data.batches_per_epoch=5",
    "data.val_size=50",
    "trainer.max_epochs=3",
    "model.impl=reference",
    "trainer.log_every_n_steps=1",
)

BAD = [
    (["optim.name=sgd"], "optim.name='sgd' is invalid: Input should be 'adam' or 'adamw'"),
    (["optim.schedule=linear"], "optim.schedule='linear' is invalid: Input should be 'none', "),
    (["optim.weight_decay=-1"], "optim.weight_decay=-1 is invalid: Input should be greater"),
    (["optim.clip=0"], "optim.clip=0 is invalid: Input should be greater than 0"),
    (["optim.warmup=-2"], "optim.warmup=-2 is invalid"),
    (["optim.weight_decay=0.1"], "optim: weight_decay=0.1 needs name=adamw"),
    (["optim.warmup=10"], "optim: warmup=10 needs schedule=warmup_cosine"),
    (
        ["optim.schedule=warmup_cosine", "optim.warmup=5000", "trainer.max_epochs=2"],
        "optim.warmup=5000 is invalid: the run has 2000 updates",
    ),
    (["+optim.momentum=0.9"], "optim.momentum is not a key of optim: remove it"),
    (["callbacks.stop_when_solved.strict=maybe"], "callbacks.stop_when_solved.strict='maybe'"),
]


@pytest.mark.parametrize("args, expected", BAD, ids=[" ".join(a) for a, _ in BAD])
def test_a_bad_recipe_fails_in_one_line(args, expected):
    with pytest.raises(ConfigError) as err:
        check(args, CONF)
    message = str(err.value)
    assert message.startswith(expected) and "\n" not in message, message


def test_zoologys_command_line_checks():
    """The command line of docs/fidelity.md passes the check."""
    check(["-m", *ZOOLOGY, "trainer.max_epochs=64", "callbacks.stop_when_solved.threshold=0.99",
           "callbacks.stop_when_solved.strict=true", "lr=1e-4,1e-2"], CONF)  # fmt: skip


def lrs(schedule, updates: int) -> list[float]:
    """The learning rate of each of `updates` steps under `schedule` (stepped after each)."""
    seen = []
    for _ in range(updates):
        seen.append(schedule.optimizer.param_groups[0]["lr"])
        schedule.optimizer.step()
        schedule.step()
    return seen


def test_the_schedules_are_torchs():
    """cosine: CosineAnnealingLR over the epochs, to 0 (zoology's); warmup_cosine: LinearLR over
    the warmup, then CosineAnnealingLR over the other updates (SequentialLR), to float rounding."""
    p = torch.nn.Parameter(torch.zeros(3))
    recipe = Recipe(schedule="cosine", max_epochs=7)
    ours = recipe.scheduler(recipe.optimizer([p], 1e-2))
    theirs = torch.optim.lr_scheduler.CosineAnnealingLR(torch.optim.AdamW([p], lr=1e-2), T_max=7)
    seen = lrs(ours, 7)
    assert seen == lrs(theirs, 7) and seen[0] == 1e-2 and not recipe.per_update
    W, N = 4, 30
    recipe = Recipe(schedule="warmup_cosine", warmup=W, max_epochs=3, updates_per_epoch=10)
    ours = lrs(recipe.scheduler(recipe.optimizer([p], 1e-2)), N)
    optimizer = torch.optim.Adam([p], lr=1e-2)
    lr = torch.optim.lr_scheduler
    warm = lr.LinearLR(optimizer, start_factor=1 / W, end_factor=1.0, total_iters=W - 1)
    cosine = lr.CosineAnnealingLR(optimizer, T_max=N - W)
    theirs = lrs(lr.SequentialLR(optimizer, [warm, cosine], milestones=[W]), N)
    assert ours == pytest.approx(theirs, rel=1e-12, abs=1e-15)
    assert ours[W - 1] == 1e-2 and ours[:2] == [1e-2 / W, 2e-2 / W] and recipe.per_update


def test_clipping_bounds_the_total_norm():
    p = torch.nn.Parameter(torch.zeros(4))
    p.grad = torch.tensor([3.0, 4.0, 0.0, 0.0])
    Recipe(clip=None).clip_gradients([p])
    assert p.grad.norm() == 5
    Recipe(clip=0.5).clip_gradients([p])
    assert p.grad.norm() == pytest.approx(0.5)


def by_hand(module, batches, recipe: Recipe, lr: float) -> None:
    """torch's AdamW, clip_grad_norm_ and CosineAnnealingLR per epoch, written out."""
    optimizer = torch.optim.AdamW(
        module.parameters(), lr=lr, betas=recipe.betas, eps=recipe.eps, weight_decay=0.1
    )
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=recipe.max_epochs)
    for _ in range(recipe.max_epochs):
        for batch in batches:
            optimizer.zero_grad()
            module.step_loss(batch).backward()
            torch.nn.utils.clip_grad_norm_(list(module.parameters()), recipe.clip)
            optimizer.step()
        schedule.step()


@pytest.mark.parametrize("automatic", [False, True], ids=["plain loop", "automatic"])
def test_an_update_is_torchs_adamw_clipped_on_a_cosine(automatic):
    """Two epochs of three updates through Lightning (the plain loop, or automatic optimization
    under a Trainer that clips too, by a norm that changes nothing) equal the loop by hand."""
    cfg = composed(*SHORT, *ZOOLOGY, "optim.clip=0.05", "trainer.max_epochs=2", "T0=20")
    torch.manual_seed(0)
    module = build_model(cfg)
    hand = copy.deepcopy(module)
    width = 22
    batches = [
        (torch.rand(4, width, 2), torch.rand(4), torch.ones(4, width, dtype=torch.bool))
        for _ in range(3)
    ]
    trainer = L.Trainer(
        max_epochs=2,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        limit_val_batches=0,
        gradient_clip_val=1e9 if automatic else None,
    )
    loader = torch.utils.data.DataLoader(batches, batch_size=None)
    trainer.fit(module, train_dataloaders=loader)
    assert module.automatic_optimization == automatic
    by_hand(hand, batches, module.recipe, cfg.lr)
    for p, q in zip(module.parameters(), hand.parameters(), strict=True):
        assert torch.equal(p, q)
    assert trainer.optimizers[0].param_groups[0]["lr"] == 0.0  # cos(pi): the end of the decay


def test_clipping_takes_effect_in_a_run(tmp_path):
    args = [*SHORT, "trainer.max_epochs=1"]
    train(composed(*args, f"run_dir={tmp_path / 'free'}"))
    train(composed(*args, "optim.clip=1e-4", f"run_dir={tmp_path / 'clipped'}"))
    a, b = (torch.load(p / "checkpoints/last.ckpt")["state_dict"] for p in (tmp_path / "free",
            tmp_path / "clipped"))  # fmt: skip
    assert any(not torch.equal(a[k], b[k]) for k in a)


class StopAfter(L.Callback):
    """Ends the process after `epochs` epochs, as a kill after the checkpoint would."""

    def __init__(self, epochs: int):
        self.epochs = epochs

    def on_train_epoch_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if trainer.current_epoch + 1 == self.epochs:
            trainer.should_stop = True


RESUMED = [
    (*ZOOLOGY, "optim.clip=0.5"),  # per epoch, the plain loop
    ("optim.schedule=warmup_cosine", "optim.warmup=4", "+trainer.gradient_clip_val=1e9"),
]


@pytest.mark.parametrize("recipe", RESUMED, ids=["cosine", "warmup_cosine automatic"])
def test_a_resumed_run_is_the_run_not_interrupted(tmp_path, recipe):
    """One epoch, the process ends, the same command resumes from last.ckpt: the same learning
    rates (train/lr), accuracies and weights as one process; result.json records the recipe."""
    whole, parts = tmp_path / "whole", tmp_path / "parts"
    done = train(composed(*SHORT, *recipe, f"run_dir={whole}"))
    stop = (
        "+callbacks.stop_after._target_=test_recipes.StopAfter",
        "+callbacks.stop_after.epochs=1",
    )
    train(composed(*SHORT, *recipe, *stop, f"run_dir={parts}"))
    (parts / "result.json").unlink()  # as a run killed after its first epoch's checkpoint
    resumed = train(composed(*SHORT, *recipe, f"run_dir={parts}"))
    assert resumed["resumed_at_update"] == 5
    assert metrics(parts) == metrics(whole) and resumed["epochs"] == done["epochs"] == 3
    curves = [scalars(d) for d in (whole, parts)]
    for tag in ("train/lr", "val/acc"):
        assert curves[0][tag] == curves[1][tag], tag
    cosine = "cosine" in recipe[2]
    expected = [1e-3 * (1 + math.cos(math.pi * e / 3)) / 2 for e in range(3)] if cosine else None
    if expected:
        assert [v for _, v in curves[0]["train/lr"]] == pytest.approx(expected, rel=1e-6)
    ckpts = [torch.load(d / "checkpoints/last.ckpt", weights_only=False) for d in (whole, parts)]
    assert ckpts[0]["lr_schedulers"] == ckpts[1]["lr_schedulers"]
    for k, v in ckpts[0]["state_dict"].items():
        assert torch.equal(v, ckpts[1]["state_dict"][k]), k
    record = read_json(whole / "result.json")
    keys = {k: record[k] for k in RECIPE}
    if cosine:
        assert keys == {"optim": "adamw", "weight_decay": 0.1, "schedule": "cosine",
                        "warmup": 0, "clip": 0.5, "min_lr": 0.0, "decay_groups": "all"}  # fmt: skip
    else:
        assert keys["schedule"] == "warmup_cosine" and keys["warmup"] == 4
    with pytest.raises(ContinueError, match="optim.schedule=.*is another run"):
        continue_run(whole, tmp_path / "longer")


def test_an_old_record_reads_as_the_papers_recipe(tmp_path):
    """A result.json from before the recipe's keys: the paper's recipe resumes in its directory,
    another recipe is refused in one line naming the recipe it ran."""
    cfg = composed(*SHORT)
    old = {k: v for k, v in run_params(cfg).items() if k not in ADDED_SETTINGS}
    (tmp_path / "result.json").write_text(json.dumps({**old, "status": "max_epochs"}))
    assert other_settings(cfg, tmp_path) is None
    line = other_settings(composed(*SHORT, *ZOOLOGY), tmp_path)
    assert "optim='adam'" in line and "schedule='none'" in line and "\n" not in line
    assert run_params(cfg) | ADDED_SETTINGS == run_params(cfg)  # the defaults are those runs'


def test_a_strict_threshold_stops_only_above_it():
    from longterm.training.callbacks import StopWhenSolved

    class Trainer:
        sanity_checking, logger, current_epoch, global_step, should_stop = False, None, 0, 0, False

    for strict, stops in ((False, True), (True, False)):
        trainer = Trainer()
        trainer.callback_metrics = {"val/acc": torch.tensor(0.99, dtype=torch.float64)}
        StopWhenSolved("val/acc", 0.99, strict=strict).on_validation_end(trainer, None)
        assert trainer.should_stop == stops


def test_a_packed_member_with_a_recipe_is_its_run_alone(tmp_path):
    """Cosine and clipping in two packs of two learning rates, one of Adam (the flat path,
    sweeps/flat_adam.py, at each member's scheduled rate) and one of AdamW (each member's own
    optimizer): every member equals its run alone, its schedule's state too."""
    fused = [a for a in SHORT if a != "model.impl=reference"]  # packs are exact on its kernels
    args = (*fused, "optim.name=adam,adamw", "optim.schedule=cosine", "optim.clip=0.5")
    args += ("lr=1e-3,1e-2",)
    alone, packed = tmp_path / "alone", tmp_path / "packed"
    out = train_py("-m", *args, f"hydra.sweep.dir={alone}")
    assert out.returncode == 0, out.stderr
    out = train_py("-m", "launcher=packed", "launcher.jobs=1", *args, f"hydra.sweep.dir={packed}")
    assert out.returncode == 0, out.stderr
    assert "4 jobs: " in out.stdout, out.stdout
    assert_same_runs(alone, packed)
    for a, p in zip(job_dirs(alone), job_dirs(packed), strict=True):
        ca, cp = (torch.load(x / "checkpoints/last.ckpt", weights_only=False) for x in (a, p))
        assert ca["lr_schedulers"] == cp["lr_schedulers"] and ca["lr_schedulers"]


def test_the_learning_rate_race_refuses_a_schedule(tmp_path, capsys):
    """lr_race caps its rivals' trainer.max_epochs, which a schedule follows: one line."""
    from longterm.experiments import lr_race

    argv = ["--sweep-dir", str(tmp_path), "--T0", "50", "--", "optim.schedule=cosine"]
    with pytest.raises(SystemExit):
        lr_race.main(argv)
    line = capsys.readouterr().err.splitlines()[-1]
    assert "error: optim.schedule=cosine follows each run's trainer.max_epochs" in line
