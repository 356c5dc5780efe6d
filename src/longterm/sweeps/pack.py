"""Packed runs (launcher=packed): runs of one cell that differ only in learning rate, seed and
epoch limit train in one process as the members of a pack, each still a run of its own.

What the members share: one Lightning Trainer and its loop (one training step and one validation
step for all of them), the process, and the data: members with the same seed read one stream of
training batches, generated once (batches are keyed by seed, epoch and index, batches.py), and
one validation set.

What each member keeps: its model, built after seeding with its own seed as a run alone is; its
own Adam; its callbacks (conf/callbacks: the stopping rules, the checkpoints), driven by the pack
through a Trainer of the member's own that is never fitted and whose loop is the pack's; its
TensorBoard logger and HPARAMS session; its run directory with result.json, train.log and
checkpoints in the format of a run alone. So the collector, `continue_run`, a rerun under any
launcher and the archive treat a member as any run.

Exact on the CPU: a member's forward and backward passes are those of the run alone (the same
modules and kernels, one member after another), the pack's loss is the sum of the members'
losses (whose gradient reaches each member multiplied by exactly 1), and each member's Adam steps
its own parameters. A member's parameters, val_acc_history, epochs and status are bit for bit
those of the run alone (tests/test_packed.py).

On an accelerator (`launcher.vectorise=auto`, fixed-length data) the members are stacked instead
(longterm.sweeps.stacked): one update of every member is a fixed number of ops, and not equal to the bit.

A member stops on its own while the others go on:
- solved, or at its own `trainer.max_epochs` (lr_race's cap): at the end of the epoch, as alone;
- diverged in mid-epoch: it trains no more and, as alone, is validated at once (its own pass over
  the same validation batches), its epoch-end callbacks run and it ends. Its checkpoints then
  hold the pack's loop counters at that batch; the run is final and never resumed.
Resumption: each member resumes from its own last.ckpt; members whose checkpoints stand at other
updates (a pack killed while it wrote them) train as packs of their own.

Shapes: a training item is a tuple of batches, one per seed (x (B, T, F), y (B,), mask (B, T)).
"""

import logging
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from functools import reduce
from pathlib import Path
from typing import Any

import pytorch_lightning as L
import torch
from omegaconf import DictConfig, OmegaConf
from pytorch_lightning.loggers import Logger
from pytorch_lightning.trainer import call
from pytorch_lightning.trainer.states import TrainerFn
from torch import Tensor, nn
from torch.utils.data import DataLoader, Dataset

from longterm.choices import AUTO
from longterm.config.validate import ConfigError, validate
from longterm.models.ops import counted_ops
from longterm.store.run_dir import checkpoint_step, claim
from longterm.sweeps.stacked import StackedMembers, own_tensors
from longterm.training.callbacks import DeferSignal
from longterm.training.data import KeyedBatches, TaskDataModule, keyed_loader
from longterm.training.faults import RunError, explain
from longterm.training.module import MemoryTaskModule
from longterm.training.run import (
    already_finished,
    build_model,
    check_memory,
    close_record,
    instantiate_named,
    last_checkpoint,
    open_record,
    outcome,
    quiet_library_logs,
    record_failure,
    resumable,
    run_callbacks,
    run_logger,
    run_trainer,
    saved_checkpoint,
    take_budget,
)

log = logging.getLogger(__name__)

# The paper's model, whose runs can be packed (model.name, pool.name); others run alone.
PACKABLE_MODELS = ("feedforward",)
PACKABLE_POOLS = ("attention", "mean")
RANK_ZERO = "pytorch_lightning.utilities.rank_zero"  # Lightning's info lines


def packable(cfg: DictConfig) -> bool:
    """Whether runs of `cfg` can be members of a pack: the paper's network, either pooling."""
    return cfg.model.name in PACKABLE_MODELS and cfg.pool.name in PACKABLE_POOLS


