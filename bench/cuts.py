"""What each cut of docs/performance_runs.md removed, measured: each cut's old and new form timed
side by side in one process, on one thread, at T0 = 100 (the paper's model, B = 100), the pairs
interleaved and each the median of `--repeats` turns, in CPU time (bench/runs.py: clock); writes
the section `cuts` of docs/performance_runs.md.

    python bench/cuts.py

A run alone, ms per update:
- train/loss: a Trainer's loop (TensorBoard logger, log_every_n_steps 50, no callback) of the
  LightningModule with `self.log("train/loss")` in its training step (the old form) and of
  MemoryTaskModule (training/module.py: log_training_loss), both under Lightning's automatic
  optimization;
- the divergence check: StopOnDivergence's test of the parameters and the loss flag, one
  `isfinite` per parameter (the old form) and one for all;
- the update: the same loop with the run's callbacks (conf/callbacks), MemoryTaskModule under
  Lightning's automatic optimization (the old form: its closure and the callback hooks around
  each part of the update) and as the plain loop (training/module.py: PlainLoopModule);
- the divergence check per update: StopOnDivergence's `on_train_batch_end` on the CPU, the
  parameters found by walking the module and the loss folded into the flag at every update (the
  old form), and the parameters read once a fit and the loss tested with them;
- the batch's transfer: Lightning's `transfer_batch_to_device` (a walk over the batch, each
  tensor moved to the CPU it is on) and PlainLoopModule's (on the CPU, the batch as it is);
- the divergence test: `isfinite` of every number of the parameters and the loss, and of their
  smallest and largest (training/callbacks.py: all_finite);
- hook dispatch: the hooks Lightning calls around one update (the callbacks' and the module's
  on_train_batch_start and _end, the batch transfer's three), under PassThroughProfiler with
  nn.Module's `__setattr__` for the hook's name (the old form), and under NoProfiler with the
  plain attribute (training/module.py: PlainLoopModule);
- the step's signature: Lightning's read of `training_step`'s (inspect.getfullargspec, every
  update), without and with the function's own `__signature__`;
- an epoch's batches: through a DataLoader of no workers, and as they are made
  (training/data.py: EpochBatches), the batches' generation included;
- a batch's RandomState: a new one for each batch (batches.py: batch_rng; a new RandomState is
  seeded from fresh entropy first), and one reseeded (training/data.py: KeyedBatches), the
  batch's generation included.
A pack of 8 members (launcher=packed's exact CPU path), ms per update of the pack:
- kernels: each member's forward and backward one after another, and all members' encoders and
  poolings in one call (models/feedforward.py: forward_members);
- Adam: each member's torch.optim.Adam, and FlatAdam (sweeps/flat_adam.py);
- callbacks: each member's `on_train_batch_end` through Lightning's dispatch (every callback's
  hook, the empty ones too), and through `call_hooks` (the hooks a callback defines).
"""

import argparse
import shlex
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path

import torch
from pytorch_lightning import LightningModule, Trainer
from pytorch_lightning.loggers import TensorBoardLogger
from pytorch_lightning.profilers import PassThroughProfiler
from pytorch_lightning.trainer import call
from pytorch_lightning.utilities.signature_utils import is_param_in_hook_signature
from torch import nn
from torch.utils.data import DataLoader

from longterm.models.feedforward import forward_members
from longterm.store.records import git_commit
from longterm.sweeps.flat_adam import FlatAdam
from longterm.training.batches import batch_rng
from longterm.training.callbacks import StopOnDivergence, all_finite
from longterm.training.data import EpochBatches, EpochKeys, keyed_loader
from longterm.training.library_internals import NoProfiler, attach_unfitted, call_hooks
from longterm.training.module import MemoryTaskModule
from longterm.training.parts import build_model, instantiate_named, run_callbacks
from longterm.training.quiet import quiet_libraries
from runs import bare_trainer, batches, clock, config, write

T0, MEMBERS, UPDATES = 100, 8, 100


class Automatic(MemoryTaskModule):
    """The update as it was before the cut: Lightning's automatic optimization."""

    @property
    def automatic_optimization(self) -> bool:
        return True


class SelfLogged(Automatic):
    """The training loss logged as it was before the cut: `self.log` in the training step (both
    forms under automatic optimization, as when the cut was made)."""

    def training_step(self, batch, batch_idx):
        loss = self.step_loss(batch)
        self.log("train/loss", loss, batch_size=len(batch[1]))
        return loss

    def on_train_batch_end(self, outputs, batch, batch_idx) -> None:
        pass


