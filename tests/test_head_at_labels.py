"""The head only where there are labels (training/module.py: `labelled`): a task that labels some
steps (mqar labels its query steps) computes the head and the loss at those steps only, in
training and in validation; the loss, every gradient and the validation metrics are those of the
head at every step (`loss` of the full logits), to float64 rounding, and a run's metrics are
unchanged."""

import pytest
import torch
from helpers.configs import composed
from helpers.presets import TINY, quick

from longterm.tasks import NO_TARGET
from longterm.training.batches import FixedLengthBatches, batch_rng
from longterm.training.module import MemoryTaskModule
from longterm.training.parts import build_model
from longterm.training.run import train

MQAR = ("task=mqar", "T0=32", "task.params.vocab=64", "task.params.kv_pairs=4")
SMALL = {
    "transformer": ("model.dim=16", "model.heads=2", "model.attn_span=16", "model.d_ff=16"),
    "lstm": ("model.dim=16",),
    # the head tied to the token embedding (zoology's lm_head); no dropout, so both passes agree
    "zoology_attention": ("model.dim=16", "model.attn_dropout=0", "model.embed_dropout=0"),
}


def float64_module(name: str) -> tuple[MemoryTaskModule, tuple[torch.Tensor, ...]]:
    """A per-step model on mqar in float64 and a training batch of 12 sequences."""
    model = f"arch={name}" if name.startswith("zoology") else f"model={name}"
    cfg = composed(*MQAR, model, *SMALL[name])
    torch.manual_seed(0)
    module = build_model(cfg).double()
    recipe = FixedLengthBatches(cfg.task.generator, 32, 12, "per_sequence", cfg.task.params)
    return module, recipe(batch_rng(0, 0, 0, 0))


def full_head_loss(module: MemoryTaskModule, batch: tuple[torch.Tensor, ...]) -> torch.Tensor:
    """The head at every step: the full (B, T, V) logits, the mean over labelled steps."""
    x, y, mask = batch
    return module.loss(module(x, mask), y)


def gradients(module: MemoryTaskModule, loss: torch.Tensor) -> dict[str, torch.Tensor]:
    """Every parameter's gradient of `loss` (the parameters the model does not use: none)."""
    module.zero_grad(set_to_none=True)
    loss.backward()
    return {n: p.grad for n, p in module.named_parameters() if p.grad is not None}


@pytest.mark.parametrize("name", list(SMALL))
def test_the_head_at_labelled_steps_gives_the_full_heads_loss_and_gradients(name):
    module, batch = float64_module(name)
    x, y, mask = batch
    labelled = y != NO_TARGET
    assert module.per_step and 0 < int(labelled.sum()) < y.numel() // 4  # 4 of 36 steps a row
    logits, labels = module.labelled(x, y, mask)
    assert logits.shape == (int(labelled.sum()), 64) and torch.equal(labels, y[labelled])

    new, old = module.step_loss(batch), full_head_loss(module, batch)
    torch.testing.assert_close(new, old, rtol=1e-13, atol=0)
    new_grads, old_grads = gradients(module, new), gradients(module, old)
    head = [
        n for n, p in module.named_parameters() if any(p is q for q in module.net.head.parameters())
    ]
    assert new_grads.keys() == old_grads.keys() and head and set(head) <= new_grads.keys()
    for n, g in new_grads.items():
        assert g.abs().sum() > 0, n  # every parameter is reached, the head's included
        torch.testing.assert_close(g, old_grads[n], rtol=1e-11, atol=1e-15, msg=n)


def test_validation_reads_the_labelled_steps_as_the_full_head_did():
    module, batch = float64_module("transformer")
    x, y, mask = batch
    with torch.no_grad():
        metrics = module.val_metrics(batch)
        acc = module.val_acc.compute()
        pred = module(x, mask)
    labelled = y != NO_TARGET
    torch.testing.assert_close(
        metrics["val/loss"], full_head_loss(module, batch), rtol=1e-13, atol=0
    )
    assert acc == (pred.argmax(-1) == y)[labelled].double().mean()


def old_step_loss(self, batch):
    """The head at every step (before the head at labels)."""
    return full_head_loss(self, batch)


def old_val_metrics(self, batch):
    x, y, mask = batch
    pred = self(x, mask)
    self.val_acc(pred.flatten(0, 1), y.flatten())
    return {"val/loss": self.loss(pred, y), "val/acc": self.val_acc}


def test_a_runs_metrics_are_unchanged(tmp_path, monkeypatch):
    """A tiny mqar run of the transformer (float32, 6 updates, validation each epoch) with the
    head at labelled steps and with the head at every step: the same validation accuracy after
    every epoch, and losses equal to float32 rounding."""
    args = quick(
        *MQAR,
        "model=transformer",
        *SMALL["transformer"],
        "trainer.max_epochs=2",
        "data.val_size=64",
        "logger=none",
        base=TINY,
    )
    new = train(composed(*args, f"run_dir={tmp_path / 'new'}"))
    monkeypatch.setattr(MemoryTaskModule, "step_loss", old_step_loss)
    monkeypatch.setattr(MemoryTaskModule, "val_metrics", old_val_metrics)
    old = train(composed(*args, f"run_dir={tmp_path / 'old'}"))
    assert (new["status"], new["updates"]) == (old["status"], old["updates"]) == ("max_epochs", 6)
    assert new["val_acc_history"] == old["val_acc_history"]
    weights = [
        torch.load(next((tmp_path / run).rglob("last.ckpt")), weights_only=False)["state_dict"]
        for run in ("new", "old")
    ]
    for k, v in weights[0].items():
        torch.testing.assert_close(v, weights[1][k], rtol=1e-4, atol=1e-6, msg=k)