class StreamBatches(Dataset):
    """Item (epoch, index): the batch of that key from each seed's stream."""

    def __init__(self, streams: list[KeyedBatches]):
        self.streams = streams

    def __getitem__(self, key: tuple[int, int]) -> tuple:
        return tuple(stream[key] for stream in self.streams)


class PackData(L.LightningDataModule):
    """The data of a pack: each seed's training batches and validation set (data.py), zipped."""

    def __init__(self, streams: list[TaskDataModule]):
        super().__init__()
        self.streams = streams

    def setup(self, stage: str | None = None) -> None:
        for stream in self.streams:
            stream.setup(stage)

    def device_type(self) -> str:
        return "cpu" if self.trainer is None else self.trainer.strategy.root_device.type

    def train_dataloader(self) -> DataLoader:
        first = self.streams[0]
        batches = StreamBatches([s.keyed_batches() for s in self.streams])
        return keyed_loader(batches, first.batches_per_epoch, first.num_workers, self.device_type())

    def val_dataloader(self) -> DataLoader:
        batches = list(zip(*(s.validation for s in self.streams), strict=True))
        return DataLoader(batches, batch_size=None, pin_memory=self.device_type() == "cuda")


class PackModule(L.LightningModule):
    """The members' modules side by side; `active` lists the members that train now, and
    member i reads the batches of seed stream `streams[i]`. Logs member i's validation metrics
    as `<i>/<name>` (PackLogger hands them to the member's own logger); its training loss is
    logged by MemberHooks (one `self.log` per member and step would cost more than the step).

    `vectorise`: `auto` stacks the members (longterm.sweeps.stacked) on an accelerator, `True` on any
    device, `False` never; only where every seed's batches have one shape (`same_shapes`: fixed
    lengths). Elsewhere the members run one after another, each as its run alone (exact)."""

    def __init__(
        self,
        members: list[MemoryTaskModule],
        streams: list[int],
        vectorise: bool | str = "auto",
        same_shapes: bool = False,
    ):
        super().__init__()
        self.members = nn.ModuleList(members)
        self.streams = streams
        self.vectorise, self.same_shapes = vectorise, same_shapes
        self.active: list[int] = list(range(len(members)))
        self.losses: Mapping[int, Tensor] = {}  # each training member's loss at the last step
        self.optimizer: PackOptimizer | None = None
        self.stacked: StackedMembers | None = None

    def on_train_start(self) -> None:
        # after Lightning has restored the members' weights and Adam states (a resumed pack)
        wanted = self.vectorise is True or (self.vectorise == AUTO and self.device.type != "cpu")
        if wanted and self.same_shapes:
            assert self.optimizer is not None
            self.stacked = StackedMembers(list(self.members), self.optimizer.optimizers)
            for member in self.members:
                member.stacked_member = True
            self.stream_index = torch.tensor(self.streams, device=self.device)
            self.activity_changed()

    def activity_changed(self) -> None:
        """`active` has changed: the stacked path's masks follow (one copy, not one per update)."""
        if self.stacked is not None:
            host = torch.zeros(len(self.members), dtype=torch.bool)
            host[self.active] = True
            self.active_host, self.active_mask = host, host.to(self.device)

    def training_step(self, batches: tuple, batch_idx: int) -> Tensor | None:
        if self.stacked is not None:
            x, y, mask = (torch.stack(t)[self.stream_index] for t in zip(*batches, strict=True))
            losses = self.stacked.losses(x, y, mask)
            self.losses = Rows(losses, list(self.active))
            # d(sum)/d(loss_i) = 1; a member that stopped is left out (its loss may be NaN)
            return torch.where(self.active_mask, losses, 0).sum() if self.active else None
        self.losses = {}
        for i in self.active:
            batch = batches[self.streams[i]]
            self.losses[i] = self.members[i].step_loss(batch)
        # d(sum)/d(loss_i) = 1 exactly: each member's gradients are those of its run alone
        return reduce(torch.add, self.losses.values()) if self.losses else None

    def validation_step(self, batches: tuple, batch_idx: int) -> None:
        for i in self.active:
            batch = batches[self.streams[i]]
            for name, value in self.members[i].val_metrics(batch).items():
                self.log(f"{i}/{name}", value, batch_size=len(batch[1]))

    def configure_optimizers(self) -> torch.optim.Optimizer:
        assert self.optimizer is not None
        return self.optimizer