def loop(module_class: type, where: Path, callbacks: bool = False) -> Callable[[], float]:
    def fit() -> float:
        cfg = config(T0, where / f"loop-{time.perf_counter_ns()}", UPDATES)
        model = build_model(cfg)
        module = module_class(model.net, lr=cfg.lr)
        ready = batches(cfg, 4)
        loader = DataLoader([ready[i % 4] for i in range(UPDATES)], batch_size=None)
        logger = TensorBoardLogger(where / f"tb-{time.perf_counter_ns()}", name="", version="")
        trainer = bare_trainer(logger=logger, log_every_n_steps=50)
        if callbacks:  # the run's, each with its hooks (Trainer.callbacks: a list of them)
            trainer.callbacks = run_callbacks(cfg)
        started = clock()
        trainer.fit(module, train_dataloaders=loader)
        return (clock() - started) / UPDATES

    return fit


def divergence_checks(where: Path) -> dict[str, Callable[[], float]]:
    module = build_model(config(T0, where / "check", 2))
    flag = torch.tensor(True)

    def per_parameter() -> float:  # the old StopOnDivergence.check
        started = clock()
        for _ in range(UPDATES):
            finite = [torch.isfinite(p).all() for p in module.parameters()]
            finite.append(flag)
            bool(torch.stack(finite).all())
        return (clock() - started) / UPDATES

    def together() -> float:  # the new one
        started = clock()
        for _ in range(UPDATES):
            numbers = [p.detach().reshape(-1) for p in module.parameters()]
            bool(torch.isfinite(torch.cat(numbers)).all() & flag)
        return (clock() - started) / UPDATES

    trainer = Trainer(logger=False, enable_progress_bar=False, max_epochs=1)
    attach_unfitted(trainer, module, module.configure_optimizers())
    loss = {"loss": torch.tensor(0.5)}

    def walked() -> float:  # the old StopOnDivergence.on_train_batch_end on the CPU
        old = StopOnDivergence()
        started = clock()
        for i in range(UPDATES):
            finite = torch.isfinite(loss["loss"].detach()).all()
            old.loss_finite = finite if old.loss_finite is None else old.loss_finite & finite
            _ = i + 1 >= trainer.num_training_batches
            if trainer.global_step % old.interval(trainer, module) == 0:
                numbers = [p.detach().reshape(-1) for p in module.parameters()]
                finite = torch.isfinite(torch.cat(numbers)).all() & old.loss_finite
                old.loss_finite = None
                bool(finite)
        return (clock() - started) / UPDATES

    def read_once() -> float:  # the new one
        new = StopOnDivergence()
        new.on_train_start(trainer, module)
        started = clock()
        for i in range(UPDATES):
            new.on_train_batch_end(trainer, module, loss, None, i)
        return (clock() - started) / UPDATES

    return {
        "divergence check, per parameter": per_parameter,
        "divergence check, one": together,
        "divergence check per update, walked": walked,
        "divergence check per update, read once": read_once,
    }


def transfers(where: Path) -> dict[str, Callable[[], float]]:
    """A batch's transfer to the CPU: Lightning's, and PlainLoopModule's."""
    cfg = config(T0, where / "transfer", 2)
    module = build_model(cfg)
    (batch,) = batches(cfg, 1)
    cpu = torch.device("cpu")

    def timed(transfer: Callable) -> Callable[[], float]:
        def run() -> float:
            started = clock()
            for _ in range(UPDATES):
                transfer(module, batch, cpu, 0)
            return (clock() - started) / UPDATES

        return run

    return {
        "batch transfer, Lightning's": timed(LightningModule.transfer_batch_to_device),
        "batch transfer, as it is": timed(MemoryTaskModule.transfer_batch_to_device),
    }


def divergence_tests(where: Path) -> dict[str, Callable[[], float]]:
    """The test of every number of the parameters and the loss: isfinite of each, and of the
    smallest and the largest."""
    module = build_model(config(T0, where / "test", 2))
    numbers = torch.cat([p.detach().reshape(-1) for p in module.parameters()])

    def timed(test: Callable[[torch.Tensor], torch.Tensor]) -> Callable[[], float]:
        def run() -> float:
            started = clock()
            for _ in range(UPDATES):
                bool(test(numbers))
            return (clock() - started) / UPDATES

        return run

    return {
        "divergence test, isfinite of each": timed(lambda x: torch.isfinite(x).all()),
        "divergence test, smallest and largest": timed(all_finite),
    }


