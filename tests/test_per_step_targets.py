"""Per-step targets: the loss and the accuracy count labelled steps only, every model pool=per_step
reads is causal, and per-step runs train and evaluate through the real entry point."""

import pytest
import torch
from helpers.configs import conf_names
from helpers.presets import TINY, quick
from helpers.results import sweep_results
from helpers.runs import train_py
from omegaconf import OmegaConf
from torch.nn import functional as F

from longterm.analysis.evaluate import load_module, step_predictions
from longterm.analysis.evaluate import main as evaluate_main
from longterm.analysis.events import scalars
from longterm.choices import targets_error
from longterm.config.builtins import conf_file
from longterm.models import sequence_model
from longterm.models.readouts import PerStep
from longterm.tasks import NO_TARGET
from longterm.training.module import MemoryTaskModule

B, T, C = 3, 7, 5


def hand_made_batch() -> tuple[torch.Tensor, torch.Tensor]:
    """Logits (B, T, C) and targets (B, T): 5 labelled steps, the rest NO_TARGET."""
    pred = torch.randn(B, T, C, generator=torch.Generator().manual_seed(0))
    y = torch.full((B, T), NO_TARGET)
    y[0, 2], y[0, 6], y[1, 0], y[2, 3], y[2, 4] = 1, 4, 0, 2, 2
    return pred, y


def test_loss_and_accuracy_ignore_unlabelled_steps():
    module = MemoryTaskModule(torch.nn.Identity(), loss="cross_entropy", n_outputs=C, per_step=True)
    pred, y = hand_made_batch()
    labelled = y != NO_TARGET
    expected = F.cross_entropy(pred[labelled], y[labelled])
    torch.testing.assert_close(module.loss(pred, y), expected)
    right = (pred.argmax(-1) == y)[labelled].float().mean()

    changed = pred.clone()
    changed[~labelled] = torch.randn(int((~labelled).sum()), C) * 10  # other predictions there
    for p in (pred, changed):
        torch.testing.assert_close(module.loss(p, y), expected)
        module.val_acc.reset()
        module.val_acc.update(p.flatten(0, 1), y.flatten())
        torch.testing.assert_close(module.val_acc.compute(), right)
    changed[0, 2] = -changed[0, 2]  # a labelled step does change the loss
    assert not torch.isclose(module.loss(changed, y), expected)


def test_per_step_targets_need_cross_entropy():
    with pytest.raises(ValueError, match="per-step targets need loss=cross_entropy"):
        MemoryTaskModule(torch.nn.Identity(), loss="mse", per_step=True)


PER_STEP = "longterm.models.readouts.PerStep"


def test_a_model_that_sees_later_steps_is_refused_per_step():
    """Every model here is causal; the rule stands for one that is not."""
    args = ("algorithmic", "step", "per_step", PER_STEP, True)
    error = targets_error(*args, "bilstm", False, "cross_entropy")
    assert error.startswith("pool=per_step is invalid with model=bilstm: its state")
    assert targets_error(*args, "lstm", True, "cross_entropy") is None


SMALL = {"heads": 2, "layers": 2, "attn_span": 8}
OWN = {
    "transformer": {**SMALL, "d_ff": 8, "norm": "post"},
    "all_attention": {**SMALL, "n_persistent": 4, "norm": "post"},
    "feedback": {**SMALL, "d_ff": 8, "share_kv": True},
}


def model_keys(name: str) -> dict:
    """The model section a run of `model=<name>` gives the constructor (its conf file's keys, the
    encoder's among them), less the width and the implementation the test sets, with OWN's
    smaller settings."""
    keys = OmegaConf.to_container(conf_file("model", name))
    keys.pop("defaults", None)
    return {k: v for k, v in keys.items() if k not in ("dim", "hidden", "impl")} | OWN.get(name, {})


@pytest.mark.parametrize("name", conf_names("model"))
def test_every_model_per_step_reads_is_causal(name):
    """The output at step t does not change when steps after t change, and does when step t
    does (float64, so equal means equal)."""
    torch.manual_seed(0)
    keys = model_keys(name)
    net = sequence_model(keys.pop("encoder"), 3, 4, PerStep(8), dim=8, hidden=6, **keys)
    net = net.double().eval()  # eval: dropout (zoology's models) would differ between forwards
    x = torch.randn(2, 12, 3, dtype=torch.float64)
    later = x.clone()
    later[:, 6:] = torch.randn(2, 6, 3, dtype=torch.float64)
    with torch.no_grad():
        out, out_later = net(x), net(later)
    assert out.shape == (2, 12, 4)
    torch.testing.assert_close(out[:, :6], out_later[:, :6], rtol=1e-12, atol=1e-12)
    assert not torch.allclose(out[:, 6], out_later[:, 6])


# The step loop's small ops run fastest on one thread, and most so on a busy machine.
ONE_THREAD = {"OMP_NUM_THREADS": "1"}


def test_per_step_runs_train_log_and_evaluate(tmp_path, capsys):
    """The feedback model and the transformer on the algorithmic task, a few updates each through
    src/train.py: result.json and TensorBoard as for sequence targets; then the accuracy by
    position and by statement from the last checkpoint adds up to the final val/acc. (The
    fixed-knowledge task trains in tests/test_claims.py.)"""
    args = ["model=feedback,transformer", "task=algorithmic", "pool=per_step"]
    tiny = quick("data.val_size=32", base=TINY)
    out = train_py("-m", *args, *tiny, f"hydra.sweep.dir={tmp_path}", env=ONE_THREAD)
    assert out.returncode == 0, out.stderr
    results = sweep_results(tmp_path)
    assert sorted((r["model"], r["task"]) for r in results) == [
        ("feedback", "algorithmic"),
        ("transformer", "algorithmic"),
    ]
    for r in results:
        assert (r["pool"], r["status"], r["updates"]) == ("per_step", "max_epochs", 3)
        assert 0.0 <= r["best_acc"] <= 1.0 and r["final_acc"] == r["val_acc_history"][-1]
        tags = set(scalars(r["run_dir"]))
        assert {"train/loss", "val/acc", "val/loss", "verdict/best_acc"} <= tags
    run = next(r for r in results if r["model"] == "transformer")
    evaluate_main([run["run_dir"]])
    printed = capsys.readouterr().out
    assert "by position:" in printed and "by statement:" in printed and "by last_write:" in printed

    steps = step_predictions(*load_module(run["run_dir"]))
    assert steps.statement.notna().all() and set(steps.last_write) <= {
        "assign",
        "step",
        "if held",
        "if not held",
    }
    assert steps.correct.mean() == pytest.approx(run["final_acc"], abs=1e-6)