class Rows(Mapping):
    """Member i -> row i of `values` (M,), for the members listed; read only when asked, so the
    stacked update issues no op per member."""

    def __init__(self, values: Tensor, members: list[int]):
        self.values, self.members = values, members

    def __getitem__(self, i: int) -> Tensor:
        if i not in self.members:
            raise KeyError(i)
        return self.values[i]

    def __iter__(self) -> Iterator[int]:
        return iter(self.members)

    def __len__(self) -> int:
        return len(self.members)


class PackOptimizer(torch.optim.Optimizer):
    """The one optimizer Lightning steps: each member's own (its run's Adam), for the members
    that trained in this step. Its state is the members' states, in member order."""

    def __init__(self, optimizers: list[torch.optim.Optimizer], module: PackModule):
        self.optimizers, self.module = optimizers, module
        params = [p for o in optimizers for group in o.param_groups for p in group["params"]]
        super().__init__(params, {})

    def step(self, closure: Any = None) -> Any:
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        stacked = self.module.stacked
        if stacked is not None:
            stacked.step(self.module.active_mask, self.module.active_host)
            return loss
        for i in self.module.losses:
            self.optimizers[i].step()
        return loss

    def zero_grad(self, set_to_none: bool = True) -> None:
        if self.module.stacked is not None:
            self.module.stacked.zero_grad()
        for optimizer in self.optimizers:
            optimizer.zero_grad(set_to_none)

    def state_dict(self) -> dict[str, Any]:
        return {"members": [o.state_dict() for o in self.optimizers]}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        for optimizer, state in zip(self.optimizers, state_dict["members"], strict=True):
            optimizer.load_state_dict(state)


class OwnTensors(L.Callback):
    """A member's checkpoint written with tensors of their own (longterm.sweeps.stacked.own_tensors)."""

    def on_save_checkpoint(self, trainer: L.Trainer, pl_module: Any, checkpoint: dict) -> None:
        if getattr(pl_module, "stacked_member", False):
            own_tensors(checkpoint)


class MemberLog(logging.LoggerAdapter):
    """Log lines of one member: its directory's name first on the console; the record carries
    `member` (its run directory), by which a launcher writes it to the member's train.log."""

    def process(self, msg: Any, kwargs: Any) -> tuple[Any, Any]:
        return f"{Path(self.extra['member']).name}: {msg}", {**kwargs, "extra": self.extra}


TRAINING, ENDING, ENDED = "training", "ending", "ended"


@dataclass(eq=False)
class Member:
    """One run of a pack and its own parts."""

    cfg: DictConfig
    run_dir: Path
    module: MemoryTaskModule
    optimizer: torch.optim.Optimizer
    callbacks: list[L.Callback]
    logger: Any  # the run's TensorBoardLogger, or False
    trainer: L.Trainer  # never fitted: its callbacks, logger and checkpoints
    ckpt: Path | None
    resumed_at: int | None
    say: MemberLog
    index: int = 0
    stream: int = 0
    result: dict[str, Any] = field(default_factory=dict)
    state: str = TRAINING
    epochs: int | None = None  # the epochs of a member that ended in mid-epoch
    started: float = 0.0

    @property
    def max_epochs(self) -> int:
        return self.cfg.trainer.max_epochs