class ModuleSetattr(MemoryTaskModule):
    """The hook's name set as it was before the cut: through nn.Module's `__setattr__`."""

    __setattr__ = nn.Module.__setattr__


def dispatches(where: Path) -> dict[str, Callable[[], float]]:
    """The hooks Lightning calls around one update, old and new (the module docstring)."""
    cfg = config(T0, where / "dispatch", 2)
    (batch,) = batches(cfg, 1)
    outputs = {"loss": torch.tensor(0.5)}

    def timed(module_class: type, profiler) -> Callable[[], float]:
        module = module_class(build_model(cfg).net, lr=cfg.lr)
        trainer = Trainer(
            callbacks=run_callbacks(cfg),
            logger=False,
            enable_progress_bar=False,
            max_epochs=1,
            profiler=profiler,
        )
        attach_unfitted(trainer, module, module.configure_optimizers())
        for callback in trainer.callbacks:
            callback.setup(trainer, module, "fit")
        cpu = torch.device("cpu")

        def run() -> float:
            started = clock()
            for _ in range(UPDATES):
                call._call_callback_hooks(trainer, "on_train_batch_start", batch, 0)
                call._call_lightning_module_hook(trainer, "on_train_batch_start", batch, 0)
                moved = call._call_lightning_module_hook(
                    trainer, "on_before_batch_transfer", batch, 0
                )
                moved = call._call_lightning_module_hook(
                    trainer, "transfer_batch_to_device", moved, cpu, 0
                )
                call._call_lightning_module_hook(trainer, "on_after_batch_transfer", moved, 0)
                call._call_callback_hooks(trainer, "on_train_batch_end", outputs, batch, 0)
                call._call_lightning_module_hook(trainer, "on_train_batch_end", outputs, batch, 0)
            return (clock() - started) / UPDATES

        return run

    return {
        "hook dispatch, PassThroughProfiler, nn.Module's setattr": timed(
            ModuleSetattr, PassThroughProfiler()
        ),
        "hook dispatch, NoProfiler, plain attribute": timed(MemoryTaskModule, NoProfiler()),
    }


def signatures(where: Path) -> dict[str, Callable[[], float]]:
    """Lightning's read of the training step's signature, as it makes at every update."""
    module = build_model(config(T0, where / "signature", 2))

    def read_by_inspect(batch, batch_idx):  # the same parameters, no `__signature__`
        return None

    def timed(step: Callable) -> Callable[[], float]:
        def run() -> float:
            started = clock()
            for _ in range(UPDATES):
                is_param_in_hook_signature(step, "batch_idx", min_args=2)
            return (clock() - started) / UPDATES

        return run

    return {
        "step's signature, inspected": timed(read_by_inspect.__get__(module)),
        "step's signature, its own": timed(module.training_step),
    }


def epochs(where: Path) -> dict[str, Callable[[], float]]:
    """An epoch's batches (generated) through a DataLoader and as they are made, and each from a
    new RandomState of its key (the old form) and from the one KeyedBatches reseeds."""
    cfg = config(T0, where / "epochs", 2)
    keyed = instantiate_named(cfg.data).keyed_batches()

    def timed(epoch: Callable[[], Iterable]) -> Callable[[], float]:
        def run() -> float:
            started = clock()
            for _ in epoch():
                pass
            return (clock() - started) / UPDATES

        return run

    loader = DataLoader(keyed, sampler=EpochKeys(UPDATES), batch_size=None)
    assert isinstance(keyed_loader(keyed, UPDATES, 0, "cpu"), EpochBatches)
    keys = [(0, i) for i in range(UPDATES)]
    return {
        "epoch's batches, DataLoader": timed(lambda: loader),
        "epoch's batches, as made": timed(lambda: EpochBatches(keyed, EpochKeys(UPDATES))),
        "a batch's RandomState, new": timed(
            lambda: (keyed.recipe(batch_rng(keyed.seed, keyed.stream, *key)) for key in keys)
        ),
        "a batch's RandomState, reseeded": timed(lambda: map(keyed.__getitem__, keys)),
    }