class PackLogger(Logger):
    """The pack's logger: hands metric `<i>/<name>` to member i's own logger as `<name>`, at the
    step Lightning gives (that of the run alone)."""

    def __init__(self, members: list[Member]):
        super().__init__()
        self.members = members

    @property
    def name(self) -> str:
        return "pack"

    @property
    def version(self) -> int:
        return 0

    def log_hyperparams(self, params: Any, *args: Any, **kwargs: Any) -> None:
        """Each member's are written by its own logger (run.open_record)."""

    def log_metrics(self, metrics: Mapping[str, float], step: int | None = None) -> None:
        for i, values in own_metrics(metrics).items():
            if self.members[i].logger:
                self.members[i].logger.log_metrics(values, step)

    def save(self) -> None:
        for member in self.members:
            if member.logger and member.state != ENDED:
                member.logger.save()


def own_metrics(metrics: Mapping[str, Any]) -> dict[int, dict[str, Any]]:
    """`<i>/<name>` metrics by member i, as `<name>`."""
    by_member: dict[int, dict[str, Any]] = defaultdict(dict)
    for key, value in metrics.items():
        index, _, name = key.partition("/")
        if index.isdigit():
            by_member[int(index)][name] = value
    return by_member


class MemberHooks(L.Callback):
    """Drives each member's own callbacks from the pack's loop, with the member's Trainer and
    module, and ends each member when it stops (see the module docstring)."""

    def __init__(self, members: list[Member], module: PackModule, data: PackData):
        self.members, self.module, self.data = members, module, data
        self.epoch_started = time.perf_counter()

    def training(self) -> list[Member]:
        return [self.members[i] for i in self.module.active]

    def dispatch(self, trainer: L.Trainer, hook: str, members: list[Member], *args: Any) -> None:
        """Call `hook` of each member's callbacks, its metrics those the pack logged for it."""
        metrics = own_metrics(trainer.callback_metrics)
        for member in members:
            own = metrics.get(member.index, {})
            if member.index in self.module.losses:
                own["train/loss"] = self.module.losses[member.index].detach()
            member.trainer._logger_connector._callback_metrics = own
            call._call_callback_hooks(member.trainer, hook, *args)

    def setup(self, trainer: L.Trainer, pl_module: L.LightningModule, stage: str) -> None:
        self.dispatch(trainer, "setup", self.training(), stage)

    def on_fit_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self.dispatch(trainer, "on_fit_start", self.training())

    def on_train_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        now = time.perf_counter()
        for member in self.members:
            member.started = now
        self.dispatch(trainer, "on_train_start", self.training())
        self.settle(trainer, at_epoch_end=False)

    def on_train_epoch_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self.end_stopped(trainer)
        self.epoch_started = time.perf_counter()
        self.dispatch(trainer, "on_train_epoch_start", self.training())

    def on_train_batch_end(
        self, trainer: L.Trainer, pl_module: L.LightningModule, outputs: Any, batch: Any, i: int
    ) -> None:
        for member in self.training():
            loss = self.module.losses[member.index]
            own = batch[member.stream]
            call._call_callback_hooks(member.trainer, "on_train_batch_end", loss, own, i)
            if member.trainer.should_stop:
                self.halt(trainer, member, loss)
        # the training loss at the steps at which Lightning logs a run's (should_update_logs)
        if trainer._logger_connector.should_update_logs:
            step = trainer.fit_loop.epoch_loop._batches_that_stepped
            for member in self.training():
                if member.logger:
                    loss = self.module.losses[member.index].item()
                    member.logger.log_metrics({"train/loss": loss}, step)

    def on_validation_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self.dispatch(trainer, "on_validation_start", self.training())

    def on_validation_epoch_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self.dispatch(trainer, "on_validation_epoch_start", self.training())

    def on_validation_epoch_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self.dispatch(trainer, "on_validation_epoch_end", self.training())

    def on_validation_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self.dispatch(trainer, "on_validation_end", self.training())

    def on_train_epoch_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        members = self.training()
        self.dispatch(trainer, "on_train_epoch_end", members)
        self.show(members, trainer.current_epoch + 1)
        self.settle(trainer, at_epoch_end=True)

    def on_train_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        for member in self.training():
            member.state = ENDING  # the pack's limit is each member's own, or every member stopped
        self.end_stopped(trainer)

    def on_exception(
        self, trainer: L.Trainer, pl_module: L.LightningModule, exception: BaseException
    ) -> None:
        self.dispatch(trainer, "on_exception", self.training(), exception)

    def settle(self, trainer: L.Trainer, at_epoch_end: bool) -> None:
        """Members that asked to stop, or reached their own epoch limit at an epoch's end, train
        no more; they end once the epoch has been counted (end_stopped)."""
        epochs = trainer.current_epoch + (1 if at_epoch_end else 0)
        for member in self.training():
            if member.trainer.should_stop or (at_epoch_end and epochs >= member.max_epochs):
                member.state = ENDING
                self.module.active.remove(member.index)
        self.module.activity_changed()
        if not self.module.active:
            trainer.should_stop = True

    def halt(self, trainer: L.Trainer, member: Member, loss: Tensor) -> None:
        """A member that stopped in mid-epoch (diverged): as alone, its training loss of this
        update is logged, it is validated at once, its epoch-end callbacks run, and it ends."""
        self.module.active.remove(member.index)
        self.module.activity_changed()
        step = trainer.fit_loop.epoch_loop._batches_that_stepped
        metrics = {"train/loss": loss.detach(), **self.validate(member)}
        if member.logger:
            member.logger.log_metrics({k: float(v) for k, v in metrics.items()}, step)
        member.trainer._logger_connector._callback_metrics = metrics
        for hook in (
            "on_validation_start",
            "on_validation_epoch_start",
            "on_validation_epoch_end",
            "on_validation_end",
            "on_train_epoch_end",
        ):
            call._call_callback_hooks(member.trainer, hook)
        self.show([member], trainer.current_epoch + 1)
        member.epochs = trainer.current_epoch + 1  # the run alone counts the epoch it ended in
        member.state = ENDING
        self.end(trainer, member)
        if not self.module.active:
            trainer.should_stop = True

    @torch.no_grad()
    def validate(self, member: Member) -> dict[str, Tensor]:
        """One member's validation, as Lightning's loop computes it: the accuracy metric over the
        set, and the loss's mean weighted by batch size (its _ResultMetric)."""
        module = member.module
        module.eval()
        total, count = torch.tensor(0.0), torch.tensor(0)
        for batch in self.data.streams[member.stream].validation:
            batch = tuple(t.to(module.device) for t in batch)
            loss = module.val_metrics(batch)["val/loss"]
            n = len(batch[1])
            total, count = total + loss.mean().cpu() * n, count + n
        acc = module.val_acc.compute()
        module.val_acc.reset()
        module.train()
        return {"val/loss": total / count, "val/acc": acc}

    def show(self, members: list[Member], epoch: int) -> None:
        """A member's line per epoch, as a run alone shows without a terminal (terminal.py)."""
        took = time.perf_counter() - self.epoch_started
        for member in members:
            if not member.cfg.trainer.get("enable_progress_bar", True):
                continue
            metrics = member.trainer.callback_metrics
            values = ", ".join(
                f"{label} {float(metrics[k]):.4g}"
                for k, label in (("train/loss", "loss"), ("val/acc", "val/acc"))
                if k in metrics
            )
            member.say.info(f"epoch {epoch}/{member.max_epochs}: {values} ({took:.1f} s)")

    def end_stopped(self, trainer: L.Trainer) -> None:
        for member in self.members:
            if member.state == ENDING:
                self.end(trainer, member)

    def end(self, trainer: L.Trainer, member: Member) -> None:
        """A member's run ends: its end-of-fit callbacks, its logger closed, its result."""
        for hook in ("on_train_end", "on_fit_end"):
            call._call_callback_hooks(member.trainer, hook)
        call._call_callback_hooks(member.trainer, "teardown", stage="fit")
        if member.logger:
            member.logger.finalize("success")
        epochs = trainer.current_epoch if member.epochs is None else member.epochs
        counts = outcome(member.callbacks, epochs, trainer.global_step, interrupted=False)
        seconds = time.perf_counter() - member.started
        member.result = close_record(
            member.cfg, member.result, member.logger, counts, seconds, member.say
        )
        member.state = ENDED


def train_pack(cfgs: list[DictConfig]) -> list[dict[str, Any] | RunError]:
    """Train the runs of `cfgs` (resolved configs that differ only in choices.PACK_MEMBER_KEYS,
    each with its own run_dir) as a pack; return each run's result, or the RunError that stopped it.

    As `run.train` for each: a finished run is returned as it is, an unfinished one resumes from
    its last checkpoint, and one process at a time holds a run directory."""
    quiet_library_logs()
    outcomes: list[dict[str, Any] | RunError | None] = [None] * len(cfgs)
    with ExitStack() as held:
        members: list[tuple[int, Member]] = []
        for i, cfg in enumerate(cfgs):
            run_dir = Path(cfg.run_dir)
            try:
                validate(cfg)
                held.enter_context(claim(run_dir))
                outcomes[i] = already_finished(cfg, run_dir)
                if outcomes[i] is None:
                    members.append((i, build_member(cfg, run_dir, len(cfgs))))
            except (RunError, ConfigError) as e:
                outcomes[i] = e if isinstance(e, RunError) else RunError(str(e))
            except Exception as e:
                line = explain(e, run_dir, saved_checkpoint(run_dir))
                if line is None:
                    raise
                outcomes[i] = RunError(line)
        by_step: dict[int | None, list[tuple[int, Member]]] = defaultdict(list)
        for i, member in members:
            by_step[member.resumed_at].append((i, member))
        for group in by_step.values():
            results = fit_pack([member for _, member in group])
            for (i, _), result in zip(group, results, strict=True):
                outcomes[i] = result
    return outcomes  # type: ignore[return-value]