def pack_parts(where: Path) -> dict[str, Callable[[], float]]:
    """The pack's kernels, Adam steps and callback dispatch, old and new, per update."""
    cfgs = [config(T0, where / f"m{i}", UPDATES, 1e-3 * (1 + i), 1 + i % 2) for i in range(8)]
    members = [build_model(cfg) for cfg in cfgs]
    (batch,) = batches(cfgs[0], 1)
    x, y, mask = batch
    adams = [m.configure_optimizers() for m in members]
    flat = FlatAdam(adams)
    everyone = list(range(MEMBERS))

    def grads() -> None:
        loss = sum(m.step_loss(batch) for m in members)
        loss.backward()

    def one_after_another() -> float:
        started = clock()
        for _ in range(UPDATES // 10):
            sum(m.step_loss(batch) for m in members).backward()
        return (clock() - started) / (UPDATES // 10)

    def in_one_call() -> float:
        started = clock()
        for _ in range(UPDATES // 10):
            outs = forward_members([m.net for m in members], [x] * MEMBERS, [mask] * MEMBERS)
            sum(m.loss(m.prediction(o), y) for m, o in zip(members, outs, strict=True)).backward()
        return (clock() - started) / (UPDATES // 10)

    def adam_each() -> float:
        grads()
        started = clock()
        for _ in range(UPDATES):
            for optimizer in adams:
                optimizer.step()
        return (clock() - started) / UPDATES

    def adam_flat() -> float:
        grads()
        started = clock()
        for _ in range(UPDATES):
            flat.step(everyone)
        return (clock() - started) / UPDATES

    trainers = []
    for cfg, module, adam in zip(cfgs, members, adams, strict=True):
        trainer = Trainer(
            callbacks=run_callbacks(cfg), logger=False, enable_progress_bar=False, max_epochs=1
        )
        attach_unfitted(trainer, module, adam)
        trainers.append(trainer)
    loss = torch.tensor(0.5)

    def dispatch(hooks: Callable) -> Callable[[], float]:
        def run() -> float:
            started = clock()
            for _ in range(UPDATES):
                for trainer in trainers:
                    hooks(trainer, "on_train_batch_end", loss, batch, 0)
            return (clock() - started) / UPDATES

        return run

    return {
        "kernels, one after another": one_after_another,
        "kernels, one call": in_one_call,
        "Adam, each member's": adam_each,
        "Adam, FlatAdam": adam_flat,
        "callbacks, Lightning's dispatch": dispatch(call._call_callback_hooks),
        "callbacks, call_hooks": dispatch(call_hooks),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--out", type=Path, default=Path(__file__).parents[1] / "docs" / "performance_runs.md"
    )
    args = parser.parse_args()
    torch.set_num_threads(1)
    quiet_libraries()
    with tempfile.TemporaryDirectory(prefix="cuts-") as name:
        where = Path(name)
        cases = {
            "train/loss, self.log": loop(SelfLogged, where),
            "train/loss, log_training_loss": loop(Automatic, where),
            **divergence_checks(where),
            "update, automatic optimization": loop(Automatic, where, callbacks=True),
            "update, plain loop": loop(MemoryTaskModule, where, callbacks=True),
            **transfers(where),
            **divergence_tests(where),
            **dispatches(where),
            **signatures(where),
            **epochs(where),
            **pack_parts(where),
        }
        for case in cases.values():  # compiled, imported, warm
            case()
        times: dict[str, list[float]] = {name: [] for name in cases}
        for _ in range(args.repeats):
            for name, case in cases.items():
                times[name].append(case() * 1e3)
    ms = {name: statistics.median(t) for name, t in times.items()}
    names = list(ms)
    lines = [
        "## cuts",
        "",
        f"- command: `{shlex.join(['python', 'bench/cuts.py', *sys.argv[1:]])}`",
        f"- commit: {git_commit()}; T0 = {T0}, B = 100, torch threads: 1; medians of "
        f"{args.repeats} interleaved turns, CPU ms (bench/runs.py: clock)",
        "",
        "Each cut's old and new form side by side (bench/cuts.py says how each is timed); a "
        f"run's per update, a pack's (of {MEMBERS} members) per update of the pack.",
        "",
        "| cut | before ms | after ms | removed ms |",
        "|---|---|---|---|",
    ]
    for old, new in zip(names[::2], names[1::2], strict=True):
        what = old.split(",")[0]
        lines.append(f"| {what} | {ms[old]:.3f} | {ms[new]:.3f} | {ms[old] - ms[new]:.3f} |")
    text = "\n".join(lines) + "\n"
    write(args.out, "cuts", text)
    print(text)


if __name__ == "__main__":
    main()