@contextmanager
def quiet(name: str) -> Iterator[None]:
    """Only warnings from logger `name` inside."""
    logger = logging.getLogger(name)
    level = logger.level
    logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        logger.setLevel(level)


def build_member(cfg: DictConfig, run_dir: Path, pack_size: int) -> Member:
    """A member's parts, built as `run.fit` builds a run's (its seed first)."""
    L.seed_everything(cfg.seed, workers=True, verbose=False)
    module = build_model(cfg)
    check_memory(cfg, module, take_budget(cfg) * pack_size)
    callbacks = run_callbacks(cfg)
    ckpt = resumable(last_checkpoint(callbacks))
    resumed_at = None if ckpt is None else checkpoint_step(ckpt)
    logger = run_logger(cfg, run_dir, resumed_at)
    own = [c for c in callbacks if not isinstance(c, DeferSignal)]  # the pack's: one process
    with quiet(RANK_ZERO):  # the pack's Trainer says once what hardware it found
        trainer = run_trainer(
            cfg, own, logger, enable_progress_bar=False, enable_model_summary=False
        )
    optimizer = module.configure_optimizers()
    trainer.state.fn = TrainerFn.FITTING
    trainer.strategy.connect(module)
    trainer.strategy.optimizers = [optimizer]
    module.trainer = trainer
    say = MemberLog(log, {"member": str(run_dir)})
    return Member(
        cfg, run_dir, module, optimizer, callbacks, logger, trainer, ckpt, resumed_at, say
    )


def fit_pack(members: list[Member]) -> list[dict[str, Any] | RunError]:
    """Fit members that stand at the same update (all fresh, or all resumed from there)."""
    first = members[0].cfg
    seeds = sorted({m.cfg.seed for m in members})
    for index, member in enumerate(members):
        member.index, member.stream = index, seeds.index(member.cfg.seed)
    streams = [
        instantiate_named(next(m.cfg for m in members if m.cfg.seed == s).data) for s in seeds
    ]
    data = PackData(streams)
    vectorise = OmegaConf.select(first, "launcher.vectorise", default=AUTO)
    fixed = first.data.name == "fixed"  # every seed's batches of one shape
    module = PackModule([m.module for m in members], [m.stream for m in members], vectorise, fixed)
    for member in members:  # a stacked member's tensors are views: saved as their own
        member.trainer.callbacks.append(OwnTensors())
    module.optimizer = PackOptimizer([m.optimizer for m in members], module)
    hooks = MemberHooks(members, module, data)
    pack_level = [c for c in run_callbacks(first) if isinstance(c, DeferSignal)]
    trainer = run_trainer(
        first,
        [hooks, *pack_level],
        PackLogger(members) if first.logger else False,
        max_epochs=max(m.max_epochs for m in members),
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    for member in members:
        member.trainer.fit_loop = trainer.fit_loop  # the member's counters are the pack's
        member.result = open_record(
            member.cfg, member.module, member.run_dir, member.logger, member.ckpt, member.resumed_at
        )
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="pack-") as where:
        ckpt = None if members[0].ckpt is None else restore(members, module, Path(where))
        try:
            trainer.fit(module, datamodule=data, ckpt_path=ckpt)
        except BaseException as e:
            return record_pack_failure(members, trainer, e, time.perf_counter() - started)
    for member in members:  # none is left unended: MemberHooks.on_train_end ends the rest
        assert member.state == ENDED, member.run_dir
    return [m.result for m in members]


def restore(members: list[Member], module: PackModule, where: Path) -> Path:
    """Load each member's own last checkpoint into its callbacks, and write the pack's (the
    members' weights and optimizer states, the loop's counters, the same in each) for
    `Trainer.fit(ckpt_path=...)`; return its path."""
    loaded = [torch.load(m.ckpt, map_location="cpu", weights_only=False) for m in members]
    for member, ckpt in zip(members, loaded, strict=True):
        call._call_callbacks_on_load_checkpoint(member.trainer, ckpt)
        call._call_callbacks_load_state_dict(member.trainer, ckpt)
    pack = dict(loaded[0])
    pack["state_dict"] = {
        f"members.{i}.{k}": v
        for i, ckpt in enumerate(loaded)
        for k, v in ckpt["state_dict"].items()
    }
    pack["optimizer_states"] = [{"members": [c["optimizer_states"][0] for c in loaded]}]
    pack["callbacks"] = {}
    path = where / "pack.ckpt"
    torch.save(pack, path)
    return path


def record_pack_failure(
    members: list[Member], trainer: L.Trainer, error: BaseException, seconds: float
) -> list[dict[str, Any] | RunError]:
    """Record every member that `error` stopped as `run.fit` records a run, then raise it again
    (a SIGTERM's exit as `interrupted`), or return its one line for each (longterm.training.faults)."""
    exit_: SystemExit | None = None
    for member in members:
        if member.state == ENDED:
            continue
        counts = outcome(
            member.callbacks, trainer.current_epoch, trainer.global_step, trainer.interrupted
        )
        try:
            record_failure(member.result, member.logger, counts, error, seconds)
        except SystemExit as e:
            exit_ = exit_ or e
    if exit_ is not None:
        raise exit_ from error
    line = explain(error, members[0].run_dir, saved_checkpoint(members[0].run_dir))
    if line is None or not isinstance(error, Exception):
        raise error
    return [m.result if m.state == ENDED else RunError(line) for m in members]


def pack_update_ops(members: list[MemoryTaskModule], batch: tuple, vectorise: bool) -> int:
    """aten ops of one update of a pack of `members` (one seed) on `batch` (x, y, mask), both
    moved to the meta device first (longterm.models.ops); `vectorise`: the stacked path."""
    module = PackModule(members, [0] * len(members), vectorise, same_shapes=True).to("meta")
    module.optimizer = PackOptimizer([m.configure_optimizers() for m in members], module)
    module.on_train_start()
    batches = (tuple(t.to("meta") for t in batch),)

    def update() -> None:
        module.optimizer.zero_grad(set_to_none=True)
        module.optimizer.step(lambda: module.training_step(batches, 0).backward())

    return counted_ops(update)
